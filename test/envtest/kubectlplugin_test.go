package envtest

import (
	"bytes"
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/kubectlplugin"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// plugin runs `kubectl deltakeeper args…` against the suite's API server, as a person would, and returns
// its output.
func plugin(t *testing.T, ns string, color bool, args ...string) (string, error) {
	t.Helper()
	var out bytes.Buffer
	cmd := kubectlplugin.NewCommand("deltakeeper", "kubectl deltakeeper", &kubectlplugin.Options{Out: &out, ErrOut: &out, Color: ptr.To(color)})
	cmd.SetArgs(append([]string{"--kubeconfig", kubeconfigPath, "-n", ns}, args...))
	cmd.SetOut(&out)
	err := cmd.ExecuteContext(context.Background())
	return out.String(), err
}

func mustPlugin(t *testing.T, ns string, args ...string) string {
	t.Helper()
	out, err := plugin(t, ns, false, args...)
	if err != nil {
		t.Fatalf("kubectl deltakeeper %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("kubectl deltakeeper %s:\n%s", strings.Join(args, " "), out)
	return out
}

func wantLines(t *testing.T, what, out string, wants ...string) {
	t.Helper()
	for _, w := range wants {
		if !strings.Contains(out, w) {
			t.Errorf("%s: output lacks %q:\n%s", what, w, out)
		}
	}
}

func TestKubectlPlugin_StatusRunHistoryExplainSuspend(t *testing.T) {
	_, ns, clk := controllerTest(t)
	sales := inspectTable(t, clk, ns, "sales", nil, 10)
	p := newPolicy(t, ns, "nightly", deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"sales"}}, Schedule: "0 3 * * *"})
	si := newStream(t, ns, "sales-csv", "sales", nil)
	waitPolicy(t, p, "scheduled", func(p *deltav1.OptimizePolicy) (bool, string) {
		return strings.HasPrefix(condition(p.Status.Conditions, deltav1.ConditionReady), "True/Scheduled"), condition(p.Status.Conditions, deltav1.ConditionReady)
	})
	ingest := waitIngestJob(t, si)
	finishJob(t, clk, ingest, 0, encode(t, ingestResult(result.Succeeded, 0, 1, 3)))
	waitStream(t, si, "caught up", func(s *deltav1.StreamIngest) (bool, string) {
		r := condition(s.Status.Conditions, deltav1.ConditionReady)
		return strings.HasPrefix(r, "True/"), r
	})

	// status: the three kinds, health at a glance, no colour off a terminal, colour when asked.
	out := mustPlugin(t, ns, "status")
	wantLines(t, "status", out, "DELTATABLES", "OPTIMIZEPOLICIES", "STREAMINGESTS", "HEALTH",
		"sales", "Ready", "nightly", "0 3 * * *", "sales-csv", "3 files, 3.0 MiB", "Health: 3 Ready")
	if strings.Contains(out, "\x1b[") {
		t.Errorf("colour codes off a terminal:\n%q", out)
	}
	if colored, err := plugin(t, ns, true, "status"); err != nil || !strings.Contains(colored, "\x1b[32mReady\x1b[0m") {
		t.Errorf("status with colour: %v\n%q", err, colored)
	}

	// explain before any run: the triggers are not crossed (10 small files < 50), the lock is free.
	out = mustPlugin(t, ns, "explain", "sales")
	wantLines(t, "explain", out, "deltatable/sales in "+ns+": Ready", "Conditions:", "Ready=True Inspected",
		"no maintenance run recorded", "Lock:", "free", "optimizepolicy/nightly: Ready (Scheduled)", `schedule "0 3 * * *"`,
		"a slot would skip it (BelowTriggers): no trigger crossed: 10 small files < 50",
		"Streams writing it: sales-csv", "triggers are not crossed")

	// run a policy: the run-now annotation, which the controller acts on.
	out = mustPlugin(t, ns, "run", "nightly", "--request", "req-1", "--wait", "15s")
	wantLines(t, "run", out, "optimizepolicy/nightly: run-now requested (deltakeeper.io/run-now=req-1)", "the run started")
	job := waitLiveJob(t, ns, "sales", "maintain")

	// explain while it runs: the lock names the Job.
	out = mustPlugin(t, ns, "explain", "sales")
	wantLines(t, "explain during the run", out, "held by running Job "+job.Name, "Job "+job.Name+" holds the table's lock")
	clk.Step(time.Minute)
	finishJob(t, clk, job, 0, encode(t, maintainResult(12)))
	waitTable(t, sales, "records the run", func(tb *deltav1.DeltaTable) (bool, string) {
		return tb.Status.ActiveJob == "" && lastResult(tb.Status.RecentRuns) == deltav1.RunSucceeded, fmt.Sprintf("%+v", tb.Status.RecentRuns)
	})

	// history: what the run did.
	out = mustPlugin(t, ns, "history", "sales")
	wantLines(t, "history", out, "deltatable/sales:", "Succeeded", "RunNow", job.Name, "-60/+5", "12", "Inspect")

	// run one table: a one-table copy of the policy, owned by it, started by its run-now annotation.
	out = mustPlugin(t, ns, "run", "deltatable/sales", "--request", "req-2")
	wantLines(t, "run table", out, "optimizepolicy/nightly-now-sales: created, the steps of nightly on table sales only",
		"optimizepolicy/nightly-now-sales: run-now requested (deltakeeper.io/run-now=req-2)")
	var one deltav1.OptimizePolicy
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: "nightly-now-sales"}, &one); err != nil {
		t.Fatal(err)
	}
	if one.Spec.Schedule != "" || len(one.Spec.Targets.TableNames) != 1 || one.Spec.Targets.TableNames[0] != "sales" ||
		len(one.OwnerReferences) != 1 || one.OwnerReferences[0].Name != "nightly" || one.Annotations[deltav1.AnnotationRunNow] != "req-2" {
		t.Errorf("one-table policy = %+v %+v", one.ObjectMeta, one.Spec)
	}
	job2 := waitLiveJob(t, ns, "sales", "maintain")
	if job2.Annotations[deltav1.AnnotationPolicy] != "nightly-now-sales" {
		t.Errorf("the one-table run's Job belongs to %q", job2.Annotations[deltav1.AnnotationPolicy])
	}
	clk.Step(time.Minute)
	finishJob(t, clk, job2, 0, encode(t, maintainResult(13)))

	// A second policy on the table: run deltatable/ must be told which (the one-table copy does not count).
	newPolicy(t, ns, "weekly", deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"sales"}}, Schedule: "0 4 * * 0"})
	if out, err := plugin(t, ns, false, "run", "table/sales"); err == nil || !strings.Contains(err.Error(), "nightly, weekly") {
		t.Errorf("run table with two policies: %v\n%s", err, out)
	}
	mustPlugin(t, ns, "run", "table/sales", "--policy", "nightly", "--request", "req-3")
	if err := k8sClient.Get(context.Background(), clientKey(&one), &one); err != nil || one.Annotations[deltav1.AnnotationRunNow] != "req-3" {
		t.Errorf("the one-table policy is reused: %v %v", err, one.Annotations)
	}

	// suspend / resume: spec.suspend, which status then shows.
	wantLines(t, "suspend", mustPlugin(t, ns, "suspend", "optimizepolicy/nightly"), "optimizepolicy/nightly suspended")
	waitPolicy(t, p, "suspended", func(p *deltav1.OptimizePolicy) (bool, string) {
		return p.Spec.Suspend && strings.HasPrefix(condition(p.Status.Conditions, deltav1.ConditionReady), "True/Suspended"), condition(p.Status.Conditions, deltav1.ConditionReady)
	})
	wantLines(t, "status while suspended", mustPlugin(t, ns, "status"), "Suspended")
	wantLines(t, "explain while suspended", mustPlugin(t, ns, "explain", "sales"), "policy nightly is suspended")
	mustPlugin(t, ns, "suspend", "si/sales-csv")
	waitStream(t, si, "suspended", func(s *deltav1.StreamIngest) (bool, string) { return s.Spec.Suspend, "" })
	wantLines(t, "resume", mustPlugin(t, ns, "resume", "optimizepolicy/nightly"), "optimizepolicy/nightly resumed")
	waitPolicy(t, p, "resumed", func(p *deltav1.OptimizePolicy) (bool, string) { return !p.Spec.Suspend, "" })
	if out, err := plugin(t, ns, false, "suspend", "deltatable/sales"); err == nil || !strings.Contains(err.Error(), "policies that target it") {
		t.Errorf("suspend a table: %v\n%s", err, out)
	}
	if out, err := plugin(t, ns, false, "explain", "nope"); err == nil || !strings.Contains(err.Error(), "not found") {
		t.Errorf("explain a missing table: %v\n%s", err, out)
	}
}

func lastResult(runs []deltav1.RunRecord) deltav1.RunResult {
	for _, r := range runs {
		if !r.HasOperation(deltav1.OperationInspect) {
			return r.Result
		}
	}
	return ""
}
