package envtest

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/cli-utils/pkg/kstatus/status"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// The GitOps health contract (docs/gitops.md): for each kind in each state the real reconcilers produce,
// kstatus (what Flux and `kubectl wait`-style tools compute) says what a person would. Each state's object is
// also compared with test/gitops/testdata/states/<state>.json, which the Argo CD health checks' unit tests
// (test/gitops) run their Lua against; DELTAKEEPER_UPDATE_STATES=1 rewrites those files from this run.

// gitopsState checks one state: kstatus of the live object, and its recorded copy.
func gitopsState(t *testing.T, obj client.Object, state string, want status.Status) {
	t.Helper()
	gvk, err := k8sClient.GroupVersionKindFor(obj)
	if err != nil {
		t.Fatal(err)
	}
	u := &unstructured.Unstructured{}
	u.SetGroupVersionKind(gvk)
	if err := k8sClient.Get(context.Background(), clientKey(obj), u); err != nil {
		t.Fatal(err)
	}
	res, err := status.Compute(u)
	if err != nil {
		t.Fatalf("%s: kstatus: %v", state, err)
	}
	if res.Status != want {
		t.Errorf("%s: kstatus = %s (%s), want %s; conditions:\n%s", state, res.Status, res.Message, want, conditionsOf(u))
	}
	compareState(t, state, u)
}

// waitKstatus waits until the object's Ready condition starts with ready ("False/Unreachable") and then
// checks the state. kstatus must compute want by then: the Ready condition and Reconciling/Stalled are
// written together.
func waitKstatus(t *testing.T, obj client.Object, state, ready string, want status.Status) {
	t.Helper()
	gvk, err := k8sClient.GroupVersionKindFor(obj)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, state+" with Ready "+ready, func() (bool, string) {
		u := &unstructured.Unstructured{}
		u.SetGroupVersionKind(gvk)
		if err := k8sClient.Get(context.Background(), clientKey(obj), u); err != nil {
			return false, err.Error()
		}
		conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
		for _, c := range conds {
			m := c.(map[string]any)
			if m["type"] == deltav1.ConditionReady && strings.HasPrefix(fmt.Sprintf("%v/%v", m["status"], m["reason"]), ready) {
				return true, ""
			}
		}
		return false, conditionsOf(u)
	})
	gitopsState(t, obj, state, want)
}

// stateView is the recorded part of an object: what health checks read, without times and names.
func stateView(u *unstructured.Unstructured) map[string]any {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var kept []any
	for _, c := range conds {
		m := c.(map[string]any)
		kept = append(kept, map[string]any{
			"type": m["type"], "status": m["status"], "reason": m["reason"], "message": m["message"],
			"observedGeneration": m["observedGeneration"],
		})
	}
	st := map[string]any{}
	if g, ok, _ := unstructured.NestedFieldNoCopy(u.Object, "status", "observedGeneration"); ok {
		st["observedGeneration"] = g
	}
	if kept != nil {
		st["conditions"] = kept
	}
	spec := map[string]any{}
	if s, ok, _ := unstructured.NestedBool(u.Object, "spec", "suspend"); ok {
		spec["suspend"] = s
	}
	return map[string]any{
		"apiVersion": u.GetAPIVersion(), "kind": u.GetKind(),
		"metadata": map[string]any{"name": u.GetName(), "generation": u.GetGeneration()},
		"spec":     spec, "status": st,
	}
}

// compareState compares the object with its recorded state, ignoring messages (they name Jobs and times),
// or rewrites the record.
func compareState(t *testing.T, state string, u *unstructured.Unstructured) {
	t.Helper()
	path := filepath.Join(repoRoot, "test", "gitops", "testdata", "states", state+".json")
	got := stateView(u)
	if os.Getenv("DELTAKEEPER_UPDATE_STATES") != "" {
		data, err := json.MarshalIndent(got, "", "  ")
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, append(data, '\n'), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%s: %v (run with DELTAKEEPER_UPDATE_STATES=1 to record it)", state, err)
	}
	var want map[string]any
	if err := json.Unmarshal(data, &want); err != nil {
		t.Fatal(err)
	}
	// Round-trip got through JSON so numbers compare as the file's do.
	gotJSON, _ := json.Marshal(got)
	var gotRT map[string]any
	_ = json.Unmarshal(gotJSON, &gotRT)
	if a, b := withoutMessages(gotRT), withoutMessages(want); a != b {
		t.Errorf("%s: the object differs from %s (DELTAKEEPER_UPDATE_STATES=1 rewrites it)\n got: %s\nwant: %s", state, path, a, b)
	}
}

func withoutMessages(v map[string]any) string {
	st, _ := v["status"].(map[string]any)
	if conds, ok := st["conditions"].([]any); ok {
		for _, c := range conds {
			delete(c.(map[string]any), "message")
		}
	}
	data, _ := json.Marshal(v)
	return string(data)
}

func conditionsOf(u *unstructured.Unstructured) string {
	conds, _, _ := unstructured.NestedSlice(u.Object, "status", "conditions")
	var b strings.Builder
	for _, c := range conds {
		m := c.(map[string]any)
		fmt.Fprintf(&b, "  %v=%v %v: %v\n", m["type"], m["status"], m["reason"], m["message"])
	}
	return b.String()
}

// kubectlWaitReady runs `kubectl wait --for=condition=Ready` as a person would.
func kubectlWaitReady(t *testing.T, ns, resource string) {
	t.Helper()
	kubectl := filepath.Join(testEnv.BinaryAssetsDirectory, "kubectl")
	out, err := exec.Command(kubectl, "--kubeconfig", kubeconfigPath, "-n", ns, "wait", "--for=condition=Ready", "--timeout=20s", resource).CombinedOutput()
	if err != nil {
		t.Fatalf("kubectl wait --for=condition=Ready %s: %v\n%s", resource, err, out)
	}
}

func TestKstatus_NewObjectsReadAsInProgress(t *testing.T) {
	ns := newNamespace(t) // no manager watches it: the objects stay as the API server stored them
	table := newTable(t, ns, "fresh", nil)
	gitopsState(t, table, "deltatable-new", status.InProgressStatus)
	p := newPolicy(t, ns, "fresh", deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"fresh"}}, Schedule: "0 3 * * *"})
	gitopsState(t, p, "optimizepolicy-new", status.InProgressStatus)
	si := newStream(t, ns, "fresh", "fresh", nil)
	gitopsState(t, si, "streamingest-new", status.InProgressStatus)
}

func TestKstatus_DeltaTableStates(t *testing.T) {
	_, ns, clk := controllerTest(t)
	table := newTable(t, ns, "sales", nil)
	job := waitLiveJob(t, ns, "sales", "inspect")
	waitKstatus(t, table, "deltatable-inspecting", "False/Inspecting", status.InProgressStatus)
	finishJob(t, clk, job, 0, encode(t, inspectResult(3, 100, 10)))
	waitKstatus(t, table, "deltatable-ready", "True/Inspected", status.CurrentStatus)
	kubectlWaitReady(t, ns, "deltatable/sales")

	unreachable := newTable(t, ns, "lost", nil)
	job = waitLiveJob(t, ns, "lost", "inspect")
	finishJob(t, clk, job, 1, encode(t, &result.Result{Command: "inspect", Outcome: result.Failed, Reason: result.ReasonUnreachable,
		Message: "GET s3://lake/lost: 403 Forbidden"}))
	waitKstatus(t, unreachable, "deltatable-unreachable", "False/Unreachable", status.InProgressStatus)

	refused := newTable(t, ns, "variant", nil)
	job = waitLiveJob(t, ns, "variant", "inspect")
	finishJob(t, clk, job, 2, encode(t, &result.Result{Command: "inspect", Outcome: result.Refused, Reason: result.ReasonUnsupportedFeature,
		Message: `table uses table feature "variantType-preview"`}))
	waitKstatus(t, refused, "deltatable-unsupported", "False/UnsupportedTable", status.FailedStatus)

	// Maintenance that fails: the table is still what its spec says (Current); Argo CD shows it Degraded.
	p := newPolicy(t, ns, "nightly", deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"sales"}}})
	annotate(t, p, deltav1.AnnotationRunNow, "now-1")
	job = waitLiveJob(t, ns, "sales", "maintain")
	finishJob(t, clk, job, 1, encode(t, &result.Result{Command: "maintain", Outcome: result.Failed, Reason: result.ReasonConflict, Message: "lost a conflict after 10 attempts"}))
	waitTable(t, table, "records the failed maintenance", func(tb *deltav1.DeltaTable) (bool, string) {
		c := condition(tb.Status.Conditions, deltav1.ConditionMaintenanceSucceeded)
		return strings.HasPrefix(c, "False/RunFailed"), c
	})
	waitKstatus(t, table, "deltatable-maintenance-failed", "True/Inspected", status.CurrentStatus)
}

func TestKstatus_OptimizePolicyStates(t *testing.T) {
	_, ns, clk := controllerTest(t)
	inspectTable(t, clk, ns, "t", nil, 100)
	p := newPolicy(t, ns, "nightly", deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"t"}}, Schedule: "0 3 * * *"})
	waitKstatus(t, p, "optimizepolicy-scheduled", "True/Scheduled", status.CurrentStatus)
	kubectlWaitReady(t, ns, "optimizepolicy/nightly")

	// A run in flight is the policy's steady work, not reconciling: Flux would otherwise wait for every run.
	annotate(t, p, deltav1.AnnotationRunNow, "now-1")
	job := waitLiveJob(t, ns, "t", "maintain")
	waitPolicy(t, p, "shows the running Job", func(p *deltav1.OptimizePolicy) (bool, string) {
		return len(p.Status.Active) == 1, fmt.Sprintf("%v", p.Status.Active)
	})
	waitKstatus(t, p, "optimizepolicy-running", "True/Scheduled", status.CurrentStatus)
	clk.Step(time.Minute)
	finishJob(t, clk, job, 1, encode(t, &result.Result{Command: "maintain", Outcome: result.Failed, Reason: result.ReasonConflict, Message: "lost a conflict after 10 attempts"}))
	waitPolicy(t, p, "reports the failure", func(p *deltav1.OptimizePolicy) (bool, string) {
		c := condition(p.Status.Conditions, deltav1.ConditionLastRunSucceeded)
		return strings.HasPrefix(c, "False/RunFailed"), c
	})
	waitKstatus(t, p, "optimizepolicy-run-failed", "True/Scheduled", status.CurrentStatus)

	// A refused run needs a person (the table's features or the spec must change): Failed.
	annotate(t, p, deltav1.AnnotationRunNow, "now-2")
	job = waitLiveJob(t, ns, "t", "maintain")
	clk.Step(time.Minute)
	finishJob(t, clk, job, 2, encode(t, &result.Result{Command: "maintain", Outcome: result.Refused, Reason: result.ReasonUnsupportedFeature,
		Message: `table uses table feature "variantType-preview"`}))
	waitPolicy(t, p, "reports the refusal", func(p *deltav1.OptimizePolicy) (bool, string) {
		c := condition(p.Status.Conditions, deltav1.ConditionLastRunSucceeded)
		return strings.HasPrefix(c, "False/RunRefused"), c
	})
	waitKstatus(t, p, "optimizepolicy-run-refused", "True/Scheduled", status.FailedStatus)

	suspended := newPolicy(t, ns, "paused", deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"t"}}, Schedule: "0 3 * * *", Suspend: true})
	waitKstatus(t, suspended, "optimizepolicy-suspended", "True/Suspended", status.CurrentStatus)

	mars := newPolicy(t, ns, "mars", deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"t"}}, Schedule: "0 3 * * *", TimeZone: "Mars/Olympus_Mons"})
	waitKstatus(t, mars, "optimizepolicy-invalid-schedule", "False/InvalidSchedule", status.FailedStatus)

	missing := newPolicy(t, ns, "typo", deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"no-such-table"}}, Schedule: "0 3 * * *"})
	waitKstatus(t, missing, "optimizepolicy-no-targets", "False/NoTargets", status.InProgressStatus)
}

func TestKstatus_StreamIngestStates(t *testing.T) {
	_, ns, clk := controllerTest(t)
	newTable(t, ns, "orders", nil)
	si := newStream(t, ns, "orders-csv", "orders", nil)
	job := waitIngestJob(t, si)
	waitKstatus(t, si, "streamingest-starting", "False/Pending", status.InProgressStatus)
	finishJob(t, clk, job, 0, encode(t, ingestResult(result.Succeeded, 0, 1, 0)))
	waitKstatus(t, si, "streamingest-caught-up", "True/CaughtUp", status.CurrentStatus)
	kubectlWaitReady(t, ns, "streamingest/orders-csv")

	// Retried failures are not Ready: InProgress, with the cause in Ready's message.
	clk.Step(2 * time.Minute)
	poke(t, si)
	job = waitIngestJob(t, si, job.Name)
	finishJob(t, clk, job, 1, encode(t, &result.Result{Command: "ingest", Outcome: result.Failed, Reason: result.ReasonUnreachable,
		Message: "list s3://landing/orders-csv/: 403 Forbidden", Ingest: &result.Ingest{LastBatch: -1}}))
	waitKstatus(t, si, "streamingest-source-unreachable", "False/SourceUnreachable", status.InProgressStatus)
	clk.Step(11 * time.Second)
	poke(t, si)
	prev := job.Name
	job = waitIngestJob(t, si, prev)
	finishJob(t, clk, job, 2, encode(t, refusedIngest(result.ReasonBadFile, &result.Ingest{BadFile: &result.BadFile{File: "landing/orders-csv/07.csv", Row: 12, Column: "qty"}})))
	waitKstatus(t, si, "streamingest-bad-file", "False/BadFile", status.FailedStatus)

	paused := newStream(t, ns, "paused", "orders", func(s *deltav1.StreamIngestSpec) { s.Suspend = true })
	waitKstatus(t, paused, "streamingest-suspended", "True/Suspended", status.CurrentStatus)

	drain := newStream(t, ns, "backfill", "orders", func(s *deltav1.StreamIngestSpec) {
		s.Trigger = &deltav1.IngestTrigger{AvailableNow: true}
	})
	job = waitIngestJob(t, drain)
	finishJob(t, clk, job, 0, encode(t, ingestResult(result.Succeeded, 0, 2, 0)))
	waitKstatus(t, drain, "streamingest-completed", "True/Completed", status.CurrentStatus)
}
