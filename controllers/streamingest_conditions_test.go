package controllers

import (
	"strings"
	"testing"
	"time"

	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// A stream stopped by a bad file and then suspended does what its spec asks: kstatus must not read it as
// Failed (Stalled=True) while it is suspended, and resuming it starts a Job and says it waits for its result.
func TestStreamConditions_SuspendingAStalledStreamClearsStalledAndResumingRetries(t *testing.T) {
	now := time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC)
	si := stream("orders")
	st := &deltav1.StreamIngestStatus{RecentJobs: []deltav1.RunRecord{{JobName: "orders-ingest-3", Result: deltav1.RunFailed,
		StartTime: &metav1.Time{Time: now.Add(-time.Hour)}, CompletionTime: &metav1.Time{Time: now.Add(-59 * time.Minute)}}}}
	pass := func(gen int64) {
		si.Generation = gen
		conds := conditionSetter{conds: &st.Conditions, generation: gen, now: now}
		setStreamConditions(si, st, conds, streamView{})
	}
	want := func(when, condType string, status metav1.ConditionStatus, reason, msgHas string) {
		t.Helper()
		c := apimeta.FindStatusCondition(st.Conditions, condType)
		if c == nil || c.Status != status || c.Reason != reason || !strings.Contains(c.Message, msgHas) {
			t.Errorf("%s: %s = %+v, want %s/%s containing %q", when, condType, c, status, reason, msgHas)
		}
	}

	setOutcome(conditionSetter{conds: &st.Conditions, generation: 1, now: now},
		outcome{Reason: deltav1.ReasonBadFile, Message: "drop/a.csv row 7: not a number", Stop: true}, 1)
	pass(1)
	want("stopped", deltav1.ConditionStalled, metav1.ConditionTrue, deltav1.ReasonBadFile, "drop/a.csv")
	want("stopped", deltav1.ConditionReady, metav1.ConditionFalse, deltav1.ReasonBadFile, "drop/a.csv")

	si.Spec.Suspend = true
	pass(2)
	want("suspended", deltav1.ConditionStalled, metav1.ConditionFalse, deltav1.ReasonSuspended, "suspended")
	want("suspended", deltav1.ConditionReady, metav1.ConditionTrue, deltav1.ReasonSuspended, "suspended")
	if _, _, done := nextIngestJob(si, st, now); done {
		t.Error("suspended: nextIngestJob says the stream is done; the suspend check, not the outcome, must hold it")
	}

	si.Spec.Suspend = false
	pass(3)
	want("resumed", deltav1.ConditionReady, metav1.ConditionFalse, deltav1.ReasonPending, "resumed: waiting for the next ingest Job")
	want("resumed", deltav1.ConditionProgressing, metav1.ConditionTrue, deltav1.ReasonPending, "resumed")
	if due, _, done := nextIngestJob(si, st, now); done || due.After(now) {
		t.Errorf("resumed: next Job due %v (done %v), want now", due, done)
	}
}
