package controllers

import (
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
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

// emit sends the queued events about regarding. Notes are passed as arguments, never as format strings:
// they may contain '%' from worker messages.
func (q eventQueue) emit(rec events.EventRecorder, regarding runtime.Object) {
	for _, e := range q {
		rec.Eventf(regarding, e.related, e.eventType, e.reason, e.action, "%s", truncate(e.note, 1024))
	}
}
