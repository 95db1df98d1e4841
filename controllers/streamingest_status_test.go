package controllers

import (
	"strings"
	"testing"
	"time"

	promtestutil "github.com/prometheus/client_golang/prometheus/testutil"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

func ingestRun(res *result.Result, done time.Time) *finishedRun {
	return &finishedRun{Kind: JobIngest, Result: res, Record: deltav1.RunRecord{JobName: "t-ingest-x", Result: deltav1.RunSucceeded,
		StartTime: &metav1.Time{Time: done.Add(-30 * time.Second)}, CompletionTime: &metav1.Time{Time: done}}}
}

func ingestReport(outcome result.Outcome, reason string, in *result.Ingest) *result.Result {
	return &result.Result{Command: "ingest", Outcome: outcome, Reason: reason, Message: "details", Ingest: in}
}

func TestClassifyIngest_NamesTheCauseAndWhetherToRetry(t *testing.T) {
	cases := []struct {
		name         string
		run          *finishedRun
		availableNow bool
		want         outcome
		msgHas       string
	}{
		{"backlog left", ingestRun(ingestReport(result.Succeeded, "", &result.Ingest{NumBatches: 3, Backlog: &result.Backlog{Files: 4}}), time.Now()), false,
			outcome{Reason: deltav1.ReasonBatchCommitted}, "backlog 4 files"},
		{"caught up", ingestRun(ingestReport(result.NothingToDo, "", &result.Ingest{Backlog: &result.Backlog{}}), time.Now()), false,
			outcome{Reason: deltav1.ReasonCaughtUp}, "caught up"},
		{"drained", ingestRun(ingestReport(result.Succeeded, "", &result.Ingest{NumBatches: 2, Backlog: &result.Backlog{Files: 1}}), time.Now()), true,
			outcome{Reason: deltav1.ReasonCompleted}, "processed everything"},
		{"bad file", ingestRun(ingestReport(result.Refused, result.ReasonBadFile, &result.Ingest{BadFile: &result.BadFile{File: "drop/a.csv", Row: 7, Column: "qty"}}), time.Now()), false,
			outcome{Reason: deltav1.ReasonBadFile, Stop: true}, "drop/a.csv (row 7, column qty)"},
		{"new columns", ingestRun(ingestReport(result.Refused, result.ReasonSchemaChange, &result.Ingest{NewColumns: []string{"coupon", "tip"}}), time.Now()), false,
			outcome{Reason: deltav1.ReasonSchemaChangeNeeded, Stop: true}, "coupon, tip"},
		{"corrupt table", ingestRun(ingestReport(result.Refused, result.ReasonCorruptTable, &result.Ingest{}), time.Now()), false,
			outcome{Reason: deltav1.ReasonRunRefused, Stop: true}, "CorruptTable"},
		{"unreachable", ingestRun(ingestReport(result.Failed, result.ReasonUnreachable, &result.Ingest{}), time.Now()), false,
			outcome{Reason: deltav1.ReasonSourceUnreachable, Retry: true}, ""},
		{"no result", &finishedRun{Record: deltav1.RunRecord{Message: "the Job failed: DeadlineExceeded"}}, false,
			outcome{Reason: deltav1.ReasonJobFailed, Retry: true}, "DeadlineExceeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := classifyIngest(c.run, c.availableNow)
			if got.Reason != c.want.Reason || got.Stop != c.want.Stop || got.Retry != c.want.Retry || !strings.Contains(got.Message, c.msgHas) {
				t.Errorf("classifyIngest = %+v, want %+v with message containing %q", got, c.want, c.msgHas)
			}
		})
	}
}

func TestApplyIngestRun_FoldsBatchesOnceAndKeepsTheNewest(t *testing.T) {
	st := &deltav1.StreamIngestStatus{ConsecutiveFailures: 2}
	in := &result.Ingest{LastBatch: 11, NumBatches: 12, Rows: 1200, Backlog: &result.Backlog{Files: 3, Bytes: 300, OldestAgeSec: 90},
		SchemaChanges: []string{"coupon"}, SkippedCount: 1, Skipped: []result.SkippedFile{{File: "drop/x.json", Reason: "truncated"}},
		AutoCompaction: []result.Op{{Name: "optimize", Outcome: result.Succeeded, FilesRemoved: 40, FilesAdded: 1}}}
	for id := int64(0); id < 12; id++ {
		in.Batches = append(in.Batches, result.IngestBatch{ID: id, Files: 2, Bytes: 100, Rows: 100, Version: 10 + id, Written: map[string]int{"day=1": 1}})
	}
	in.Batches[11].Merge = &result.Merge{Mode: "upsert", FilesTotal: 40, FilesPrunedByPartition: 30, FilesPrunedByStats: 6, FilesScanned: 4,
		FilesTouched: 2, RowsUpdated: 70, RowsDeleted: 5, RowsInserted: 25, Attempts: 2}
	run := ingestRun(ingestReport(result.Succeeded, "", in), time.Now())
	o := classifyIngest(run, false)
	applyIngestRun(st, run, o)
	applyIngestRun(st, run, o) // a report folded twice (a lost status write) changes nothing but the counters of the lost write
	if len(st.RecentBatches) != maxStreamBatches || st.RecentBatches[0].BatchID != 11 || st.RecentBatches[9].BatchID != 2 {
		t.Fatalf("recent batches: %+v", st.RecentBatches)
	}
	if m := st.LastBatch.Merge; m == nil || m.FilesPrunedByPartition != 30 || m.FilesPrunedByStats != 6 || m.FilesScanned != 4 ||
		m.RowsUpdated != 70 || m.RowsDeleted != 5 || m.RowsInserted != 25 || m.Attempts != 2 {
		t.Errorf("merge figures of the last batch = %+v", st.LastBatch.Merge)
	}
	if *st.LastBatchID != 11 || *st.CommittedVersion != 21 || st.LastBatch.FilesWritten["day=1"] != 1 || st.ConsecutiveFailures != 0 {
		t.Errorf("status = %+v", st)
	}
	if st.Backlog.Files != 3 || st.Backlog.OldestPendingAge.Duration != 90*time.Second || len(st.SchemaChanges) != 1 ||
		st.SkippedFiles[0].File != "drop/x.json" || st.AutoCompaction.FilesRemoved != 40 {
		t.Errorf("status = %+v", st)
	}
}

func TestNextIngestJob_PacesByIntervalBacklogAndBackoff(t *testing.T) {
	now := time.Date(2026, 12, 1, 12, 0, 0, 0, time.UTC)
	finished := deltav1.RunRecord{JobName: "j", Result: deltav1.RunSucceeded,
		StartTime: &metav1.Time{Time: now.Add(-40 * time.Second)}, CompletionTime: &metav1.Time{Time: now.Add(-10 * time.Second)}}
	stalled := func(status metav1.ConditionStatus, reason string, gen int64) []metav1.Condition {
		return []metav1.Condition{{Type: deltav1.ConditionStalled, Status: status, Reason: reason, ObservedGeneration: gen}}
	}
	cases := []struct {
		name     string
		st       deltav1.StreamIngestStatus
		gen      int64
		wantDue  time.Time
		wantTrig string
		wantDone bool
	}{
		{"first Job", deltav1.StreamIngestStatus{}, 1, now, ingestTriggerStart, false},
		{"caught up waits for the interval from the last start", deltav1.StreamIngestStatus{RecentJobs: []deltav1.RunRecord{finished},
			Conditions: stalled(metav1.ConditionFalse, deltav1.ReasonCaughtUp, 1)}, 1, now.Add(20 * time.Second), ingestTriggerInterval, false},
		{"backlog starts at once", deltav1.StreamIngestStatus{RecentJobs: []deltav1.RunRecord{finished},
			Conditions: stalled(metav1.ConditionFalse, deltav1.ReasonBatchCommitted, 1)}, 1, now.Add(-10 * time.Second), ingestTriggerBacklog, false},
		{"third failure waits 40s", deltav1.StreamIngestStatus{RecentJobs: []deltav1.RunRecord{finished}, ConsecutiveFailures: 3,
			Conditions: stalled(metav1.ConditionFalse, deltav1.ReasonJobFailed, 1)}, 1, now.Add(30 * time.Second), ingestTriggerRetry, false},
		{"a bad file stops this generation", deltav1.StreamIngestStatus{RecentJobs: []deltav1.RunRecord{finished},
			Conditions: stalled(metav1.ConditionTrue, deltav1.ReasonBadFile, 1)}, 1, time.Time{}, "", true},
		{"a spec change resumes", deltav1.StreamIngestStatus{RecentJobs: []deltav1.RunRecord{finished},
			Conditions: stalled(metav1.ConditionTrue, deltav1.ReasonBadFile, 1)}, 2, now, ingestTriggerStart, false},
		{"completed stays completed", deltav1.StreamIngestStatus{RecentJobs: []deltav1.RunRecord{finished},
			Conditions: stalled(metav1.ConditionFalse, deltav1.ReasonCompleted, 1)}, 1, time.Time{}, "", true},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			si := stream("orders")
			si.Generation = c.gen
			si.Spec.Trigger = &deltav1.IngestTrigger{Interval: &metav1.Duration{Duration: time.Minute}}
			due, trig, done := nextIngestJob(si, &c.st, now)
			if !due.Equal(c.wantDue) || trig != c.wantTrig || done != c.wantDone {
				t.Errorf("nextIngestJob = %v %q %v, want %v %q %v", due, trig, done, c.wantDue, c.wantTrig, c.wantDone)
			}
		})
	}
	if got := ingestBackoff(20); got != ingestBackoffMax {
		t.Errorf("backoff after 20 failures = %v", got)
	}
}

func TestObserveIngest_CountsBatchesRowsBytesAndPublishesTheBacklog(t *testing.T) {
	si := stream("metrics-probe")
	in := &result.Ingest{LastBatch: 1, NumBatches: 2, Rows: 300, Batches: []result.IngestBatch{{ID: 0, Bytes: 1000, Rows: 100}, {ID: 1, Bytes: 2000, Rows: 200}}}
	res := ingestReport(result.Succeeded, "", in)
	res.DurationMs = 4000
	run := ingestRun(res, time.Now())
	observeIngest(si, run, outcome{})
	observeIngest(si, run, outcome{})
	if got := promtestutil.ToFloat64(ingestBatches.WithLabelValues("lake", "metrics-probe")); got != 4 {
		t.Errorf("batches_total = %v, want 4", got)
	}
	if got := promtestutil.ToFloat64(ingestRows.WithLabelValues("lake", "metrics-probe")); got != 600 {
		t.Errorf("rows_total = %v, want 600", got)
	}
	if got := promtestutil.ToFloat64(ingestBytes.WithLabelValues("lake", "metrics-probe")); got != 6000 {
		t.Errorf("bytes_total = %v, want 6000", got)
	}
	si.Status.Backlog = &deltav1.Backlog{Files: 7, Bytes: 700, OldestPendingAge: &metav1.Duration{Duration: time.Minute}}
	setStreamGauges(si)
	if f, a := promtestutil.ToFloat64(ingestBacklogFiles.WithLabelValues("lake", "metrics-probe")),
		promtestutil.ToFloat64(ingestOldestPending.WithLabelValues("lake", "metrics-probe")); f != 7 || a != 60 {
		t.Errorf("backlog gauges = %v files, %v s", f, a)
	}
	forgetStream("lake", "metrics-probe")
	if n := promtestutil.CollectAndCount(ingestBacklogFiles); n != 0 {
		t.Errorf("%d backlog series left after the stream was deleted", n)
	}
}
