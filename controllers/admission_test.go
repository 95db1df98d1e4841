package controllers

import (
	"errors"
	"fmt"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

var admissionT0 = time.Date(2026, 5, 21, 12, 0, 0, 0, time.UTC)

func ask(ns, name string, kind JobKind, due time.Duration, urgent bool) AdmissionRequest {
	return AdmissionRequest{Job: types.NamespacedName{Namespace: ns, Name: name}, Kind: kind, Pods: 1,
		Due: admissionT0.Add(due), Urgent: urgent, Owner: Owner{Kind: "DeltaTable", Key: types.NamespacedName{Namespace: ns, Name: name}}}
}

// workerJob is a live worker Job as the informer shows it.
func workerJob(ns, name string, pods int32, done bool) *batchv1.Job {
	j := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: name, Labels: map[string]string{
			labelAppManagedBy: appManagedBy, deltav1.LabelOperation: string(JobInspect)}},
		Spec: batchv1.JobSpec{Parallelism: ptr.To(pods)},
	}
	if done {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}
	return j
}

func mustAdmit(t *testing.T, a *Admission, req AdmissionRequest) *Ticket {
	t.Helper()
	ticket, err := a.Admit(req)
	if err != nil {
		t.Fatalf("%s: %v, want admitted", req.Job.Name, err)
	}
	return ticket
}

func mustQueue(t *testing.T, a *Admission, req AdmissionRequest, position, length int) {
	t.Helper()
	_, err := a.Admit(req)
	var q *Queued
	if !errors.As(err, &q) {
		t.Fatalf("%s: %v, want queued at %d of %d", req.Job.Name, err, position, length)
	}
	if q.Position != position || q.Length != length {
		t.Fatalf("%s: %s, want position %d of %d", req.Job.Name, q.Message(), position, length)
	}
}

func TestAdmission_CapHoldsAndTheOldestDueGoesNext(t *testing.T) {
	a := NewAdmission(AdmissionLimits{MaxRunning: 2}, clocktesting.NewFakeClock(admissionT0))
	mustAdmit(t, a, ask("a", "j1", JobInspect, 0, false))
	mustAdmit(t, a, ask("a", "j2", JobInspect, 0, false))
	a.observe(workerJob("a", "j1", 1, false))
	a.observe(workerJob("a", "j2", 1, false))
	// Three more, asking in the wrong order: the queue orders them by due time.
	mustQueue(t, a, ask("a", "late", JobInspect, 3*time.Minute, false), 1, 1)
	mustQueue(t, a, ask("a", "early", JobInspect, time.Minute, false), 1, 2)
	mustQueue(t, a, ask("a", "middle", JobInspect, 2*time.Minute, false), 2, 3)
	mustQueue(t, a, ask("a", "late", JobInspect, 3*time.Minute, false), 3, 3)
	if running, waiting := a.Stats(); running != 2 || waiting != 3 {
		t.Fatalf("stats = %d running, %d waiting; want 2, 3", running, waiting)
	}
	a.observe(workerJob("a", "j1", 1, true))                                  // j1 finished: one slot frees
	mustQueue(t, a, ask("a", "late", JobInspect, 3*time.Minute, false), 3, 3) // not its turn
	mustQueue(t, a, ask("a", "middle", JobInspect, 2*time.Minute, false), 2, 3)
	mustAdmit(t, a, ask("a", "early", JobInspect, time.Minute, false))
	mustQueue(t, a, ask("a", "middle", JobInspect, 2*time.Minute, false), 1, 2) // the slot is taken
}

func TestAdmission_UrgentRunsAreNotStarvedByInspections(t *testing.T) {
	a := NewAdmission(AdmissionLimits{MaxRunning: 5}, clocktesting.NewFakeClock(admissionT0))
	for i := range 4 { // routine runs may fill four fifths of the cap
		mustAdmit(t, a, ask("a", fmt.Sprintf("inspect-%d", i), JobInspect, 0, false))
	}
	mustQueue(t, a, ask("a", "inspect-old", JobInspect, -time.Hour, false), 1, 1)
	mustQueue(t, a, ask("a", "inspect-recent", JobInspect, -time.Minute, false), 2, 2)
	// An ingest trigger due now counts ten minutes earlier: ahead of the recent inspection, behind the old one,
	// and the reserved fifth of the cap lets it start at once.
	mustAdmit(t, a, ask("a", "ingest", JobIngest, 0, true))
	mustQueue(t, a, ask("a", "run-now", JobMaintain, 0, true), 2, 3)
}

func TestAdmission_PerNamespaceCapLetsOtherNamespacesPass(t *testing.T) {
	a := NewAdmission(AdmissionLimits{MaxRunning: 10, MaxRunningPerNamespace: 1}, clocktesting.NewFakeClock(admissionT0))
	mustAdmit(t, a, ask("busy", "j1", JobInspect, 0, false))
	mustQueue(t, a, ask("busy", "j2", JobInspect, time.Minute, false), 1, 1)
	mustAdmit(t, a, ask("quiet", "j3", JobInspect, 2*time.Minute, false))
}

func TestAdmission_IndexedJobCountsItsParallelism(t *testing.T) {
	a := NewAdmission(AdmissionLimits{MaxRunning: 4}, clocktesting.NewFakeClock(admissionT0))
	a.observe(workerJob("a", "scaleout", 3, false))
	big := ask("a", "big", JobMaintain, 0, true)
	big.Pods = 2
	mustQueue(t, a, big, 1, 1)
	// A small run behind it does not slip into the one free pod: the big run would starve.
	mustQueue(t, a, ask("a", "small", JobIngest, time.Minute, true), 2, 2)
	a.observe(workerJob("a", "scaleout", 3, true))
	mustAdmit(t, a, big)
	mustAdmit(t, a, ask("a", "small", JobIngest, time.Minute, true))
}

func TestAdmission_StartRatePacesASlotOverManyTables(t *testing.T) {
	clk := clocktesting.NewFakeClock(admissionT0)
	a := NewAdmission(AdmissionLimits{StartRate: 2, StartBurst: 3}, clk)
	started := 0
	for second := range 5 {
		for i := range 100 { // one slot of a policy over 100 tables, every table asking each second
			if _, err := a.Admit(ask("a", fmt.Sprintf("t%03d", i), JobMaintain, 0, false)); err == nil {
				started++
			}
		}
		if want := 3 + 2*second; started != want {
			t.Fatalf("after %ds: %d Jobs started, want %d (burst 3, then 2 a second)", second, started, want)
		}
		clk.Step(time.Second)
	}
}

func TestAdmission_RecountsRunningJobsAfterARestart(t *testing.T) {
	a := NewAdmission(AdmissionLimits{MaxRunning: 2}, clocktesting.NewFakeClock(admissionT0))
	// A new manager: nothing remembered, the informer's initial list shows two live Jobs and a finished one.
	a.observe(workerJob("a", "live-1", 1, false))
	a.observe(workerJob("b", "live-2", 1, false))
	a.observe(workerJob("b", "done", 1, true))
	mustQueue(t, a, ask("a", "next", JobInspect, 0, false), 1, 1)
	a.gone(types.NamespacedName{Namespace: "a", Name: "live-1"}) // deleted
	mustAdmit(t, a, ask("a", "next", JobInspect, 0, false))
}

func TestAdmission_CancelledTicketFreesItsSlot(t *testing.T) {
	a := NewAdmission(AdmissionLimits{MaxRunning: 1}, clocktesting.NewFakeClock(admissionT0))
	ticket := mustAdmit(t, a, ask("a", "busy-table", JobMaintain, 0, false))
	mustQueue(t, a, ask("a", "other", JobMaintain, time.Minute, false), 1, 1)
	ticket.Cancel() // the table's lock was held: no Job was created
	mustAdmit(t, a, ask("a", "other", JobMaintain, time.Minute, false))
}

func TestQueued_StatusKeepsTwoSignificantDigitsFarFromTheHead(t *testing.T) {
	for _, tc := range []struct{ pos, length, wantPos, wantLength int }{
		{12, 345, 12, 340}, {99, 99, 99, 99}, {1234, 3456, 1200, 3400}, {5, 10049, 5, 10000},
	} {
		q := &Queued{Position: tc.pos, Length: tc.length}
		if st := q.Status(1); int(st.Position) != tc.wantPos || int(st.Length) != tc.wantLength {
			t.Errorf("%d of %d → %d of %d, want %d of %d", tc.pos, tc.length, st.Position, st.Length, tc.wantPos, tc.wantLength)
		}
		if want := fmt.Sprintf("queued: position %d of %d", tc.wantPos, tc.wantLength); q.Message() != want {
			t.Errorf("message %q, want %q", q.Message(), want)
		}
	}
}
