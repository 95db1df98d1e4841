package envtest

import (
	"bytes"
	"context"
	"errors"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	utilyaml "k8s.io/apimachinery/pkg/util/yaml"
)

// The two ways to install deltakeeper — the Helm chart and `kubectl apply -k config/default` — must produce
// objects the API server accepts, with the manager locked down. envtest runs no Deployments, so this checks
// admission (server-side dry run); test/e2e runs the kustomize install for real on a cluster.

func TestHelmChart_LintsAndRendersObjectsTheAPIServerAccepts(t *testing.T) {
	helm := helmBinary(t)
	chart := filepath.Join(repoRoot, "charts", "deltakeeper")
	if out, err := exec.Command(helm, "lint", "--strict", chart).CombinedOutput(); err != nil {
		t.Fatalf("helm lint --strict: %v\n%s", err, out)
	}
	cases := []struct {
		name      string
		set       []string
		wantKinds []string
		image     string
	}{
		{
			name: "defaults",
			wantKinds: []string{"ClusterRole", "ClusterRole", "ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding",
				"CustomResourceDefinition", "CustomResourceDefinition", "CustomResourceDefinition", "Deployment", "Service", "ServiceAccount"},
			image: "ghcr.io/deltakeeper/deltakeeper:0.1.0",
		},
		{
			name:      "CRDs, RBAC, ServiceAccount and metrics managed elsewhere",
			set:       []string{"crds.enabled=false", "rbac.create=false", "serviceAccount.create=false", "serviceAccount.name=ops", "metrics.enabled=false"},
			wantKinds: []string{"Deployment"},
			image:     "ghcr.io/deltakeeper/deltakeeper:0.1.0",
		},
		{
			name: "own registry and worker image",
			set:  []string{"image.repository=registry.example.com/dk", "image.tag=v9", "workerImage=registry.example.com/dk-worker:v9"},
			wantKinds: []string{"ClusterRole", "ClusterRole", "ClusterRole", "ClusterRole", "ClusterRole", "ClusterRoleBinding", "ClusterRoleBinding",
				"CustomResourceDefinition", "CustomResourceDefinition", "CustomResourceDefinition", "Deployment", "Service", "ServiceAccount"},
			image: "registry.example.com/dk:v9",
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			ns := newNamespace(t)
			args := []string{"template", "dk", chart, "--namespace", ns}
			for _, s := range tc.set {
				args = append(args, "--set", s)
			}
			rendered, err := exec.Command(helm, args...).Output()
			if err != nil {
				t.Fatalf("helm %s: %v", strings.Join(args, " "), stderrOf(err))
			}
			objs := decodeAll(t, rendered)
			var kinds []string
			for _, o := range objs {
				kinds = append(kinds, o.GetKind())
			}
			sort.Strings(kinds)
			if !slices.Equal(kinds, tc.wantKinds) {
				t.Errorf("rendered kinds %v, want %v", kinds, tc.wantKinds)
			}
			checkManagerDeployment(t, objs, tc.image)
			serverDryRun(t, ns, rendered)
		})
	}
}

func TestKustomizeInstall_IsAcceptedByTheAPIServer(t *testing.T) {
	kubectl := filepath.Join(testEnv.BinaryAssetsDirectory, "kubectl")
	rendered, err := exec.Command(kubectl, "kustomize", filepath.Join(repoRoot, "config", "default")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/default: %v", stderrOf(err))
	}
	// The install creates its namespace; a dry run cannot create objects inside a namespace it only pretends
	// to create, so the namespace is made for real.
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "deltakeeper-system"}}
	if err := k8sClient.Create(context.Background(), ns); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	objs := decodeAll(t, rendered)
	checkManagerDeployment(t, objs, "ghcr.io/deltakeeper/deltakeeper:dev")
	serverDryRun(t, "deltakeeper-system", rendered)
}

// checkManagerDeployment asserts the manager runs locked down, with the image given, and knows its own Pod.
func checkManagerDeployment(t *testing.T, objs []*unstructured.Unstructured, image string) {
	t.Helper()
	for _, o := range objs {
		if o.GetKind() != "Deployment" {
			continue
		}
		pod, _, _ := unstructured.NestedMap(o.Object, "spec", "template", "spec")
		containers, _, _ := unstructured.NestedSlice(pod, "containers")
		if len(containers) != 1 {
			t.Fatalf("manager Deployment has %d containers", len(containers))
		}
		c := containers[0].(map[string]any)
		if c["image"] != image {
			t.Errorf("manager image %v, want %s", c["image"], image)
		}
		for path, want := range map[string]any{
			"securityContext.runAsNonRoot":                        true,
			"securityContext.seccompProfile.type":                 "RuntimeDefault",
			"containers.securityContext.readOnlyRootFilesystem":   true,
			"containers.securityContext.allowPrivilegeEscalation": false,
		} {
			obj := pod
			fields := strings.Split(path, ".")
			if fields[0] == "containers" {
				obj, fields = c, fields[1:]
			}
			got, _, _ := unstructured.NestedFieldNoCopy(obj, fields...)
			if got != want {
				t.Errorf("manager pod %s = %v, want %v", path, got, want)
			}
		}
		drop, _, _ := unstructured.NestedStringSlice(c, "securityContext", "capabilities", "drop")
		if !slices.Equal(drop, []string{"ALL"}) {
			t.Errorf("manager drops capabilities %v, want [ALL]", drop)
		}
		env, _ := c["env"].([]any)
		var names []string
		for _, e := range env {
			names = append(names, e.(map[string]any)["name"].(string))
		}
		if !slices.Contains(names, "POD_NAME") || !slices.Contains(names, "POD_NAMESPACE") {
			t.Errorf("manager env %v lacks POD_NAME/POD_NAMESPACE (worker image discovery)", names)
		}
		return
	}
	t.Fatal("no manager Deployment rendered")
}

// serverDryRun sends the manifests through the API server's admission (schemas, CEL, RBAC validation)
// without persisting them.
func serverDryRun(t *testing.T, ns string, manifests []byte) {
	t.Helper()
	kubectl := filepath.Join(testEnv.BinaryAssetsDirectory, "kubectl")
	cmd := exec.Command(kubectl, "--kubeconfig", kubeconfigPath, "-n", ns, "apply", "--server-side",
		"--force-conflicts", "--field-manager", "install-test", "--dry-run=server", "-f", "-")
	cmd.Stdin = bytes.NewReader(manifests)
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply --dry-run=server: %v\n%s", err, out)
	}
}

func decodeAll(t *testing.T, manifests []byte) []*unstructured.Unstructured {
	t.Helper()
	dec := utilyaml.NewYAMLOrJSONDecoder(bytes.NewReader(manifests), 4096)
	var objs []*unstructured.Unstructured
	for {
		var m map[string]any
		if err := dec.Decode(&m); err != nil {
			if errors.Is(err, io.EOF) {
				return objs
			}
			t.Fatalf("decode rendered manifests: %v", err)
		}
		if len(m) > 0 {
			objs = append(objs, &unstructured.Unstructured{Object: m})
		}
	}
}

// helmBinary finds the Helm CLI built by hack/build-helm.sh; a missing one fails the test.
func helmBinary(t *testing.T) string {
	t.Helper()
	if p := os.Getenv("DELTAKEEPER_HELM"); p != "" {
		return p
	}
	matches, _ := filepath.Glob(filepath.Join(repoRoot, "bin", "helm", "*", "helm"))
	if len(matches) == 0 {
		t.Fatal("no Helm CLI under bin/helm: run hack/build-helm.sh (make test does)")
	}
	sort.Strings(matches)
	return matches[len(matches)-1]
}

func stderrOf(err error) string {
	var exit *exec.ExitError
	if errors.As(err, &exit) {
		return err.Error() + ": " + string(exit.Stderr)
	}
	return err.Error()
}
