package controllers

import (
	"fmt"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// A stream's conditions. Stalled holds the last outcome: True with BadFile, SchemaChangeNeeded, RunRefused,
// InvalidSpec or IngestNotAvailable when the stream stopped until someone changes the spec (its
// observedGeneration says which spec); False with BatchCommitted, CaughtUp, Completed, SourceUnreachable,
// JobFailed or Pending otherwise. Ready and Progressing are derived from it and from what the pass saw
// (a missing target, suspend, a pod that cannot start).

// Events of streams.
const (
	EventBatchesCommitted  = "BatchesCommitted"
	EventStreamCompleted   = "Completed"
	EventStreamStalled     = "Stalled"
	EventSourceUnreachable = "SourceUnreachable"
)

// setOutcome records a finished Job's outcome in the Stalled condition, for the generation it ran.
func setOutcome(conds conditionSetter, o outcome, gen int64) {
	status := metav1.ConditionFalse
	if o.Stop {
		status = metav1.ConditionTrue
	}
	conds.setGen(deltav1.ConditionStalled, status, o.Reason, o.Message, gen)
}

// setStreamConditions sets Ready and Progressing (and Stalled where the pass itself decides it).
func setStreamConditions(si *deltav1.StreamIngest, st *deltav1.StreamIngestStatus, conds conditionSetter, view streamView) {
	both := func(ready metav1.ConditionStatus, progressing metav1.ConditionStatus, reason, msg string) {
		conds.set(deltav1.ConditionReady, ready, reason, msg)
		conds.set(deltav1.ConditionProgressing, progressing, reason, msg)
	}
	stalled := apimeta.FindStatusCondition(st.Conditions, deltav1.ConditionStalled)
	running := ""
	if view.ActiveJob != "" {
		running = "; ingest Job " + view.ActiveJob + " is running"
	} else if view.Queued != nil {
		running = "; the next ingest Job is " + view.Queued.Message()
	} else if view.Yield != nil {
		running = "; " + view.Yield.Error()
	}
	switch {
	case view.TargetMissing != "":
		both(metav1.ConditionFalse, metav1.ConditionFalse, deltav1.ReasonTargetNotFound, view.TargetMissing+"; the stream starts when it exists")
		if stalled == nil {
			conds.set(deltav1.ConditionStalled, metav1.ConditionFalse, deltav1.ReasonTargetNotFound, view.TargetMissing)
		}
		return
	case view.Unavailable != "":
		both(metav1.ConditionFalse, metav1.ConditionFalse, deltav1.ReasonIngestNotAvailable, view.Unavailable)
		conds.set(deltav1.ConditionStalled, metav1.ConditionTrue, deltav1.ReasonIngestNotAvailable, view.Unavailable)
		return
	case stalled != nil && stalled.Status == metav1.ConditionTrue && stalled.ObservedGeneration == si.Generation:
		both(metav1.ConditionFalse, metav1.ConditionFalse, stalled.Reason, stalled.Message)
		return
	case si.Spec.Suspend:
		msg := "suspended: no new ingest Jobs start"
		if view.ActiveJob != "" {
			msg += "; ingest Job " + view.ActiveJob + " finishes its batches"
		}
		// Ready: the stream does what its spec asks (as a suspended policy does), so GitOps tools see it healthy.
		conds.set(deltav1.ConditionReady, metav1.ConditionTrue, deltav1.ReasonSuspended, msg)
		conds.set(deltav1.ConditionProgressing, metav1.ConditionFalse, deltav1.ReasonSuspended, msg)
		// A stop of an older spec no longer holds (suspending changed the spec): Stalled=True would keep the
		// stream Failed for kstatus while it does what it is asked. The last good outcome is kept.
		if stalled == nil || isStopped(stalled) && stalled.ObservedGeneration != si.Generation {
			conds.set(deltav1.ConditionStalled, metav1.ConditionFalse, deltav1.ReasonSuspended, msg)
		}
		return
	case view.Stuck != "":
		both(metav1.ConditionFalse, metav1.ConditionFalse, deltav1.ReasonJobFailed, view.Stuck)
		return
	case stalled == nil || isStopped(stalled) && stalled.ObservedGeneration != si.Generation:
		msg := "waiting for the first ingest Job's result" + running
		if stalled != nil {
			msg = "the spec changed; the stream resumes" + running
		}
		conds.set(deltav1.ConditionStalled, metav1.ConditionFalse, deltav1.ReasonPending, msg)
		conds.set(deltav1.ConditionReady, metav1.ConditionFalse, deltav1.ReasonPending, msg)
		conds.set(deltav1.ConditionProgressing, metav1.ConditionTrue, deltav1.ReasonPending, msg)
		return
	}
	msg := stalled.Message
	switch stalled.Reason {
	case deltav1.ReasonCompleted:
		both(metav1.ConditionTrue, metav1.ConditionFalse, deltav1.ReasonCompleted, msg)
	case deltav1.ReasonCaughtUp:
		conds.set(deltav1.ConditionReady, metav1.ConditionTrue, deltav1.ReasonCaughtUp, msg+running)
		conds.set(deltav1.ConditionProgressing, metav1.ConditionFalse, deltav1.ReasonCaughtUp, msg+running)
	case deltav1.ReasonBatchCommitted:
		both(metav1.ConditionTrue, metav1.ConditionTrue, deltav1.ReasonBatchCommitted, msg+running)
	case deltav1.ReasonSuspended: // resumed: no Job has reported since
		msg = "resumed: waiting for the next ingest Job's result" + running
		conds.set(deltav1.ConditionReady, metav1.ConditionFalse, deltav1.ReasonPending, msg)
		conds.set(deltav1.ConditionProgressing, metav1.ConditionTrue, deltav1.ReasonPending, msg)
	case deltav1.ReasonPending:
		conds.set(deltav1.ConditionReady, metav1.ConditionFalse, deltav1.ReasonPending, msg)
		conds.set(deltav1.ConditionProgressing, metav1.ConditionTrue, deltav1.ReasonPending, msg)
	default: // SourceUnreachable, JobFailed: retried after a backoff
		if !view.Next.IsZero() {
			msg += fmt.Sprintf("; %d failed in a row, the next Job starts at %s", st.ConsecutiveFailures, view.Next.UTC().Format(time.RFC3339))
		}
		both(metav1.ConditionFalse, metav1.ConditionFalse, stalled.Reason, msg+running)
	}
}

// queueIngestEvents explains a finished ingest Job. Committed batches are one Normal event per Job (at most
// one per interval); failures and stops are Warnings naming the cause.
func queueIngestEvents(evq *eventQueue, run *finishedRun, o outcome) {
	what := "Ingest Job " + run.Record.JobName
	switch o.Reason {
	case deltav1.ReasonCompleted:
		evq.normal(EventStreamCompleted, actionRecord, run.Job, what+" completed the stream: "+o.Message)
	case deltav1.ReasonBatchCommitted, deltav1.ReasonCaughtUp:
		if run.Result != nil && run.Result.Ingest != nil && run.Result.Ingest.NumBatches > 0 {
			evq.normal(EventBatchesCommitted, actionRecord, run.Job, what+": "+o.Message)
		}
	case deltav1.ReasonSourceUnreachable:
		evq.warning(EventSourceUnreachable, actionRecord, run.Job, what+" could not reach storage: "+o.Message)
	case deltav1.ReasonBadFile, deltav1.ReasonSchemaChangeNeeded, deltav1.ReasonRunRefused:
		evq.warning(EventStreamStalled, actionRecord, run.Job, what+" stopped the stream ("+o.Reason+"): "+o.Message)
	default:
		queueRunProblem(evq, run, what)
	}
}
