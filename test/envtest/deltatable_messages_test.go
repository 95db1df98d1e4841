package envtest

import (
	"fmt"
	"strings"
	"testing"
	"time"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

func TestDeltaTable_ReadyNamesTheRunningFirstInspectionOnce(t *testing.T) {
	_, ns, _ := controllerTest(t)
	table := newTable(t, ns, "fresh", nil)
	job := waitLiveJob(t, ns, "fresh", "inspect")
	got := waitTable(t, table, "inspecting", func(tb *deltav1.DeltaTable) (bool, string) {
		ready := condition(tb.Status.Conditions, deltav1.ConditionReady)
		return strings.HasPrefix(ready, "False/Inspecting"), ready
	})
	ready := condition(got.Status.Conditions, deltav1.ConditionReady)
	if n := strings.Count(ready, job.Name); n != 1 || !strings.Contains(ready, "the first inspect Job "+job.Name+" is running") {
		t.Errorf("Ready = %q: want the running inspect Job named once (found %d times)", ready, n)
	}
}

func TestDeltaTable_MissingTableIsNotReachable(t *testing.T) {
	_, ns, clk := controllerTest(t)
	table := newTable(t, ns, "typo", nil)
	job := waitLiveJob(t, ns, "typo", "inspect")
	// What the worker reports for a location without _delta_log (exit code 2, refused).
	finishJob(t, clk, job, 2, encode(t, &result.Result{Command: "inspect", Outcome: result.Refused, Reason: result.ReasonTableNotFound,
		Message: "s3://lake/typo: no _delta_log: not a Delta table"}))
	got := waitTable(t, table, "not found", func(tb *deltav1.DeltaTable) (bool, string) {
		return tb.Status.FailedInspections == 1, condition(tb.Status.Conditions, deltav1.ConditionReady)
	})
	reach := condition(got.Status.Conditions, deltav1.ConditionReachable)
	ready := condition(got.Status.Conditions, deltav1.ConditionReady)
	if !strings.HasPrefix(reach, "False/TableNotFound") || !strings.Contains(reach, "no _delta_log") {
		t.Errorf("Reachable = %q, want False/TableNotFound", reach)
	}
	if !strings.HasPrefix(ready, "False/TableNotFound") || strings.Contains(ready, "RunRefused") {
		t.Errorf("Ready = %q, want False/TableNotFound, not RunRefused", ready)
	}
}

func TestOptimizePolicy_RunNowWaitsUntilAnInspectionAppliedTheDeclaredProperties(t *testing.T) {
	_, ns, clk := controllerTest(t)
	table := newTable(t, ns, "fresh", nil)
	inspect := waitLiveJob(t, ns, "fresh", "inspect")
	p := newPolicy(t, ns, "now", deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"fresh"}}})
	annotate(t, p, deltav1.AnnotationRunNow, "asap")
	waitPolicy(t, p, "says the run-now waits", func(p *deltav1.OptimizePolicy) (bool, string) {
		ready := condition(p.Status.Conditions, deltav1.ConditionReady)
		return strings.Contains(ready, "waits for its first inspection to apply the declared properties") && p.Status.LastRunNow == "", ready
	})
	consistently(t, "no maintenance with defaults before the inspection", 500*time.Millisecond, func() (bool, string) {
		jobs := tableJobs(t, ns, "fresh", "maintain")
		return len(jobs) == 0, fmt.Sprintf("%d maintain Jobs", len(jobs))
	})
	finishJob(t, clk, inspect, 0, encode(t, inspectResult(1, 3, 3)))
	waitTable(t, table, "inspected", func(tb *deltav1.DeltaTable) (bool, string) {
		return strings.HasPrefix(condition(tb.Status.Conditions, deltav1.ConditionPropertiesApplied), "True/"), ""
	})
	waitLiveJob(t, ns, "fresh", "maintain")
	waitPolicy(t, p, "acted on the run-now", func(p *deltav1.OptimizePolicy) (bool, string) {
		return p.Status.LastRunNow == "asap", condition(p.Status.Conditions, deltav1.ConditionReady)
	})
}
