package controllers

import (
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func maintRecord(result deltav1.RunResult, done time.Time) deltav1.RunRecord {
	return deltav1.RunRecord{Operations: []deltav1.Operation{deltav1.OperationOptimize}, Result: result,
		CompletionTime: &metav1.Time{Time: done}}
}

func TestTableHealthGauges_CountFailedMaintenanceSinceTheLastSuccessAndSeedItsTime(t *testing.T) {
	now := time.Unix(1_800_000_000, 0)
	inspect := deltav1.RunRecord{Operations: []deltav1.Operation{deltav1.OperationInspect}, Result: deltav1.RunFailed}
	tbl := &deltav1.DeltaTable{ObjectMeta: metav1.ObjectMeta{Namespace: "health", Name: "events"}}
	tbl.Status.Conditions = []metav1.Condition{{Type: deltav1.ConditionMaintenanceSucceeded, Status: metav1.ConditionFalse}}
	tbl.Status.RecentRuns = []deltav1.RunRecord{ // newest first
		{Result: deltav1.RunRunning},
		maintRecord(deltav1.RunFailed, now),
		inspect,
		{Result: deltav1.RunSkipped},
		maintRecord(deltav1.RunRefused, now.Add(-time.Hour)),
		maintRecord(deltav1.RunSucceeded, now.Add(-2*time.Hour)),
		maintRecord(deltav1.RunFailed, now.Add(-3*time.Hour)),
	}
	defer forgetTable("health", "events")
	setTableGauges(tbl)
	if got := promtestutil.ToFloat64(tableMaintenanceFailures.WithLabelValues("health", "events")); got != 2 {
		t.Errorf("consecutive failures = %v, want 2 (the failed and the refused run after the success)", got)
	}
	want := float64(now.Add(-2 * time.Hour).Unix())
	if got := promtestutil.ToFloat64(lastSuccess.WithLabelValues("health", "events", string(JobMaintain))); got != want {
		t.Errorf("last success = %v, want %v from the recorded run", got, want)
	}
	// A newer success observed live wins; an older recorded one does not move it back.
	raiseLastSuccess("health", "events", string(JobMaintain), now)
	setTableGauges(tbl)
	if got := promtestutil.ToFloat64(lastSuccess.WithLabelValues("health", "events", string(JobMaintain))); got != float64(now.Unix()) {
		t.Errorf("last success = %v after a newer live success, want %v", got, now.Unix())
	}
	for status, want := range map[string]float64{"True": 0, "False": 1, "Unknown": 0} {
		got := promtestutil.ToFloat64(tableCondition.WithLabelValues("health", "events", deltav1.ConditionMaintenanceSucceeded, status))
		if got != want {
			t.Errorf("table_condition{status=%q} = %v, want %v", status, got, want)
		}
	}

	tbl.Status.RecentRuns = append([]deltav1.RunRecord{maintRecord(deltav1.RunNothingToDo, now.Add(time.Minute))}, tbl.Status.RecentRuns...)
	setTableGauges(tbl)
	if got := promtestutil.ToFloat64(tableMaintenanceFailures.WithLabelValues("health", "events")); got != 0 {
		t.Errorf("consecutive failures = %v after a NothingToDo run, want 0", got)
	}

	forgetTable("health", "events")
	for name, n := range map[string]int{
		"table_condition": promtestutil.CollectAndCount(tableCondition),
		"failures":        promtestutil.CollectAndCount(tableMaintenanceFailures),
		"last_success":    promtestutil.CollectAndCount(lastSuccess),
	} {
		if n != 0 {
			t.Errorf("%d %s series left after the table was deleted", n, name)
		}
	}
}

func TestPolicyGauges_PublishIntervalAndTriggersPerTargetAndDropLeftTargets(t *testing.T) {
	sched, err := ParseSchedule("0 */6 * * *", "")
	if err != nil {
		t.Fatal(err)
	}
	pol := &deltav1.OptimizePolicy{ObjectMeta: metav1.ObjectMeta{Namespace: "health", Name: "nightly"}}
	pol.Spec.Triggers = &deltav1.Triggers{MaxAvgDepth: ptr.To(4.0)}
	next := &metav1.Time{Time: time.Date(2027, 1, 1, 6, 0, 0, 0, time.UTC)}
	defer forgetPolicy("health", "nightly")

	setPolicyGauges(pol, []string{"a", "b"}, sched, next, false)
	if got := promtestutil.ToFloat64(policyScheduleInterval.WithLabelValues("health", "nightly", "b")); got != 6*3600 {
		t.Errorf("schedule interval = %v, want 21600", got)
	}
	if got := promtestutil.ToFloat64(policyMinSmallFiles.WithLabelValues("health", "nightly", "a")); got != float64(deltav1.DefaultMinSmallFiles) {
		t.Errorf("min small files = %v, want the default %d", got, deltav1.DefaultMinSmallFiles)
	}
	if got := promtestutil.ToFloat64(policyMaxAvgDepth.WithLabelValues("health", "nightly", "a")); got != 4 {
		t.Errorf("max avg depth = %v, want 4", got)
	}
	if n := promtestutil.CollectAndCount(policyMinSkipping); n != 0 {
		t.Errorf("%d min-skipping series for a policy that sets no such trigger", n)
	}

	// Table a leaves the targets and the policy is suspended: a's series go, b keeps its triggers only.
	setPolicyGauges(pol, []string{"b"}, sched, next, true)
	if n := promtestutil.CollectAndCount(policyMinSmallFiles); n != 1 {
		t.Errorf("%d min-small-files series, want 1 (table b)", n)
	}
	if n := promtestutil.CollectAndCount(policyScheduleInterval); n != 0 {
		t.Errorf("%d schedule-interval series while suspended, want 0", n)
	}

	forgetPolicy("health", "nightly")
	for _, vec := range policyTargetVecs {
		if n := promtestutil.CollectAndCount(vec); n != 0 {
			t.Errorf("%d series left after the policy was deleted", n)
		}
	}
}
