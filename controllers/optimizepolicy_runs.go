package controllers

import (
	"context"
	"errors"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// runSlot is one request to maintain tables: a schedule slot or a run-now request.
type runSlot struct {
	// Key names the slot inside the policy (hashed into Job names).
	Key  string
	Time time.Time
	// RunNow requests ignore triggers and the concurrency policy (they wait for running Jobs instead).
	RunNow bool
}

func scheduleSlot(t time.Time) runSlot {
	return runSlot{Key: "slot/" + t.UTC().Format(time.RFC3339), Time: t}
}

// startOutcome is what trying a slot on one table did.
type startOutcome int

const (
	outStarted       startOutcome = iota // a Job was created
	outExists                            // the slot's Job exists already
	outBelowTriggers                     // no trigger crossed: nothing to do this slot
	outSkipped                           // the slot was skipped on this table (recorded)
	outWaiting                           // the run waits (table lock, first inspection, a replaced Job)
)

// policyPass is one reconcile of a policy: what it read and what it is changing.
type policyPass struct {
	r      *OptimizePolicyReconciler
	policy *deltav1.OptimizePolicy
	ps     *policyStatus
	evq    *eventQueue
	now    time.Time
	// jobs are the policy's own Jobs; byName indexes them.
	jobs   []batchv1.Job
	byName map[string]bool
	// below collects the tables a slot left alone because no trigger was crossed.
	below []string
	// queuedRuns counts the runs waiting for admission; firstQueued is the one nearest the head.
	queuedRuns  int
	firstQueued *Queued
}

// tryStart runs slot on table unless its triggers, the concurrency policy or the table's lock say otherwise.
func (p *policyPass) tryStart(ctx context.Context, table *deltav1.DeltaTable, slot runSlot) (startOutcome, error) {
	pol := p.policy
	if owner, err := p.r.locationOwner(ctx, table); err != nil || owner != nil {
		if err != nil {
			return 0, err
		}
		p.ps.skip(table.Name, deltav1.ReasonDuplicateLocation, "table "+table.Name+": "+duplicateMessage(table, owner), slot.Time)
		return outSkipped, nil
	}
	trigger := TriggerRunNow
	if slot.RunNow && !propertiesApplied(table) {
		// Maintenance before the first inspection would run with defaults, on a table whose declared
		// properties (target file size, clustering columns) are not committed yet.
		p.wait(table.Name, "run-now on table "+table.Name+" waits for its first inspection to apply the declared properties", slot)
		return outWaiting, nil
	}
	if !slot.RunNow {
		d := EvaluateTriggers(pol.Spec.Triggers, table)
		switch {
		case d.Wait:
			p.wait(table.Name, "table "+table.Name+" has not been inspected yet", slot)
			return outWaiting, nil
		case !d.Run:
			p.below = append(p.below, table.Name)
			return outBelowTriggers, nil
		}
		trigger = d.Reason
	}
	args, ops, err := maintainArgs(pol, table)
	if err != nil {
		p.ps.skip(table.Name, deltav1.ReasonInvalidSpec, err.Error(), slot.Time)
		p.evq.warning(EventInvalidSpec, actionCreateJob, nil, fmt.Sprintf("Table %s: %v", table.Name, err))
		return outSkipped, nil
	}
	if len(ops) == 0 {
		return outBelowTriggers, nil
	}
	shares, why := shareRequest(pol, table, args, ops, slot.RunNow)
	if why != "" {
		p.wait(table.Name, why, slot)
		return outWaiting, nil
	}
	req := &JobRequest{
		Kind: JobMaintain, OwnerKind: "OptimizePolicy", Owner: pol, Table: table, Policy: pol.Name,
		Template: pol.Spec.JobTemplate, Args: args, Operations: ops, SlotKey: slot.Key, Scheduled: slot.Time,
		Trigger: trigger, Image: p.r.WorkerImage, Shares: shares,
	}
	name := req.Name()
	if shares != nil {
		req.Args = append(req.Args, shareArgs(shares, name, pol.Spec.JobTemplate.ActiveDeadline())...)
	}
	if p.byName[name] {
		return outExists, nil
	}
	if own := p.ownLiveJob(table.Name); own != nil {
		if out, done, err := p.applyConcurrency(ctx, table, own, slot); done || err != nil {
			return out, err
		}
	}
	if why, ok := losesToKeyedWrites(table); ok {
		writers, err := p.r.liveKeyedIngest(ctx, table.Namespace, table.Name)
		if err != nil {
			return 0, err
		}
		// Created suspended while keyed ingest Jobs run: the live Job holds the table, so the streams start
		// nothing new, and the pass resumes it when they have ended (resumeAlone).
		req.Exclusive, req.Suspended = true, len(writers) > 0
		if req.Suspended {
			p.ps.waiting = append(p.ps.waiting, exclusiveWait(table.Name, writers, why))
		}
	}
	tableJobs, err := p.r.tableJobs(ctx, table.Namespace, table.Name)
	if err != nil {
		return 0, err
	}
	job := BuildJob(req)
	err = p.r.startJob(ctx, job, table, tableJobs, admissionRequest(job, req, "OptimizePolicy", pol, slot.RunNow))
	var busy *LockBusy
	var queued *Queued
	switch {
	case err == nil:
	case errors.As(err, &queued):
		p.queue(table.Name, queued, slot)
		return outWaiting, nil
	case errors.As(err, &busy):
		p.wait(table.Name, fmt.Sprintf("table %s is busy with Job %s", table.Name, busy.Holder), slot)
		return outWaiting, nil
	case isAlreadyExists(err):
		return outExists, nil
	case apierrors.IsInvalid(err):
		msg := fmt.Sprintf("the API server rejected the maintenance Job built from this spec (check jobTemplate): %v", err)
		p.ps.skip(table.Name, deltav1.ReasonInvalidSpec, msg, slot.Time)
		p.evq.warning(EventInvalidSpec, actionCreateJob, nil, "Table "+table.Name+": "+msg)
		return outSkipped, nil
	default:
		return 0, err
	}
	p.ps.record(deltav1.RunRecord{
		JobName: job.Name, Table: table.Name, Operations: ops, Result: deltav1.RunRunning, Reason: trigger,
		ScheduledTime: &metav1.Time{Time: slot.Time}, StartTime: &metav1.Time{Time: p.now}, Shares: shareProgress(job, nil),
	})
	p.jobs = append(p.jobs, *job)
	p.byName[job.Name] = true
	p.evq.normal(EventJobStarted, actionCreateJob, job, fmt.Sprintf("Started maintenance Job %s on table %s (%s: %s)",
		job.Name, table.Name, trigger, joinOperations(ops)))
	ctrl.LoggerFrom(ctx).Info("Started maintenance Job", "job", job.Name, "table", table.Name, "trigger", trigger)
	return outStarted, nil
}

// applyConcurrency handles a slot arriving while this policy's Job own still runs on the table. done is true
// when the outcome is final for this pass.
func (p *policyPass) applyConcurrency(ctx context.Context, table *deltav1.DeltaTable, own *batchv1.Job, slot runSlot) (startOutcome, bool, error) {
	if slot.RunNow {
		p.wait(table.Name, fmt.Sprintf("run-now on table %s waits for Job %s", table.Name, own.Name), slot)
		return outWaiting, true, nil
	}
	switch p.policy.Concurrency() {
	case deltav1.ConcurrencyForbid:
		msg := fmt.Sprintf("slot %s skipped on table %s: Job %s still runs (concurrencyPolicy Forbid)",
			slot.Time.UTC().Format(time.RFC3339), table.Name, own.Name)
		p.ps.skip(table.Name, deltav1.ReasonConcurrencyForbid, msg, slot.Time)
		p.evq.warning(EventSkipped, actionSchedule, own, msg)
		return outSkipped, true, nil
	case deltav1.ConcurrencyReplace:
		if own.DeletionTimestamp == nil {
			// Foreground: the Job stays (and holds the table) until its pods are gone, so the new Job never
			// overlaps the old one's pods.
			err := p.r.Delete(ctx, own, client.PropagationPolicy(metav1.DeletePropagationForeground))
			if client.IgnoreNotFound(err) != nil {
				return 0, true, fmt.Errorf("delete Job %s for concurrencyPolicy Replace: %w", own.Name, err)
			}
			p.ps.record(deltav1.RunRecord{
				JobName: own.Name, Table: table.Name, Result: deltav1.RunFailed, Reason: deltav1.ReasonReplaced,
				Message:   "stopped by concurrencyPolicy Replace for slot " + slot.Time.UTC().Format(time.RFC3339),
				StartTime: own.Status.StartTime, CompletionTime: &metav1.Time{Time: p.now},
			})
			p.evq.normal(EventJobDeleted, actionDeleteJob, own, fmt.Sprintf("Stopping Job %s on table %s for the new slot (concurrencyPolicy Replace)", own.Name, table.Name))
		}
		p.wait(table.Name, fmt.Sprintf("table %s: replacing Job %s", table.Name, own.Name), slot)
		return outWaiting, true, nil
	}
	return 0, false, nil // Allow: the table's lock makes it wait
}

// wait records that table's run for slot waits, and tells once (when the wait starts).
func (p *policyPass) wait(table, why string, slot runSlot) {
	p.ps.waiting = append(p.ps.waiting, why)
	if slot.RunNow {
		return
	}
	if old := p.ps.pending[table]; old == nil || !old.Time.Equal(slot.Time) {
		p.evq.normal(EventWaiting, actionSchedule, nil, fmt.Sprintf("Slot %s waits: %s", slot.Time.UTC().Format(time.RFC3339), why))
	}
	p.ps.pending[table] = &metav1.Time{Time: slot.Time}
}

// queue records that table's run for slot waits for admission. Unlike a busy table, a queued run is told
// once per pass for the whole policy (finishQueue), not once per table.
func (p *policyPass) queue(table string, q *Queued, slot runSlot) {
	p.queuedRuns++
	if p.firstQueued == nil || q.Position < p.firstQueued.Position {
		p.firstQueued = q
	}
	if !slot.RunNow {
		p.ps.pending[table] = &metav1.Time{Time: slot.Time}
	}
}

// finishQueue puts the queued runs into the status (one line in Ready, status.queue) and says when to look
// again if the admission does not wake the policy first.
func (p *policyPass) finishQueue(w *wakeup) {
	p.ps.st.Queue = p.firstQueued.Status(p.queuedRuns)
	if p.queuedRuns == 0 {
		return
	}
	p.ps.waiting = append(p.ps.waiting, fmt.Sprintf("%d runs wait for a worker slot (first %s)", p.queuedRuns, p.firstQueued.Message()))
	w.in(p.firstQueued.RetryAfter)
}

// ownLiveJob returns this policy's live Job on table, if any.
func (p *policyPass) ownLiveJob(table string) *batchv1.Job {
	for i := range p.jobs {
		if j := &p.jobs[i]; j.Annotations[deltav1.AnnotationTable] == table && isLive(j) {
			return j
		}
	}
	return nil
}

// runSlotOnTargets tries slot on every table; it returns whether every table is done with it (nothing waits).
func (p *policyPass) runSlotOnTargets(ctx context.Context, tables []*deltav1.DeltaTable, slot runSlot) (bool, error) {
	allDone := true
	for _, t := range tables {
		out, err := p.tryStart(ctx, t, slot)
		if err != nil {
			return false, err
		}
		if out == outWaiting {
			allDone = false
		} else if !slot.RunNow {
			delete(p.ps.pending, t.Name)
		}
	}
	return allDone, nil
}

// propertiesApplied reports whether an inspection read the table and committed (or found) its declared
// properties and clustering columns.
func propertiesApplied(table *deltav1.DeltaTable) bool {
	c := apimeta.FindStatusCondition(table.Status.Conditions, deltav1.ConditionPropertiesApplied)
	return table.IsInspected() && c != nil && c.Status == metav1.ConditionTrue
}
