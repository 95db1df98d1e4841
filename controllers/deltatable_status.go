package controllers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// Status caps from the CRD: a status that exceeds them is rejected by the API server.
const (
	maxTableRuns       = 10
	maxPartitionCols   = 32
	maxClusteringCols  = 4
	maxProtocolFeature = 64
)

// Inspect back-off: a failing table is retried after 1m, 2m, 4m … at most 1h, counted by
// status.failedInspections so it survives restarts; a spec change retries at once.
const (
	inspectBackoffBase = time.Minute
	inspectBackoffMax  = time.Hour
)

func inspectBackoff(failures int32) time.Duration {
	if failures <= 0 {
		return 0
	}
	d := inspectBackoffBase
	for i := int32(1); i < failures && d < inspectBackoffMax; i++ {
		d *= 2
	}
	return min(d, inspectBackoffMax)
}

// mergeRuns merges finished runs into a newest-first history capped at limit. A run is new when its Job is
// not in the history yet and it is recent enough to make the cut; only new runs change conditions, events and
// metrics, so merging the same Jobs again (a retried reconcile) is a no-op.
func mergeRuns(history []deltav1.RunRecord, runs []finishedRun, limit int) (merged []deltav1.RunRecord, added []*finishedRun) {
	known := map[string]bool{}
	for _, r := range history {
		if r.JobName != "" {
			known[r.JobName] = true
		}
	}
	merged = slices.Clone(history)
	for i := range runs {
		if !known[runs[i].Record.JobName] {
			merged = append(merged, runs[i].Record)
		}
	}
	sortRecords(merged)
	if len(merged) > limit {
		merged = merged[:limit]
	}
	kept := map[string]bool{}
	for _, r := range merged {
		kept[r.JobName] = true
	}
	for i := range runs {
		if name := runs[i].Record.JobName; !known[name] && kept[name] {
			added = append(added, &runs[i])
		}
	}
	// Oldest first: later runs' facts and conditions win.
	slices.SortStableFunc(added, func(a, b *finishedRun) int { return a.Record.When().Compare(b.Record.When()) })
	return merged, added
}

// sortRecords orders records newest first, by name for equal times (deterministic status).
func sortRecords(recs []deltav1.RunRecord) {
	slices.SortStableFunc(recs, func(a, b deltav1.RunRecord) int {
		if c := b.When().Compare(a.When()); c != 0 {
			return c
		}
		return strings.Compare(a.JobName, b.JobName)
	})
}

// lastInspectAttempt is when the newest recorded inspect run ended (or the last inspection, if the history
// has rolled over).
func lastInspectAttempt(st *deltav1.DeltaTableStatus) time.Time {
	for _, r := range st.RecentRuns {
		if r.HasOperation(deltav1.OperationInspect) && r.IsFinished() {
			return r.When()
		}
	}
	if st.LastInspectedTime != nil {
		return st.LastInspectedTime.Time
	}
	return time.Time{}
}

// inspectPlan is when the next inspect Job is due, why, and the slot key that names it. The key changes
// whenever a run is recorded, so each attempt gets a fresh Job name, while a retried reconcile (after a
// failed status write) finds the Job it already created.
type inspectPlan struct {
	Due     time.Time
	Trigger string
	Key     string
}

// Inspect triggers.
const (
	triggerCreated     = "Created"
	triggerSpecChanged = "SpecChanged"
	triggerRetry       = "Retry"
	triggerInterval    = "Interval"
)

// spreadKey identifies a table for the spreading of its inspections: its UID, else namespace/name.
func spreadKey(t *deltav1.DeltaTable) string {
	if t.UID != "" {
		return string(t.UID)
	}
	return t.Namespace + "/" + t.Name
}

func planInspect(t *deltav1.DeltaTable, now time.Time) inspectPlan {
	st := &t.Status
	last := lastInspectAttempt(st)
	reach := meta.FindStatusCondition(st.Conditions, deltav1.ConditionReachable)
	var p inspectPlan
	switch {
	case last.IsZero():
		p = inspectPlan{Due: now, Trigger: triggerCreated}
	case reach == nil || reach.ObservedGeneration != t.Generation:
		p = inspectPlan{Due: now, Trigger: triggerSpecChanged}
	case st.FailedInspections > 0:
		backoff := jitteredBackoff(inspectBackoff(st.FailedInspections), spreadKey(t), st.FailedInspections)
		p = inspectPlan{Due: last.Add(backoff), Trigger: triggerRetry}
	default:
		// On the table's phase of the interval, at least half an interval after the last inspection: the
		// gap is one interval in the steady state and between half and one and a half after a creation,
		// retry or spec change (schedule.go, Spreading).
		from := last
		if st.LastInspectedTime != nil {
			from = st.LastInspectedTime.Time
		}
		every := t.InspectEvery()
		p = inspectPlan{Due: phaseDue(from.Add(every/2), every, spreadKey(t)), Trigger: triggerInterval}
	}
	p.Key = fmt.Sprintf("g%d/f%d/%d", t.Generation, st.FailedInspections, last.UnixNano())
	return p
}

// applyInspect folds one finished inspect run into the status.
func applyInspect(st *deltav1.DeltaTableStatus, conds conditionSetter, run *finishedRun) {
	gen, res := run.Generation, run.Result
	set := func(condType string, status metav1.ConditionStatus, reason, msg string) {
		conds.setGen(condType, status, reason, msg, gen)
	}
	if res != nil && res.Table != nil && res.Outcome != result.Failed {
		setFacts(st, res.Table, false)
		st.LastInspectedTime = run.Record.CompletionTime
	}
	switch {
	case run.Problem != "":
		st.FailedInspections++
		set(deltav1.ConditionReachable, metav1.ConditionUnknown, run.Problem, run.Record.Message)
	case res.Outcome == result.Succeeded || res.Outcome == result.NothingToDo:
		st.FailedInspections = 0
		set(deltav1.ConditionReachable, metav1.ConditionTrue, deltav1.ReasonInspected, "inspect Job "+run.Record.JobName+" read the table")
		set(deltav1.ConditionPropertiesApplied, metav1.ConditionTrue, deltav1.ReasonPropertiesApplied, appliedMessage(res))
	case res.Reason == result.ReasonTableNotFound:
		// Not a refusal to write: there is nothing to read. The location is wrong or the table not created yet.
		st.FailedInspections++
		set(deltav1.ConditionReachable, metav1.ConditionFalse, deltav1.ReasonTableNotFound,
			"no Delta table at spec.location (no _delta_log); create the table or correct the location: "+run.Record.Message)
	case res.Outcome == result.Refused:
		st.FailedInspections++
		reason := deltav1.ReasonRunRefused
		if res.Reason == result.ReasonUnsupportedFeature {
			reason = deltav1.ReasonUnsupportedTable
		}
		set(deltav1.ConditionReachable, metav1.ConditionTrue, deltav1.ReasonInspected, "the worker read the table")
		set(deltav1.ConditionPropertiesApplied, metav1.ConditionFalse, reason, "the worker refused: "+run.Record.Message)
	case res.Reason == result.ReasonConflict:
		st.FailedInspections++
		set(deltav1.ConditionReachable, metav1.ConditionTrue, deltav1.ReasonInspected, "the worker read the table")
		set(deltav1.ConditionPropertiesApplied, metav1.ConditionFalse, deltav1.ReasonPropertiesPending,
			"committing the declared properties lost to concurrent writers; retrying: "+run.Record.Message)
	default:
		st.FailedInspections++
		set(deltav1.ConditionReachable, metav1.ConditionFalse, deltav1.ReasonUnreachable, workerReason(res)+run.Record.Message)
	}
}

// applyMaintenance folds one finished maintenance run into the status: the MaintenanceSucceeded condition,
// and the table's facts after the run when the worker reported them.
func applyMaintenance(st *deltav1.DeltaTableStatus, conds conditionSetter, run *finishedRun) {
	rec := &run.Record
	by := "maintenance Job " + rec.JobName
	if p := run.Job.Annotations[deltav1.AnnotationPolicy]; p != "" {
		by += " (policy " + p + ")"
	}
	switch rec.Result {
	case deltav1.RunSucceeded, deltav1.RunNothingToDo:
		conds.set(deltav1.ConditionMaintenanceSucceeded, metav1.ConditionTrue, deltav1.ReasonRunSucceeded, by+": "+rec.Message)
	case deltav1.RunRefused:
		conds.set(deltav1.ConditionMaintenanceSucceeded, metav1.ConditionFalse, deltav1.ReasonRunRefused, by+" was refused: "+rec.Message)
	default:
		reason := deltav1.ReasonRunFailed
		if run.Problem != "" {
			reason = run.Problem
		}
		conds.set(deltav1.ConditionMaintenanceSucceeded, metav1.ConditionFalse, reason, by+" failed: "+rec.Message)
	}
	if res := run.Result; res != nil && res.Table != nil && res.Outcome != result.Failed {
		setFacts(st, res.Table, true)
	}
}

// setFacts copies the worker's table facts, within the CRD's caps. keepQuality keeps the previous quality
// when the report has none (maintenance results drop it to fit the termination message).
func setFacts(st *deltav1.DeltaTableStatus, t *result.Table, keepQuality bool) {
	st.Version = &t.Version
	st.NumFiles = t.NumFiles
	st.SizeBytes = t.SizeBytes
	st.Size = humanBytes(t.SizeBytes)
	st.NumSmallFiles = t.NumSmallFiles
	st.UnclusteredBytes = t.UnclusteredBytes
	st.PartitionColumns = capped(t.PartitionColumns, maxPartitionCols)
	st.ClusteringColumns = capped(t.ClusteringColumns, maxClusteringCols)
	st.Protocol = &deltav1.ProtocolStatus{
		MinReaderVersion: t.MinReaderVersion,
		MinWriterVersion: t.MinWriterVersion,
		ReaderFeatures:   capped(t.ReaderFeatures, maxProtocolFeature),
		WriterFeatures:   capped(t.WriterFeatures, maxProtocolFeature),
	}
	if len(t.Quality) == 0 && keepQuality {
		return
	}
	st.Clustering = nil
	for _, q := range capped(t.Quality, maxClusteringCols) {
		st.Clustering = append(st.Clustering, deltav1.ColumnQuality{
			Column:                q.Column,
			Status:                q.Status,
			NumFiles:              q.NumFiles,
			NumFilesWithStats:     q.NumFilesWithStats,
			AvgCoveragePct:        q.AvgCoveragePct,
			AvgDepth:              q.AvgDepth,
			MaxDepth:              q.MaxDepth,
			OverlapRatio:          q.OverlapRatio,
			SkippingEffectiveness: q.SkippingEffectiveness,
		})
	}
}

func capped[T any](s []T, n int) []T {
	if len(s) > n {
		s = s[:n]
	}
	return slices.Clone(s)
}

func appliedMessage(res *result.Result) string {
	if msg, ok := committedDeclaration(res); ok {
		return msg
	}
	return "the table matches the declared properties and clustering columns"
}

// committedDeclaration says what the inspect run committed of the declaration, if anything.
func committedDeclaration(res *result.Result) (string, bool) {
	a := res.Applied
	if a == nil || (len(a.Properties) == 0 && len(a.ClusteringColumns) == 0) {
		return "", false
	}
	msg := "committed"
	if len(a.Properties) > 0 {
		msg += " " + strings.Join(a.Properties, ", ")
	}
	if len(a.ClusteringColumns) > 0 {
		msg += " clustering columns " + strings.Join(a.ClusteringColumns, ", ")
	}
	if a.Version != nil {
		msg += fmt.Sprintf(" at version %d", *a.Version)
	}
	return msg, true
}

func workerReason(res *result.Result) string {
	if res.Reason == "" {
		return ""
	}
	return res.Reason + ": "
}

// tableView is what the reconciler saw besides the status: it shapes the Ready condition.
type tableView struct {
	ActiveJob     string  // the live Job on the table, any owner
	ActiveInspect bool    // ActiveJob is this table's inspect Job
	Waiting       string  // why a due inspect Job was not started
	Queued        *Queued // the due inspect Job waits for admission
	Stuck         string  // why the active Job's pod cannot start
	SpecError     string  // a spec the reconciler cannot turn into a Job
	Duplicate     string  // another DeltaTable owns the location: why this one runs nothing
	NextInspect   time.Time
}

// setReady derives the Ready condition from the other conditions and what the reconciler saw.
func setReady(t *deltav1.DeltaTable, st *deltav1.DeltaTableStatus, conds conditionSetter, v tableView) {
	ready := func(status metav1.ConditionStatus, reason, msg string) {
		conds.set(deltav1.ConditionReady, status, reason, msg)
	}
	reach := meta.FindStatusCondition(st.Conditions, deltav1.ConditionReachable)
	props := meta.FindStatusCondition(st.Conditions, deltav1.ConditionPropertiesApplied)
	retry := ""
	if st.FailedInspections > 0 && !v.NextInspect.IsZero() {
		retry = fmt.Sprintf(" (%d failed attempts; next at %s)", st.FailedInspections, v.NextInspect.UTC().Format(time.RFC3339))
	}
	progress := ""
	switch {
	case v.Stuck != "":
		progress = "; " + v.Stuck
	case v.ActiveInspect:
		progress = "; inspect Job " + v.ActiveJob + " is running"
	case v.Waiting != "":
		progress = "; " + v.Waiting
	}
	switch {
	case v.SpecError != "":
		ready(metav1.ConditionFalse, deltav1.ReasonInvalidSpec, v.SpecError)
	case v.Duplicate != "":
		ready(metav1.ConditionFalse, deltav1.ReasonDuplicateLocation, v.Duplicate)
	case reach == nil:
		reason, msg := deltav1.ReasonPending, "waiting for the first inspect Job"
		if v.ActiveInspect {
			// The message names the running Job once: progress would repeat it, unless it says why it is stuck.
			reason, msg = deltav1.ReasonInspecting, "the first inspect Job "+v.ActiveJob+" is running"
			if v.Stuck == "" {
				progress = ""
			}
		}
		ready(metav1.ConditionFalse, reason, msg+progress)
	case reach.Status != metav1.ConditionTrue:
		ready(metav1.ConditionFalse, reach.Reason, reach.Message+retry+progress)
	case props != nil && props.Status != metav1.ConditionTrue:
		ready(metav1.ConditionFalse, props.Reason, props.Message+retry+progress)
	case reach.ObservedGeneration != t.Generation:
		ready(metav1.ConditionFalse, deltav1.ReasonPropertiesPending,
			fmt.Sprintf("spec generation %d is not applied yet%s", t.Generation, progress))
	default:
		msg := factsMessage(st)
		if v.Stuck != "" {
			msg += "; " + v.Stuck // a maintenance Job that does not start: the table is fine, the Job is not
		}
		ready(metav1.ConditionTrue, deltav1.ReasonInspected, msg)
	}
}

// factsMessage is the Ready message of a healthy table: what `kubectl get dt -o wide` shows.
func factsMessage(st *deltav1.DeltaTableStatus) string {
	if st.Version == nil {
		return "inspected"
	}
	return fmt.Sprintf("version %d: %d files (%d small), %s", *st.Version, st.NumFiles, st.NumSmallFiles, humanBytes(st.SizeBytes))
}
