package controllers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// How a stream's Jobs are kept in status and spaced after failures.
const (
	maxStreamJobs     = 5  // status.recentJobs
	maxStreamBatches  = 10 // status.recentBatches
	maxSkippedFiles   = 10 // status.skippedFiles
	maxSchemaChanges  = 64 // status.schemaChanges
	keepIngestJobs    = 3  // finished ingest Jobs kept for `kubectl logs`
	ingestBackoffBase = 10 * time.Second
	ingestBackoffMax  = 10 * time.Minute
)

// Triggers of ingest Jobs (the deltakeeper.io/trigger annotation and RunRecord.Reason of running Jobs).
const (
	ingestTriggerStart        = "Start"        // the stream's first Job, or the first after a spec change
	ingestTriggerInterval     = "Interval"     // the next interval came
	ingestTriggerBacklog      = "Backlog"      // the last Job ran out of time budget with files pending
	ingestTriggerRetry        = "Retry"        // after a failed Job's backoff
	ingestTriggerAvailableNow = "AvailableNow" // an availableNow drain
)

// outcome is what a finished ingest Job means for the stream: the reason of its conditions, whether the
// stream stops until someone changes the spec, and whether the next Job backs off.
type outcome struct {
	Reason  string
	Message string
	Stop    bool
	Retry   bool
}

// classifyIngest reads a finished ingest Job.
func classifyIngest(run *finishedRun, availableNow bool) outcome {
	res := run.Result
	if res == nil {
		reason := deltav1.ReasonJobFailed
		if run.Problem == deltav1.ReasonStartFailed {
			reason = run.Problem
		}
		return outcome{Reason: reason, Message: run.Record.Message, Retry: true}
	}
	in := res.Ingest
	switch res.Outcome {
	case result.Succeeded, result.NothingToDo:
		switch {
		case availableNow:
			return outcome{Reason: deltav1.ReasonCompleted, Message: "processed everything available: " + ingestSummary(in)}
		case in != nil && in.Backlog != nil && in.Backlog.Files > 0:
			return outcome{Reason: deltav1.ReasonBatchCommitted, Message: ingestSummary(in)}
		}
		return outcome{Reason: deltav1.ReasonCaughtUp, Message: "caught up: " + ingestSummary(in)}
	case result.Refused:
		switch res.Reason {
		case result.ReasonBadFile:
			msg := "a bad source file stopped the stream; nothing of its batch was committed"
			if in != nil && in.BadFile != nil {
				msg = fmt.Sprintf("bad source file %s", in.BadFile.File)
				if in.BadFile.Row > 0 {
					msg += fmt.Sprintf(" (row %d", in.BadFile.Row)
					if in.BadFile.Column != "" {
						msg += ", column " + in.BadFile.Column
					}
					msg += ")"
				}
				msg += " stopped the stream; nothing of its batch was committed"
			}
			return outcome{Reason: deltav1.ReasonBadFile, Stop: true, Message: msg + ": " + res.Message +
				"; fix or remove the file, or set onBadFile: skip, then change the spec to resume"}
		case result.ReasonSchemaChange:
			cols := "new columns"
			if in != nil && len(in.NewColumns) > 0 {
				cols = "new columns " + strings.Join(in.NewColumns, ", ")
			}
			return outcome{Reason: deltav1.ReasonSchemaChangeNeeded, Stop: true, Message: "the source has " + cols +
				" that the table lacks and schemaEvolution is failOnNewColumns; set schemaEvolution: addNewColumns, rescue or none to resume"}
		}
		return outcome{Reason: deltav1.ReasonRunRefused, Stop: true, Message: "the worker refused (" + res.Reason + "): " + res.Message +
			"; retrying cannot help: fix the table or the spec, then change the spec to resume"}
	}
	if res.Reason == result.ReasonUnreachable {
		return outcome{Reason: deltav1.ReasonSourceUnreachable, Retry: true, Message: run.Record.Message}
	}
	return outcome{Reason: deltav1.ReasonJobFailed, Retry: true, Message: run.Record.Message}
}

// ingestSummary is a one-line account of an ingest run.
func ingestSummary(in *result.Ingest) string {
	if in == nil {
		return "no ingest report"
	}
	s := fmt.Sprintf("%d batches, %d rows this run, last batch %d", in.NumBatches, in.Rows, in.LastBatch)
	if b := in.Backlog; b != nil {
		s += fmt.Sprintf("; backlog %d files (%s)", b.Files, humanBytes(b.Bytes))
	}
	return s
}

// applyIngestRun folds a finished Job's report into the status: batches, backlog, schema changes, skipped
// files, auto compaction and the failure count. Batches are keyed by id, so folding a report twice (a lost
// status write) changes nothing.
func applyIngestRun(st *deltav1.StreamIngestStatus, run *finishedRun, o outcome) {
	switch {
	case o.Retry:
		st.ConsecutiveFailures++
	case !o.Stop:
		st.ConsecutiveFailures = 0
	}
	res := run.Result
	if res == nil || res.Ingest == nil {
		return
	}
	in := res.Ingest
	commit := run.Record.CompletionTime
	for _, b := range in.Batches {
		rec := deltav1.BatchRecord{BatchID: b.ID, Files: int64(b.Files), Bytes: b.Bytes, Rows: b.Rows, Version: ptrInt64(b.Version),
			MeanFileBytes: b.MeanFileBytes, CommitTime: commit, JobName: run.Record.JobName}
		if len(b.Written) > 0 {
			rec.FilesWritten = make(map[string]int64, len(b.Written))
			for k, v := range b.Written {
				rec.FilesWritten[k] = int64(v)
			}
		}
		if m := b.Merge; m != nil {
			rec.Merge = &deltav1.BatchMerge{FilesTotal: int64(m.FilesTotal), FilesPrunedByPartition: int64(m.FilesPrunedByPartition),
				FilesPrunedByStats: int64(m.FilesPrunedByStats), FilesScanned: int64(m.FilesScanned), FilesTouched: int64(m.FilesTouched),
				RowsUpdated: m.RowsUpdated, RowsDeleted: m.RowsDeleted, RowsInserted: m.RowsInserted, Attempts: int32(m.Attempts)}
		}
		st.RecentBatches = upsertBatch(st.RecentBatches, rec)
	}
	if len(st.RecentBatches) > 0 {
		last := st.RecentBatches[0]
		st.LastBatch = &last
	}
	if in.LastBatch >= 0 && (st.LastBatchID == nil || in.LastBatch >= *st.LastBatchID) {
		st.LastBatchID = ptrInt64(in.LastBatch)
		switch {
		case st.LastBatch != nil && st.LastBatch.BatchID == in.LastBatch && st.LastBatch.Version != nil:
			st.CommittedVersion = ptrInt64(*st.LastBatch.Version)
		case res.Version != nil && st.CommittedVersion == nil:
			st.CommittedVersion = ptrInt64(*res.Version)
		}
	}
	if b := in.Backlog; b != nil {
		st.Backlog = &deltav1.Backlog{Files: b.Files, Bytes: b.Bytes}
		if b.OldestAgeSec > 0 {
			st.Backlog.OldestPendingAge = &metav1.Duration{Duration: time.Duration(b.OldestAgeSec) * time.Second}
		}
	}
	for _, c := range in.SchemaChanges {
		if !slices.Contains(st.SchemaChanges, c) && len(st.SchemaChanges) < maxSchemaChanges {
			st.SchemaChanges = append(st.SchemaChanges, c)
		}
	}
	if in.SkippedCount > 0 {
		st.SkippedCount += int64(in.SkippedCount)
		for _, f := range in.Skipped {
			st.SkippedFiles = append(st.SkippedFiles, deltav1.SkippedFile{File: truncate(f.File, 1024), Reason: sanitize(f.Reason, 512)})
		}
		if n := len(st.SkippedFiles); n > maxSkippedFiles {
			st.SkippedFiles = st.SkippedFiles[n-maxSkippedFiles:]
		}
	}
	st.RescuedRows += in.Rescued
	for _, op := range in.AutoCompaction {
		if op.Outcome != result.Succeeded {
			continue
		}
		if st.AutoCompaction == nil {
			st.AutoCompaction = &deltav1.AutoCompactionStatus{}
		}
		ac := st.AutoCompaction
		ac.Runs++
		ac.FilesRemoved, ac.FilesAdded, ac.Version = op.FilesRemoved, op.FilesAdded, op.Version
	}
}

// upsertBatch puts rec into the newest-first batch list, replacing a record with its id.
func upsertBatch(batches []deltav1.BatchRecord, rec deltav1.BatchRecord) []deltav1.BatchRecord {
	out := slices.DeleteFunc(slices.Clone(batches), func(b deltav1.BatchRecord) bool { return b.BatchID == rec.BatchID })
	out = append(out, rec)
	slices.SortStableFunc(out, func(a, b deltav1.BatchRecord) int { return int(b.BatchID - a.BatchID) })
	if len(out) > maxStreamBatches {
		out = out[:maxStreamBatches]
	}
	return out
}

func ptrInt64(v int64) *int64 { return &v }

// ingestBackoff is the wait before the next Job after n failures in a row: 10s, 20s, 40s, … at most 10m.
func ingestBackoff(n int32) time.Duration {
	d := ingestBackoffBase
	for i := int32(1); i < n && d < ingestBackoffMax; i++ {
		d *= 2
	}
	return min(d, ingestBackoffMax)
}

// nextIngestJob decides when the stream's next Job starts, and why, from its last finished Job and its
// last outcome (the Stalled condition). done is true when no Job is due at all: the stream stopped for
// this generation or completed its availableNow drain.
func nextIngestJob(si *deltav1.StreamIngest, st *deltav1.StreamIngestStatus, now time.Time) (due time.Time, trigger string, done bool) {
	first := ingestTriggerStart
	if si.IsAvailableNow() {
		first = ingestTriggerAvailableNow
	}
	last := apimeta.FindStatusCondition(st.Conditions, deltav1.ConditionStalled)
	if isStopped(last) {
		if last.ObservedGeneration == si.Generation {
			return time.Time{}, "", true
		}
		return now, first, false // the spec changed: try again at once
	}
	if last == nil || len(st.RecentJobs) == 0 {
		return now, first, false
	}
	prev := st.RecentJobs[0]
	switch {
	case st.ConsecutiveFailures > 0:
		return prev.When().Add(ingestBackoff(st.ConsecutiveFailures)), ingestTriggerRetry, false
	case si.IsAvailableNow():
		return now, first, false // an interval stream became availableNow
	case last.Reason == deltav1.ReasonBatchCommitted:
		return prev.When(), ingestTriggerBacklog, false
	}
	start := prev.When()
	if prev.StartTime != nil {
		start = prev.StartTime.Time
	}
	return start.Add(si.Interval()), ingestTriggerInterval, false
}

// isStopped reports whether the last outcome ends the stream for its generation: stalled, or completed.
func isStopped(c *metav1.Condition) bool {
	return c != nil && (c.Status == metav1.ConditionTrue || c.Reason == deltav1.ReasonCompleted)
}
