package controllers

import (
	"fmt"
	"slices"
	"strings"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// Status caps from the CRD.
const (
	maxPolicyRuns    = 20
	maxPolicyTargets = 256
	maxPolicyActive  = 256
)

// policyStatus accumulates one reconcile's changes to an OptimizePolicy's status.
type policyStatus struct {
	st    *deltav1.OptimizePolicyStatus
	conds conditionSetter
	// lastRun and pending are the per-target state, keyed by table name.
	lastRun map[string]*deltav1.RunRecord
	pending map[string]*metav1.Time
	// waiting explains targets whose due run waits, for the Ready message.
	waiting []string
}

func newPolicyStatus(p *deltav1.OptimizePolicy, now time.Time) *policyStatus {
	st := p.Status.DeepCopy()
	ps := &policyStatus{
		st:      st,
		conds:   conditionSetter{conds: &st.Conditions, generation: p.Generation, now: now},
		lastRun: map[string]*deltav1.RunRecord{},
		pending: map[string]*metav1.Time{},
	}
	for i := range st.Targets {
		t := &st.Targets[i]
		if t.LastRun != nil {
			ps.lastRun[t.Table] = t.LastRun.DeepCopy()
		}
		if t.PendingSince != nil {
			ps.pending[t.Table] = t.PendingSince.DeepCopy()
		}
	}
	return ps
}

// record notes a run as the latest on its table unless a newer one is known (a Running record is replaced
// by the same Job's final one).
func (ps *policyStatus) record(rec deltav1.RunRecord) {
	old := ps.lastRun[rec.Table]
	if old == nil || old.JobName == rec.JobName && rec.JobName != "" || !rec.When().Before(old.When()) {
		ps.lastRun[rec.Table] = &rec
	}
}

// skip records a slot that did not run on a table, in the history and as the table's last run.
func (ps *policyStatus) skip(table, reason, msg string, slot time.Time) {
	rec := deltav1.RunRecord{
		Table: table, Result: deltav1.RunSkipped, Reason: reason, Message: sanitize(msg, maxRecordMessage),
		ScheduledTime: &metav1.Time{Time: slot},
	}
	ps.st.RecentRuns = append([]deltav1.RunRecord{rec}, ps.st.RecentRuns...)
	sortRecords(ps.st.RecentRuns)
	if len(ps.st.RecentRuns) > maxPolicyRuns {
		ps.st.RecentRuns = ps.st.RecentRuns[:maxPolicyRuns]
	}
	ps.record(rec)
}

// applyRun sets LastRunSucceeded from a newly recorded finished run.
func (ps *policyStatus) applyRun(run *finishedRun) {
	rec := &run.Record
	ps.record(*rec)
	msg := fmt.Sprintf("Job %s on table %s: %s", rec.JobName, rec.Table, rec.Message)
	switch rec.Result {
	case deltav1.RunSucceeded, deltav1.RunNothingToDo:
		ps.conds.set(deltav1.ConditionLastRunSucceeded, metav1.ConditionTrue, deltav1.ReasonRunSucceeded, msg)
	case deltav1.RunRefused:
		ps.conds.set(deltav1.ConditionLastRunSucceeded, metav1.ConditionFalse, deltav1.ReasonRunRefused, msg)
	default:
		reason := deltav1.ReasonRunFailed
		if run.Problem != "" {
			reason = run.Problem
		}
		ps.conds.set(deltav1.ConditionLastRunSucceeded, metav1.ConditionFalse, reason, msg)
	}
}

// finishTargets writes the per-target state for the resolved tables, sorted, within the CRD's cap.
func (ps *policyStatus) finishTargets(tables []string) {
	ps.st.Targets = nil
	for _, name := range tables {
		if len(ps.st.Targets) == maxPolicyTargets {
			break
		}
		ps.st.Targets = append(ps.st.Targets, deltav1.TargetStatus{
			Table: name, LastRun: ps.lastRun[name], PendingSince: ps.pending[name],
		})
	}
}

// policyView is what the reconciler saw that shapes the Ready condition.
type policyView struct {
	SpecReason, SpecError string
	NoSteps               bool
	Tables                []string
	Missing               []string
	Suspended             bool
	Scheduled             bool
	Next                  *metav1.Time
	TimeZone              string
	RunNowOpen            string
}

// setReady derives the Ready condition.
func (ps *policyStatus) setReady(v policyView) {
	ready := func(status metav1.ConditionStatus, reason, msg string) {
		ps.conds.set(deltav1.ConditionReady, status, reason, msg)
	}
	var notes []string
	if len(ps.waiting) > 0 {
		notes = append(notes, fmt.Sprintf("%d runs waiting: %s", len(ps.waiting), firstFew(ps.waiting, "; ")))
	}
	if v.RunNowOpen != "" {
		notes = append(notes, "run-now request "+v.RunNowOpen+" is still being started")
	}
	suffix := ""
	if len(notes) > 0 {
		suffix = "; " + strings.Join(notes, "; ")
	}
	switch {
	case v.SpecError != "":
		ready(metav1.ConditionFalse, v.SpecReason, v.SpecError)
	case v.NoSteps:
		ready(metav1.ConditionFalse, deltav1.ReasonNoStepsEnabled, "compaction, clustering, vacuum and checkpoint are all disabled: the policy has nothing to run")
	case len(v.Tables) == 0:
		msg := "the targets select no DeltaTable in this namespace"
		if len(v.Missing) > 0 {
			msg += "; not found: " + firstFew(v.Missing, ", ")
		}
		ready(metav1.ConditionFalse, deltav1.ReasonNoTargets, msg)
	case len(v.Missing) > 0:
		ready(metav1.ConditionFalse, deltav1.ReasonTargetNotFound, fmt.Sprintf("%d DeltaTables not found: %s; maintaining the other %d%s",
			len(v.Missing), firstFew(v.Missing, ", "), len(v.Tables), suffix))
	case v.Suspended:
		ready(metav1.ConditionTrue, deltav1.ReasonSuspended, fmt.Sprintf("suspended: no scheduled runs (running Jobs finish; run-now requests still run); %d tables%s", len(v.Tables), suffix))
	case !v.Scheduled:
		ready(metav1.ConditionTrue, deltav1.ReasonScheduled, fmt.Sprintf("no schedule: runs on run-now requests only; %d tables%s", len(v.Tables), suffix))
	case v.Next == nil:
		ready(metav1.ConditionTrue, deltav1.ReasonScheduled, fmt.Sprintf("the schedule has no future slot; %d tables%s", len(v.Tables), suffix))
	default:
		ready(metav1.ConditionTrue, deltav1.ReasonScheduled, fmt.Sprintf("next slot %s (%s); %d tables%s",
			v.Next.UTC().Format(time.RFC3339), v.TimeZone, len(v.Tables), suffix))
	}
}

// readyListed is how many items of a list the Ready message names: a policy over thousands of tables keeps a
// message a person can read (and kubectl can print); status.targets has every table.
const readyListed = 3

// firstFew joins the first readyListed items and counts the rest.
func firstFew(items []string, sep string) string {
	if len(items) <= readyListed {
		return strings.Join(items, sep)
	}
	return fmt.Sprintf("%s and %d more", strings.Join(items[:readyListed], sep), len(items)-readyListed)
}

// recordedIn reports whether a finished Job's run is in a persisted newest-first history capped at limit:
// by name, or because the history is full of newer runs. Only then may the Job be deleted.
func recordedIn(history []deltav1.RunRecord, limit int, jobName string, when time.Time) bool {
	if slices.ContainsFunc(history, func(r deltav1.RunRecord) bool { return r.JobName == jobName }) {
		return true
	}
	return len(history) >= limit && when.Before(history[len(history)-1].When())
}
