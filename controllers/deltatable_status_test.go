package controllers

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

func inspectRun(name string, end time.Time, gen int64, res *result.Result, problem string) finishedRun {
	run := finishedRun{
		Job:        &batchv1.Job{},
		Kind:       JobInspect,
		Generation: gen,
		Record: deltav1.RunRecord{JobName: name, Table: "t", Operations: []deltav1.Operation{deltav1.OperationInspect},
			CompletionTime: &metav1.Time{Time: end}},
	}
	if res != nil {
		run.setResult(res)
	} else {
		run.setProblem(problem, "the Job failed: DeadlineExceeded")
	}
	return run
}

func inspected(version int64) *result.Result {
	return &result.Result{V: 1, Outcome: result.Succeeded, Version: &version, Table: &result.Table{
		Version: version, NumFiles: 340, SizeBytes: 13207024435, NumSmallFiles: 57, ClusteringColumns: []string{"a"},
		MinReaderVersion: 3, MinWriterVersion: 7, WriterFeatures: []string{"clustering"},
		Quality: []result.ColumnQuality{{Column: "a", Status: "ok", AvgDepth: 3.5, SkippingEffectiveness: 0.4}},
	}, Applied: &result.Applied{Properties: []string{"delta.targetFileSize"}, Version: &version}}
}

func TestMergeRuns_IsIdempotentAndCapped(t *testing.T) {
	base := time.Date(2026, 5, 21, 0, 0, 0, 0, time.UTC)
	var runs []finishedRun
	for i := range 12 {
		runs = append(runs, inspectRun("job-"+string(rune('a'+i)), base.Add(time.Duration(i)*time.Minute), 1, inspected(int64(i)), ""))
	}
	merged, added := mergeRuns(nil, runs, maxTableRuns)
	if len(merged) != 10 || merged[0].JobName != "job-l" || merged[9].JobName != "job-c" {
		t.Fatalf("merged = %d records, first %s, last %s", len(merged), merged[0].JobName, merged[len(merged)-1].JobName)
	}
	if len(added) != 10 || added[0].Record.JobName != "job-c" {
		t.Errorf("added = %d, first %s: the ten newest, oldest first", len(added), added[0].Record.JobName)
	}
	again, addedAgain := mergeRuns(merged, runs, maxTableRuns)
	if len(addedAgain) != 0 || len(again) != 10 {
		t.Errorf("merging the same Jobs again added %d runs", len(addedAgain))
	}
}

func TestPlanInspect_RetriesWithBackoffAndOnSpecChange(t *testing.T) {
	now := time.Date(2026, 5, 21, 12, 0, 0, 0, time.UTC)
	last := now.Add(-10 * time.Minute)
	rec := []deltav1.RunRecord{{JobName: "i1", Result: deltav1.RunFailed, Operations: []deltav1.Operation{deltav1.OperationInspect},
		CompletionTime: &metav1.Time{Time: last}}}
	reach := func(gen int64) []metav1.Condition {
		return []metav1.Condition{{Type: deltav1.ConditionReachable, Status: metav1.ConditionTrue, ObservedGeneration: gen}}
	}
	tests := []struct {
		name        string
		mutate      func(*deltav1.DeltaTable)
		wantTrigger string
		// The due time lies in [from, to): back-off and interval are jittered per table.
		from, to time.Time
	}{
		{"new table", func(*deltav1.DeltaTable) {}, triggerCreated, now, now.Add(time.Nanosecond)},
		{"spec changed since the last inspection", func(t *deltav1.DeltaTable) {
			t.Generation = 2
			t.Status.RecentRuns, t.Status.Conditions = rec, reach(1)
			t.Status.FailedInspections = 5
		}, triggerSpecChanged, now, now.Add(time.Nanosecond)},
		{"third failure: 2 to 4 minutes after the last attempt", func(t *deltav1.DeltaTable) {
			t.Status.RecentRuns, t.Status.Conditions, t.Status.FailedInspections = rec, reach(1), 3
		}, triggerRetry, last.Add(2 * time.Minute), last.Add(4 * time.Minute)},
		{"many failures: capped at an hour", func(t *deltav1.DeltaTable) {
			t.Status.RecentRuns, t.Status.Conditions, t.Status.FailedInspections = rec, reach(1), 30
		}, triggerRetry, last.Add(30 * time.Minute), last.Add(time.Hour)},
		{"healthy: on the table's phase of inspectInterval", func(t *deltav1.DeltaTable) {
			t.Status.RecentRuns, t.Status.Conditions = rec, reach(1)
			t.Status.LastInspectedTime = &metav1.Time{Time: last}
			t.Spec.InspectInterval = &metav1.Duration{Duration: 30 * time.Minute}
		}, triggerInterval, last.Add(15 * time.Minute), last.Add(45 * time.Minute)},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table := s3Table("t").obj()
			tc.mutate(table)
			p := planInspect(table, now)
			if p.Trigger != tc.wantTrigger || p.Due.Before(tc.from) || !p.Due.Before(tc.to) {
				t.Errorf("plan = %+v, want %s in [%s, %s)", p, tc.wantTrigger, tc.from, tc.to)
			}
			if p.Due.After(now) && !p.Due.Equal(planInspect(table, now.Add(time.Minute)).Due) {
				t.Error("the due time must not depend on the time of the reconcile")
			}
			if p.Key != planInspect(table, now.Add(time.Hour)).Key {
				t.Error("the slot key must not depend on the time of the reconcile")
			}
		})
	}
}

func TestApplyInspect_SetsFactsAndConditions(t *testing.T) {
	now := time.Date(2026, 5, 21, 12, 0, 0, 0, time.UTC)
	refused := &result.Result{V: 1, Outcome: result.Refused, Reason: result.ReasonUnsupportedFeature, Message: `writer feature "rowTracking"`}
	unreachable := &result.Result{V: 1, Outcome: result.Failed, Reason: result.ReasonUnreachable, Message: "GET https://k:s@minio/b: 403 Forbidden"}
	notFound := &result.Result{V: 1, Outcome: result.Refused, Reason: result.ReasonTableNotFound, Message: "s3://b/t has no _delta_log"}
	tests := []struct {
		name                 string
		gen                  int64
		runs                 []finishedRun
		view                 tableView
		wantReady            metav1.ConditionStatus
		wantReason, wantMsg  string
		wantFailures         int32
		wantFacts, wantProps bool
	}{
		{"first inspection succeeds", 1, []finishedRun{inspectRun("i1", now, 1, inspected(7), "")}, tableView{},
			metav1.ConditionTrue, deltav1.ReasonInspected, "version 7: 340 files (57 small), 12.3GiB", 0, true, true},
		{"unreachable: Ready False, credentials scrubbed", 1, []finishedRun{inspectRun("i1", now, 1, unreachable, "")}, tableView{NextInspect: now.Add(time.Minute)},
			metav1.ConditionFalse, deltav1.ReasonUnreachable, "Unreachable: GET https://***@minio/b: 403 Forbidden", 1, false, false},
		{"unsupported table: refused", 1, []finishedRun{inspectRun("i1", now, 1, refused, "")}, tableView{},
			metav1.ConditionFalse, deltav1.ReasonUnsupportedTable, "rowTracking", 1, false, false},
		{"Job failed without a result", 1, []finishedRun{inspectRun("i1", now, 1, nil, deltav1.ReasonJobFailed)}, tableView{},
			metav1.ConditionFalse, deltav1.ReasonJobFailed, "DeadlineExceeded", 1, false, false},
		{"recovery resets the failures", 1, []finishedRun{
			inspectRun("i1", now.Add(-time.Hour), 1, unreachable, ""), inspectRun("i2", now, 1, inspected(8), "")}, tableView{},
			metav1.ConditionTrue, deltav1.ReasonInspected, "version 8", 0, true, true},
		{"spec changed after the inspection: properties pending", 2, []finishedRun{inspectRun("i1", now, 1, inspected(7), "")},
			tableView{ActiveJob: "i2", ActiveInspect: true},
			metav1.ConditionFalse, deltav1.ReasonPropertiesPending, "inspect Job i2 is running", 0, true, true},
		{"no table at the location: unreachable, not refused", 1, []finishedRun{inspectRun("i1", now, 1, notFound, "")}, tableView{NextInspect: now.Add(time.Minute)},
			metav1.ConditionFalse, deltav1.ReasonTableNotFound, "no Delta table at spec.location", 1, false, false},
		{"first inspection running: the Job is named once", 1, nil, tableView{ActiveJob: "i1", ActiveInspect: true},
			metav1.ConditionFalse, deltav1.ReasonInspecting, "the first inspect Job i1 is running", 0, false, false},
		{"duplicate location: nothing runs", 1, nil, tableView{Duplicate: "DeltaTable lake/a, created earlier, manages the same table"},
			metav1.ConditionFalse, deltav1.ReasonDuplicateLocation, "lake/a", 0, false, false},
		{"never inspected, waiting for the lock", 1, nil, tableView{Waiting: "inspect waits for Job m1, which holds the table's lock"},
			metav1.ConditionFalse, deltav1.ReasonPending, "waits for Job m1", 0, false, false},
		{"never inspected, pod stuck on a missing Secret", 1, nil, tableView{ActiveJob: "i1", ActiveInspect: true,
			Stuck: `worker pod i1-x cannot start: CreateContainerConfigError: secret "keys" not found`},
			metav1.ConditionFalse, deltav1.ReasonInspecting, `secret "keys" not found`, 0, false, false},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			table := s3Table("t").obj()
			table.Generation = tc.gen
			st := table.Status.DeepCopy()
			conds := conditionSetter{conds: &st.Conditions, generation: tc.gen, now: now}
			var added []*finishedRun
			st.RecentRuns, added = mergeRuns(st.RecentRuns, tc.runs, maxTableRuns)
			for _, r := range added {
				applyInspect(st, conds, r)
			}
			setReady(table, st, conds, tc.view)
			ready := meta.FindStatusCondition(st.Conditions, deltav1.ConditionReady)
			if n := strings.Count(ready.Message, "i1 is running"); n > 1 {
				t.Errorf("Ready %q names the running Job %d times", ready.Message, n)
			}
			if ready.Status != tc.wantReady || ready.Reason != tc.wantReason || !strings.Contains(ready.Message, tc.wantMsg) {
				t.Errorf("Ready = %s/%s %q, want %s/%s containing %q", ready.Status, ready.Reason, ready.Message, tc.wantReady, tc.wantReason, tc.wantMsg)
			}
			if !ready.LastTransitionTime.Time.Equal(now) || ready.ObservedGeneration != tc.gen {
				t.Errorf("Ready transition %s gen %d: the clock and generation must be the reconciler's", ready.LastTransitionTime, ready.ObservedGeneration)
			}
			if st.FailedInspections != tc.wantFailures {
				t.Errorf("failedInspections = %d, want %d", st.FailedInspections, tc.wantFailures)
			}
			if got := st.Version != nil && st.Size == "12.3GiB" && len(st.Clustering) == 1 && st.Protocol.MinWriterVersion == 7; got != tc.wantFacts {
				t.Errorf("facts set = %v, want %v: %+v", got, tc.wantFacts, st)
			}
			props := meta.FindStatusCondition(st.Conditions, deltav1.ConditionPropertiesApplied)
			if got := props != nil && props.Status == metav1.ConditionTrue; got != tc.wantProps {
				t.Errorf("PropertiesApplied = %+v", props)
			}
		})
	}
}

func TestApplyMaintenance_KeepsQualityWhenTheResultHasNone(t *testing.T) {
	now := time.Date(2026, 5, 21, 12, 0, 0, 0, time.UTC)
	st := &deltav1.DeltaTableStatus{Clustering: []deltav1.ColumnQuality{{Column: "a", Status: "ok", AvgDepth: 9}}}
	res := &result.Result{V: 1, Outcome: result.Succeeded, Table: &result.Table{Version: 9, NumFiles: 3}}
	run := finishedRun{Job: &batchv1.Job{}, Kind: JobMaintain, Record: deltav1.RunRecord{JobName: "m1", CompletionTime: &metav1.Time{Time: now}}}
	run.setResult(res)
	applyMaintenance(st, conditionSetter{conds: &st.Conditions, generation: 1, now: now}, &run)
	if *st.Version != 9 || st.NumFiles != 3 || len(st.Clustering) != 1 {
		t.Errorf("status = %+v", st)
	}
	if c := meta.FindStatusCondition(st.Conditions, deltav1.ConditionMaintenanceSucceeded); c == nil || c.Status != metav1.ConditionTrue {
		t.Errorf("MaintenanceSucceeded = %+v", c)
	}
}
