package envtest

import (
	"bytes"
	"context"
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
)

// The monitoring objects of the chart and of config/monitoring (metrics Service, ServiceMonitor,
// PrometheusRule, dashboard ConfigMap) must pass the API server's validation with the Prometheus Operator's
// own published CRDs installed, as they would be on a cluster running the Operator.

func TestHelmChart_MonitoringValuesRenderObjectsThePrometheusOperatorCRDsAccept(t *testing.T) {
	installPrometheusOperatorCRDs(t)
	helm := helmBinary(t)
	chart := filepath.Join(repoRoot, "charts", "deltakeeper")
	ns := newNamespace(t)
	args := []string{"template", "dk", chart, "--namespace", ns, "--set",
		"metrics.serviceMonitor.enabled=true,metrics.prometheusRule.enabled=true,metrics.dashboard.enabled=true"}
	rendered, err := exec.Command(helm, args...).Output()
	if err != nil {
		t.Fatalf("helm %s: %v", strings.Join(args, " "), stderrOf(err))
	}
	objs := decodeAll(t, rendered)
	monitoring := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		switch o.GetKind() {
		case "Service", "ServiceMonitor", "PrometheusRule", "ConfigMap":
			monitoring[o.GetKind()] = o
		}
	}
	var kinds []string
	for k := range monitoring {
		kinds = append(kinds, k)
	}
	sort.Strings(kinds)
	if want := []string{"ConfigMap", "PrometheusRule", "Service", "ServiceMonitor"}; !slices.Equal(kinds, want) {
		t.Fatalf("monitoring kinds rendered %v, want %v", kinds, want)
	}
	checkMonitoringObjects(t, monitoring, "dk-deltakeeper-metrics")
	serverDryRun(t, ns, rendered)
}

func TestKustomizeMonitoring_IsAcceptedWithThePrometheusOperatorCRDs(t *testing.T) {
	installPrometheusOperatorCRDs(t)
	kubectl := filepath.Join(testEnv.BinaryAssetsDirectory, "kubectl")
	rendered, err := exec.Command(kubectl, "kustomize", filepath.Join(repoRoot, "config", "monitoring")).Output()
	if err != nil {
		t.Fatalf("kubectl kustomize config/monitoring: %v", stderrOf(err))
	}
	ns := &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: "deltakeeper-system"}}
	if err := k8sClient.Create(context.Background(), ns); err != nil && !strings.Contains(err.Error(), "already exists") {
		t.Fatal(err)
	}
	monitoring := map[string]*unstructured.Unstructured{}
	for _, o := range decodeAll(t, rendered) {
		monitoring[o.GetKind()] = o
	}
	checkMonitoringObjects(t, monitoring, "deltakeeper-manager-metrics")
	serverDryRun(t, "deltakeeper-system", rendered)
}

// TestPrometheusOperatorCRDs_RejectAMalformedServiceMonitor shows the dry runs above check something: the
// installed CRD's schema turns away a ServiceMonitor whose endpoints are not a list.
func TestPrometheusOperatorCRDs_RejectAMalformedServiceMonitor(t *testing.T) {
	installPrometheusOperatorCRDs(t)
	ns := newNamespace(t)
	kubectl := filepath.Join(testEnv.BinaryAssetsDirectory, "kubectl")
	bad := "apiVersion: monitoring.coreos.com/v1\nkind: ServiceMonitor\nmetadata: {name: bad}\n" +
		"spec:\n  selector: {}\n  endpoints: {port: metrics}\n"
	cmd := exec.Command(kubectl, "--kubeconfig", kubeconfigPath, "-n", ns, "apply", "--server-side",
		"--dry-run=server", "-f", "-")
	cmd.Stdin = strings.NewReader(bad)
	out, err := cmd.CombinedOutput()
	if err == nil {
		t.Fatalf("a ServiceMonitor with endpoints as a map was accepted:\n%s", out)
	}
	if !strings.Contains(string(out), "endpoints") {
		t.Errorf("the rejection does not name the endpoints field:\n%s", out)
	}
}

// checkMonitoringObjects asserts what a scraper and Grafana rely on: the Service selects the manager's pods
// on its metrics port, the ServiceMonitor selects that Service and scrapes it over HTTPS with a token, every
// alert has a runbook, and the dashboard ConfigMap carries the sidecar's label and valid JSON.
func checkMonitoringObjects(t *testing.T, objs map[string]*unstructured.Unstructured, serviceName string) {
	t.Helper()
	svc := objs["Service"]
	if svc == nil || svc.GetName() != serviceName {
		t.Fatalf("metrics Service %v, want %s", svc, serviceName)
	}
	if sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector"); sel["app.kubernetes.io/component"] != "manager" {
		t.Errorf("metrics Service selects %v, want the manager's pods", sel)
	}
	ports, _, _ := unstructured.NestedSlice(svc.Object, "spec", "ports")
	if len(ports) != 1 || ports[0].(map[string]any)["targetPort"] != "metrics" {
		t.Errorf("metrics Service ports %v, want one to the container port named metrics", ports)
	}
	sm := objs["ServiceMonitor"]
	match, _, _ := unstructured.NestedStringMap(sm.Object, "spec", "selector", "matchLabels")
	for k, v := range match {
		if svc.GetLabels()[k] != v {
			t.Errorf("ServiceMonitor selector %s=%s does not match the metrics Service's labels %v", k, v, svc.GetLabels())
		}
	}
	if job, _, _ := unstructured.NestedString(sm.Object, "spec", "jobLabel"); svc.GetLabels()[job] != "deltakeeper" {
		t.Errorf("ServiceMonitor jobLabel %q gives job %q, want deltakeeper (the alerts' up{job=\"deltakeeper\"})", job, svc.GetLabels()[job])
	}
	endpoints, _, _ := unstructured.NestedSlice(sm.Object, "spec", "endpoints")
	if len(endpoints) != 1 || endpoints[0].(map[string]any)["scheme"] != "https" || endpoints[0].(map[string]any)["bearerTokenFile"] == nil {
		t.Errorf("ServiceMonitor endpoints %v, want one over https with the pod's token", endpoints)
	}
	groups, _, _ := unstructured.NestedSlice(objs["PrometheusRule"].Object, "spec", "groups")
	alerts := 0
	for _, g := range groups {
		rules, _ := g.(map[string]any)["rules"].([]any)
		for _, r := range rules {
			rule := r.(map[string]any)
			alerts++
			runbook, _, _ := unstructured.NestedString(rule, "annotations", "runbook_url")
			if !strings.Contains(runbook, "docs/operations.md#"+strings.ToLower(rule["alert"].(string))) {
				t.Errorf("alert %v has runbook_url %q, want its section of docs/operations.md", rule["alert"], runbook)
			}
		}
	}
	if alerts < 8 {
		t.Errorf("PrometheusRule has %d alerts, want the 8 of config/monitoring/deltakeeper.rules.yaml", alerts)
	}
	cm := objs["ConfigMap"]
	if cm.GetLabels()["grafana_dashboard"] != "1" {
		t.Errorf("dashboard ConfigMap labels %v, want grafana_dashboard: \"1\"", cm.GetLabels())
	}
	data, _, _ := unstructured.NestedStringMap(cm.Object, "data")
	want, err := os.ReadFile(filepath.Join(repoRoot, "config", "monitoring", "dashboard.json"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(bytes.TrimSpace([]byte(data["deltakeeper.json"])), bytes.TrimSpace(want)) {
		t.Errorf("dashboard ConfigMap's deltakeeper.json differs from config/monitoring/dashboard.json (run make generate)")
	}
}

// installPrometheusOperatorCRDs installs the ServiceMonitor and PrometheusRule CRDs that
// hack/fetch-prometheus-operator-crds.sh cached from the Operator's module; a missing cache fails the test.
func installPrometheusOperatorCRDs(t *testing.T) {
	t.Helper()
	dir := os.Getenv("DELTAKEEPER_PROMETHEUS_OPERATOR_CRDS")
	if dir == "" {
		matches, _ := filepath.Glob(filepath.Join(repoRoot, "bin", "prometheus-operator-crds", "*"))
		if len(matches) == 0 {
			t.Fatal("no Prometheus Operator CRDs under bin/prometheus-operator-crds: run hack/fetch-prometheus-operator-crds.sh (make test does)")
		}
		sort.Strings(matches)
		dir = matches[len(matches)-1]
	}
	kubectl := filepath.Join(testEnv.BinaryAssetsDirectory, "kubectl")
	for _, f := range []string{"monitoring.coreos.com_servicemonitors.yaml", "monitoring.coreos.com_prometheusrules.yaml"} {
		path := filepath.Join(dir, f)
		if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfigPath, "apply", "--server-side",
			"--field-manager", "install-test", "-f", path).CombinedOutput(); err != nil {
			t.Fatalf("installing %s: %v\n%s", path, err, out)
		}
	}
	for _, crd := range []string{"servicemonitors.monitoring.coreos.com", "prometheusrules.monitoring.coreos.com"} {
		if out, err := exec.Command(kubectl, "--kubeconfig", kubeconfigPath, "wait", "--for=condition=Established",
			"--timeout=60s", "crd/"+crd).CombinedOutput(); err != nil {
			t.Fatalf("waiting for CRD %s: %v\n%s", crd, err, out)
		}
	}
}
