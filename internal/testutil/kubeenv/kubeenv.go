// Package kubeenv starts the project's envtest environment: a real kube-apiserver and etcd built by
// hack/build-k8s.sh, with the generated CRDs installed. It is separate from testutil so that the data-plane
// and benchmark tests do not link Kubernetes.
package kubeenv

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/envtest"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

// KubeAssetsDir returns the folder holding kube-apiserver, etcd and kubectl built by hack/build-k8s.sh:
// $KUBEBUILDER_ASSETS when set, else the newest bin/k8s/<version>/ of the repository. It fails rather than
// letting envtest try a download, which cannot work on our machines.
func KubeAssetsDir(root string) (string, error) {
	if dir := os.Getenv("KUBEBUILDER_ASSETS"); dir != "" {
		return dir, nil
	}
	matches, _ := filepath.Glob(filepath.Join(root, "bin", "k8s", "*", "kube-apiserver"))
	sort.Strings(matches)
	if len(matches) == 0 {
		return "", fmt.Errorf("no kube-apiserver under %s/bin/k8s: run hack/build-k8s.sh (or make test) first", root)
	}
	return filepath.Dir(matches[len(matches)-1]), nil
}

// NewEnvironment returns an envtest environment with the project's CRDs, using locally built binaries.
func NewEnvironment() (*envtest.Environment, error) {
	root, err := testutil.RepoRoot()
	if err != nil {
		return nil, err
	}
	assets, err := KubeAssetsDir(root)
	if err != nil {
		return nil, err
	}
	return &envtest.Environment{
		BinaryAssetsDirectory: assets,
		CRDDirectoryPaths:     []string{filepath.Join(root, "config", "crd", "bases")},
		ErrorIfCRDPathMissing: true,
	}, nil
}
