package controllers

import (
	"fmt"

	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// Event reasons. Events explain what the reconcilers did and saw; conditions carry the current state.
const (
	EventJobStarted        = "JobStarted"
	EventRunSucceeded      = "RunSucceeded"
	EventRunFailed         = "RunFailed"
	EventRunRefused        = "RunRefused"
	EventJobFailed         = "JobFailed"
	EventInvalidResult     = "InvalidResult"
	EventInspected         = "Inspected"
	EventPropertiesApplied = "PropertiesApplied"
	EventMissedSchedule    = "MissedSchedule"
	EventSkipped           = "Skipped"
	EventBelowTriggers     = "BelowTriggers"
	EventWaiting           = "Waiting"
	EventTargetNotFound    = "TargetNotFound"
	EventInvalidSpec       = "InvalidSpec"
	EventJobDeleted        = "JobDeleted"
	EventIngestUnavailable = "IngestNotAvailable"
	EventStartFailed       = "StartFailed"
	EventDuplicate         = "DuplicateLocation"
)

// Actions of events.k8s.io Events: what the controller did.
const (
	actionCreateJob = "CreateJob"
	actionDeleteJob = "DeleteJob"
	actionRecord    = "RecordResult"
	actionSchedule  = "Schedule"
	actionValidate  = "Validate"
)

// pendingEvent is an event waiting for the status write: events must not report state that was never
// persisted (a failed write is retried, and would report it twice).
type pendingEvent struct {
	eventType, reason, action, note string
	related                         runtime.Object
}

// eventQueue collects a reconcile's events and emits them after its status write succeeded.
type eventQueue []pendingEvent

func (q *eventQueue) normal(reason, action string, related runtime.Object, note string) {
	*q = append(*q, pendingEvent{eventType: "Normal", reason: reason, action: action, note: note, related: related})
}

func (q *eventQueue) warning(reason, action string, related runtime.Object, note string) {
	*q = append(*q, pendingEvent{eventType: "Warning", reason: reason, action: action, note: note, related: related})
}

// emit sends the queued events about regarding, one per (type, reason, action, related): notes of events
// that share those are joined into one. The events.k8s.io recorder treats such events as one series
// whatever their notes: the second would be sent as a PATCH of the first while the first's POST is still in
// flight (404, then a POST of the same name: 409), and its note would be lost. Notes are passed as
// arguments, never as format strings: they may contain '%' from worker messages.
func (q eventQueue) emit(rec events.EventRecorder, regarding runtime.Object) {
	for _, e := range q.coalesced() {
		rec.Eventf(regarding, e.related, e.eventType, e.reason, e.action, "%s", truncate(e.note, 1024))
	}
}

// coalesced joins the notes of events the recorder would take for one series, in order of first occurrence.
func (q eventQueue) coalesced() []pendingEvent {
	type key struct {
		eventType, reason, action string
		related                   runtime.Object
	}
	var out []pendingEvent
	index := map[key]int{}
	count := map[key]int{}
	for _, e := range q {
		k := key{e.eventType, e.reason, e.action, e.related}
		i, seen := index[k]
		if !seen {
			index[k] = len(out)
			out = append(out, e)
			count[k] = 1
			continue
		}
		count[k]++
		if len(out[i].note) < 1024 {
			out[i].note += "; " + e.note
		}
	}
	for k, i := range index {
		if n := count[k]; n > 1 {
			out[i].note = fmt.Sprintf("%d× %s", n, out[i].note)
		}
	}
	return out
}

// queueRunProblem explains a refused or failed run of any kind: what names the run ("Maintenance Job x on
// table y"). A refusal will not go away by retrying; a failure says whether the Job failed without a result or
// its result could not be read.
func queueRunProblem(evq *eventQueue, run *finishedRun, what string) {
	rec := &run.Record
	if rec.Result == deltav1.RunRefused {
		evq.warning(EventRunRefused, actionRecord, run.Job, what+" was refused: "+rec.Message)
		return
	}
	reason := EventRunFailed
	switch run.Problem {
	case deltav1.ReasonJobFailed:
		reason = EventJobFailed
	case deltav1.ReasonInvalidResult:
		reason = EventInvalidResult
	case deltav1.ReasonStartFailed:
		reason = EventStartFailed
	}
	evq.warning(reason, actionRecord, run.Job, what+" failed: "+rec.Message)
}
