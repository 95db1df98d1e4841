// Package envtest runs the project's API and controllers against a real kube-apiserver and etcd, built from
// the Go module proxy by hack/build-k8s.sh, with the generated CRDs installed.
package envtest

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"
	crenvtest "sigs.k8s.io/controller-runtime/pkg/envtest"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/internal/testutil/kubeenv"
)

// The suite shares one API server; each test works in its own namespace because envtest never finishes
// deleting namespaces (there is no namespace controller).
var (
	testEnv   *crenvtest.Environment
	cfg       *rest.Config
	k8sClient client.Client
	scheme    = runtime.NewScheme()
	repoRoot  string
	// kubeconfigPath is a kubeconfig of an admin user, for kubectl.
	kubeconfigPath string
)

func TestMain(m *testing.M) {
	os.Exit(run(m))
}

func run(m *testing.M) int {
	if err := setup(); err != nil {
		fmt.Fprintln(os.Stderr, "envtest setup failed:", err)
		return 1
	}
	code := m.Run()
	if err := testEnv.Stop(); err != nil {
		fmt.Fprintln(os.Stderr, "envtest stop failed:", err)
	}
	return code
}

func setup() error {
	var err error
	if repoRoot, err = testutil.RepoRoot(); err != nil {
		return err
	}
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return err
	}
	if err := deltav1.AddToScheme(scheme); err != nil {
		return err
	}
	if err := apiextensionsv1.AddToScheme(scheme); err != nil {
		return err
	}
	if testEnv, err = kubeenv.NewEnvironment(); err != nil {
		return err
	}
	if cfg, err = testEnv.Start(); err != nil {
		return fmt.Errorf("start kube-apiserver and etcd from %s: %w", testEnv.BinaryAssetsDirectory, err)
	}
	if k8sClient, err = client.New(cfg, client.Options{Scheme: scheme}); err != nil {
		return err
	}
	user, err := testEnv.AddUser(crenvtest.User{Name: "envtest-admin", Groups: []string{"system:masters"}}, nil)
	if err != nil {
		return fmt.Errorf("add admin user: %w", err)
	}
	kubeconfig, err := user.KubeConfig()
	if err != nil {
		return err
	}
	dir, err := os.MkdirTemp("", "deltakeeper-envtest-")
	if err != nil {
		return err
	}
	kubeconfigPath = filepath.Join(dir, "kubeconfig")
	return os.WriteFile(kubeconfigPath, kubeconfig, 0o600)
}

// newNamespace creates a fresh namespace for one test.
func newNamespace(t *testing.T) string {
	t.Helper()
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{GenerateName: "t-"}}
	if err := k8sClient.Create(context.Background(), ns); err != nil {
		t.Fatalf("create namespace: %v", err)
	}
	return ns.Name
}
