package envtest

import (
	"bytes"
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// A namespace-scoped install (Helm watchNamespaces) must give the manager nothing outside its namespaces: the
// chart's rendered RBAC is applied for real and the manager's ServiceAccount is impersonated, so the API
// server's RBAC authorizer decides, as it would on a cluster.

func TestNamespaceScopedInstall_ManagerWorksInItsNamespacesAndNowhereElse(t *testing.T) {
	release, watchedA, watchedB, other := newNamespace(t), newNamespace(t), newNamespace(t), newNamespace(t)
	objs := renderChart(t, "scoped-"+release, release, "watchNamespaces={"+watchedA+","+watchedB+"}", "crds.enabled=false")
	var clusterRoles []string
	for _, o := range objs {
		if o.GetKind() == "ClusterRole" {
			clusterRoles = append(clusterRoles, strings.TrimPrefix(o.GetName(), "scoped-"+release+"-deltakeeper-"))
		}
	}
	slices.Sort(clusterRoles)
	if want := []string{"editor", "metrics-auth", "metrics-reader", "viewer"}; !slices.Equal(clusterRoles, want) {
		t.Fatalf("a namespace-scoped install renders ClusterRoles %v, want only %v", clusterRoles, want)
	}
	applyRBAC(t, objs)
	sa := client.ObjectKey{Namespace: release, Name: "scoped-" + release + "-deltakeeper-manager"}
	asManager := impersonate(t, sa)
	ctx := context.Background()

	// What the manager needs: RBAC changes reach the authorizer through its informers, so wait for them.
	eventually(t, "the Roles to reach the authorizer", func() (bool, string) {
		err := asManager.Create(ctx, probeJob(watchedA), client.DryRunAll)
		return err == nil, errString(err)
	})
	allowed := map[string]func() error{
		"create a Job in " + watchedB: func() error { return asManager.Create(ctx, probeJob(watchedB), client.DryRunAll) },
		"create a table Lease in " + watchedB: func() error {
			return asManager.Create(ctx, probeLease(watchedB), client.DryRunAll)
		},
		"list DeltaTables in " + watchedA:       func() error { return asManager.List(ctx, &deltav1.DeltaTableList{}, client.InNamespace(watchedA)) },
		"create the leader Lease in " + release: func() error { return asManager.Create(ctx, probeLease(release), client.DryRunAll) },
		"renew the leader Lease in " + release: func() error {
			l := probeLease(release)
			l.Name, l.ResourceVersion = "deltakeeper.deltakeeper.io", "1"
			return ignoreNotFound(asManager.Update(ctx, l, client.DryRunAll))
		},
		// The per-table lock Leases live in the manager's namespace, under hashed names.
		"take over a table lock Lease in " + release: func() error {
			l := probeLease(release)
			l.ResourceVersion = "1"
			return ignoreNotFound(asManager.Update(ctx, l, client.DryRunAll))
		},
		"read its own Pod's namespace " + release: func() error {
			return ignoreNotFound(asManager.Get(ctx, client.ObjectKey{Namespace: release, Name: "mgr"}, &corev1.Pod{}))
		},
	}
	forbidden := map[string]func() error{
		"create a Job in kube-system": func() error { return asManager.Create(ctx, probeJob("kube-system"), client.DryRunAll) },
		"create a Job in " + other:    func() error { return asManager.Create(ctx, probeJob(other), client.DryRunAll) },
		"create a Job in " + release:  func() error { return asManager.Create(ctx, probeJob(release), client.DryRunAll) },
		"create a Lease in kube-node-lease": func() error {
			return asManager.Create(ctx, probeLease("kube-node-lease"), client.DryRunAll)
		},
		"update a Lease in kube-node-lease": func() error {
			l := probeLease("kube-node-lease")
			l.ResourceVersion = "1"
			return asManager.Update(ctx, l, client.DryRunAll)
		},
		"list Jobs in every namespace":        func() error { return asManager.List(ctx, &batchv1.JobList{}) },
		"list DeltaTables in every namespace": func() error { return asManager.List(ctx, &deltav1.DeltaTableList{}) },
		"read pods in " + other:               func() error { return asManager.List(ctx, &corev1.PodList{}, client.InNamespace(other)) },
		"list Secrets in " + watchedA:         func() error { return asManager.List(ctx, &corev1.SecretList{}, client.InNamespace(watchedA)) },
	}
	for what, do := range allowed {
		if err := do(); err != nil {
			t.Errorf("the manager may not %s: %v", what, err)
		}
	}
	for what, do := range forbidden {
		if err := do(); !apierrors.IsForbidden(err) {
			t.Errorf("the manager may %s (want Forbidden, got %v)", what, err)
		}
	}

	// And the manager, running as its ServiceAccount with --watch-namespaces, does its work under these Roles.
	// As `manager --watch-namespaces` runs: the given identity, watching only those namespaces.
	startManagerWith(t, []string{watchedA, watchedB}, release, clocktesting.NewFakeClock(time.Now()), impersonatedConfig(sa), nil)
	outside := newTable(t, other, "outside", nil)
	table := newTable(t, watchedA, "orders", nil)
	job := waitLiveJob(t, watchedA, "orders", "inspect")
	waitTable(t, table, "reports the running inspection", func(tb *deltav1.DeltaTable) (bool, string) {
		ready := condition(tb.Status.Conditions, deltav1.ConditionReady)
		return strings.Contains(ready, job.Name), ready
	})
	if h := leaseHolderIn(t, release, watchedA, "orders"); h != job.Name {
		t.Errorf("table lock held by %q, want the inspect Job %s", h, job.Name)
	}
	if jobs := tableJobs(t, other, outside.Name, ""); len(jobs) != 0 {
		t.Errorf("the manager created Jobs in unwatched namespace %s: %v", other, liveJobs(jobs))
	}
}

func TestClusterWideInstall_IsTheDefaultAndShipsTheUserRoles(t *testing.T) {
	release := newNamespace(t)
	objs := renderChart(t, "wide-"+release, release, "crds.enabled=false")
	byName := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		byName[o.GetKind()+"/"+strings.TrimPrefix(o.GetName(), "wide-"+release+"-deltakeeper-")] = o
		if o.GetKind() == "Role" || o.GetKind() == "RoleBinding" {
			t.Errorf("the default install renders %s %s/%s", o.GetKind(), o.GetNamespace(), o.GetName())
		}
	}
	for _, name := range []string{"ClusterRole/manager", "ClusterRoleBinding/manager", "ClusterRole/editor", "ClusterRole/viewer"} {
		if byName[name] == nil {
			t.Errorf("the default install renders no %s", name)
		}
	}
	// The chart's user roles are config/rbac/user_roles.yaml's, aggregated the same way.
	kustomize := decodeAll(t, readFile(t, filepath.Join(repoRoot, "config", "rbac", "user_roles.yaml")))
	for _, want := range kustomize {
		role := strings.TrimPrefix(want.GetName(), "deltakeeper-")
		got := byName["ClusterRole/"+role]
		if got == nil {
			continue
		}
		wantRules, _, _ := unstructured.NestedSlice(want.Object, "rules")
		gotRules, _, _ := unstructured.NestedSlice(got.Object, "rules")
		if a, b := mustYAML(t, wantRules), mustYAML(t, gotRules); a != b {
			t.Errorf("chart role %s has rules\n%s\nkustomize's has\n%s", role, b, a)
		}
		for k, v := range want.GetLabels() {
			if got.GetLabels()[k] != v {
				t.Errorf("chart role %s lacks label %s=%s", role, k, v)
			}
		}
	}
	applyRBAC(t, objs)
	asManager := impersonate(t, client.ObjectKey{Namespace: release, Name: "wide-" + release + "-deltakeeper-manager"})
	other := newNamespace(t)
	eventually(t, "the ClusterRole to reach the authorizer", func() (bool, string) {
		err := asManager.Create(context.Background(), probeJob(other), client.DryRunAll)
		return err == nil, errString(err)
	})
}

// renderChart runs helm template with the given --set values.
func renderChart(t *testing.T, release, ns string, set ...string) []*unstructured.Unstructured {
	t.Helper()
	args := []string{"template", release, filepath.Join(repoRoot, "charts", "deltakeeper"), "--namespace", ns}
	for _, s := range set {
		args = append(args, "--set", s)
	}
	out, err := exec.Command(helmBinary(t), args...).Output()
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), stderrOf(err))
	}
	return decodeAll(t, out)
}

// applyRBAC creates the ServiceAccount, Roles and bindings among objs for real (not the Deployment: envtest
// runs no pods) and deletes the cluster-scoped ones when the test ends.
func applyRBAC(t *testing.T, objs []*unstructured.Unstructured) {
	t.Helper()
	var manifests bytes.Buffer
	for _, o := range objs {
		switch o.GetKind() {
		case "ServiceAccount", "Role", "RoleBinding", "ClusterRole", "ClusterRoleBinding":
			manifests.WriteString("---\n" + mustYAML(t, o.Object))
		}
		if kind := o.GetKind(); kind == "ClusterRole" || kind == "ClusterRoleBinding" {
			obj := o.DeepCopy()
			t.Cleanup(func() { _ = k8sClient.Delete(context.Background(), obj) })
		}
	}
	kubectl := filepath.Join(testEnv.BinaryAssetsDirectory, "kubectl")
	cmd := exec.Command(kubectl, "--kubeconfig", kubeconfigPath, "apply", "--server-side", "--field-manager", "tenancy-test", "-f", "-")
	cmd.Stdin = &manifests
	if out, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("kubectl apply the chart's RBAC: %v\n%s", err, out)
	}
}

func impersonatedConfig(sa client.ObjectKey) *rest.Config {
	c := rest.CopyConfig(cfg)
	c.Impersonate = rest.ImpersonationConfig{UserName: "system:serviceaccount:" + sa.Namespace + ":" + sa.Name}
	return c
}

// impersonate returns a client that acts as the ServiceAccount.
func impersonate(t *testing.T, sa client.ObjectKey) client.Client {
	t.Helper()
	c, err := client.New(impersonatedConfig(sa), client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	return c
}

func probeJob(ns string) *batchv1.Job {
	return &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "rbac-probe", Namespace: ns},
		Spec: batchv1.JobSpec{Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{
			RestartPolicy: corev1.RestartPolicyNever,
			Containers:    []corev1.Container{{Name: "c", Image: testWorkerImage}},
		}}},
	}
}

func probeLease(ns string) *coordinationv1.Lease {
	return &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: "rbac-probe", Namespace: ns}}
}

func ignoreNotFound(err error) error {
	if apierrors.IsNotFound(err) {
		return nil
	}
	return err
}

func errString(err error) string {
	if err == nil {
		return ""
	}
	return err.Error()
}

func mustYAML(t *testing.T, v any) string {
	t.Helper()
	out, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(out)
}

func readFile(t *testing.T, path string) []byte {
	t.Helper()
	out, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return out
}
