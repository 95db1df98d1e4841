package controllers

import (
	"strings"
	"testing"

	batchv1 "k8s.io/api/batch/v1"
)

func TestEventQueue_CoalescesWhatTheRecorderWouldTakeForOneSeries(t *testing.T) {
	job := &batchv1.Job{}
	var q eventQueue
	q.normal(EventWaiting, actionSchedule, nil, "table a is busy")
	q.normal(EventJobStarted, actionCreateJob, job, "started b")
	q.normal(EventWaiting, actionSchedule, nil, "table c is busy")
	q.warning(EventWaiting, actionSchedule, nil, "a warning is another series")
	got := q.coalesced()
	if len(got) != 3 {
		t.Fatalf("coalesced into %d events, want 3: %+v", len(got), got)
	}
	if got[0].note != "2× table a is busy; table c is busy" || got[1].related != job || got[2].eventType != "Warning" {
		t.Errorf("coalesced = %+v", got)
	}
	for i := range 200 {
		q.normal(EventMissedSchedule, actionSchedule, nil, strings.Repeat("x", 40)+string(rune('a'+i%26)))
	}
	for _, e := range q.coalesced() {
		if e.reason == EventMissedSchedule && (len(e.note) > 1200 || !strings.HasPrefix(e.note, "200× ")) {
			t.Errorf("200 notes joined into %d characters: %.60q", len(e.note), e.note)
		}
	}
}
