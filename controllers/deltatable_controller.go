package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// Requeue delays.
const (
	requeueSoon      = time.Second      // stale cache after a create or a conflicting write: look again
	requeueResult    = 2 * time.Second  // a finished Job's pod is not in the cache yet
	requeueLockBusy  = 30 * time.Second // the table's lock is held; Job events usually come first
	requeueActiveJob = time.Minute      // refresh what a running Job's pod says (stuck on a Secret, an image)
	keepInspectJobs  = 3                // finished inspect Jobs kept per table for `kubectl logs`
)

// DeltaTableReconciler inspects tables: on creation, on spec change and every inspectInterval it runs an
// inspect Job (under the table's lock), and it folds every finished Job on the table, inspect or maintenance
// from any policy, into the status.
type DeltaTableReconciler struct {
	reconcilerBase
}

// SetupWithManager watches DeltaTables (spec, label and annotation changes; not our own status writes) and
// every worker Job on a table, whoever owns it.
func (r *DeltaTableReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("deltatable").
		For(&deltav1.DeltaTable{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, predicate.LabelChangedPredicate{}))).
		// A table created or deleted at the same location makes another one a duplicate, or its owner.
		Watches(&deltav1.DeltaTable{}, handler.EnqueueRequestsFromMapFunc(r.tablesAtSameLocation),
			builder.WithPredicates(predicate.Funcs{
				UpdateFunc:  func(event.UpdateEvent) bool { return false },
				GenericFunc: func(event.GenericEvent) bool { return false },
			})).
		Watches(&batchv1.Job{}, handler.EnqueueRequestsFromMapFunc(jobToTable)).
		Watches(&deltav1.StreamIngest{}, handler.EnqueueRequestsFromMapFunc(streamToTable),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		WatchesRawSource(r.Admission.wakeSource("DeltaTable")).
		Complete(r)
}

// streamToTable maps a StreamIngest to its target table (status.streams); the target is immutable, so only
// creations and deletions matter.
func streamToTable(_ context.Context, obj client.Object) []reconcile.Request {
	si, ok := obj.(*deltav1.StreamIngest)
	if !ok || si.Spec.Target == "" {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: si.Namespace, Name: si.Spec.Target}}}
}

// tableStreams names the StreamIngests that write to the table, sorted.
func (r *DeltaTableReconciler) tableStreams(ctx context.Context, table *deltav1.DeltaTable) ([]string, error) {
	var list deltav1.StreamIngestList
	if err := r.List(ctx, &list, client.InNamespace(table.Namespace)); err != nil {
		return nil, fmt.Errorf("list StreamIngests in %s: %w", table.Namespace, err)
	}
	var names []string
	for _, s := range list.Items {
		if s.Spec.Target == table.Name && s.DeletionTimestamp == nil {
			names = append(names, s.Name)
		}
	}
	slices.Sort(names)
	if len(names) > 64 {
		names = names[:64]
	}
	return names, nil
}

// jobToTable maps a worker Job to its DeltaTable.
func jobToTable(_ context.Context, obj client.Object) []reconcile.Request {
	name := obj.GetAnnotations()[deltav1.AnnotationTable]
	if name == "" || obj.GetLabels()[deltav1.LabelOperation] == string(JobIngest) {
		return nil
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: obj.GetNamespace(), Name: name}}}
}

// Reconcile reads the table's Jobs, folds finished ones into the status, starts a due inspect Job, writes
// the status once, then emits events and metrics.
func (r *DeltaTableReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	var table deltav1.DeltaTable
	if err := r.Get(ctx, req.NamespacedName, &table); err != nil {
		if apierrors.IsNotFound(err) {
			forgetTable(req.Namespace, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get DeltaTable %s: %w", req.NamespacedName, err)
	}
	now := r.Clock.Now()
	jobs, err := r.tableJobs(ctx, table.Namespace, table.Name)
	if err != nil {
		return ctrl.Result{}, err
	}
	// Inspect Jobs of a deleted predecessor with the same name are not this table's history.
	jobs = slices.DeleteFunc(jobs, func(j batchv1.Job) bool {
		ref := metav1.GetControllerOf(&j)
		return ref != nil && ref.Kind == "DeltaTable" && ref.UID != table.UID
	})
	pods, err := r.podsByJob(ctx, table.Namespace, client.MatchingLabels{deltav1.LabelTable: LabelValue(table.Name)})
	if err != nil {
		return ctrl.Result{}, err
	}

	st := table.Status.DeepCopy()
	conds := conditionSetter{conds: &st.Conditions, generation: table.Generation, now: now}
	var evq eventQueue
	var wake wakeup

	// 0. Say why live Jobs do not start; mark this table's Jobs past their start timeout as failed runs.
	whys, err := r.checkStarts(ctx, jobs, pods, table.UID, table.Spec.JobTemplate.StartTimeoutDuration(), now, &wake)
	if err != nil {
		return ctrl.Result{}, err
	}

	// 1. Fold finished Jobs.
	var added []*finishedRun
	st.RecentRuns, added = foldFinishedJobs(st.RecentRuns, jobs, pods, now, maxTableRuns, &wake)
	for _, run := range added {
		if run.Kind == JobInspect {
			applyInspect(st, conds, run)
		} else {
			applyMaintenance(st, conds, run)
		}
		queueTableRunEvents(&evq, &table, run)
	}

	// 2. Free the lock of a finished holder, so that waiting policies need not wait for createGrace.
	if err := r.releaseFinishedHolder(ctx, &table, jobs); err != nil {
		return ctrl.Result{}, err
	}

	// 3. Start the inspect Job when due, unless another DeltaTable owns the location.
	view := tableView{}
	active := oldestLive(jobs)
	if active != nil {
		view.ActiveJob = active.Name
		view.ActiveInspect = active.Labels[deltav1.LabelOperation] == string(JobInspect)
		view.Stuck = whys[active.Name]
		if view.Stuck == "" {
			view.Stuck = stuckPod(pods[active.Name])
		}
		wake.in(requeueActiveJob)
	}
	owner, err := r.locationOwner(ctx, &table)
	if err != nil {
		return ctrl.Result{}, err
	}
	if owner != nil {
		view.Duplicate = duplicateMessage(&table, owner)
		if readyReason(table.Status.Conditions) != deltav1.ReasonDuplicateLocation {
			evq.warning(EventDuplicate, actionValidate, nil, view.Duplicate)
		}
	}
	statusTable := table.DeepCopy()
	statusTable.Status = *st
	plan := planInspect(statusTable, now)
	view.NextInspect = plan.Due
	var terminal error
	if owner != nil {
		// Nothing to wait for: the owner's deletion or a new table at the location enqueues this one.
	} else if !plan.Due.After(now) {
		started, err := r.startInspect(ctx, &table, plan, jobs, &view)
		switch {
		case err == nil && started != nil:
			view.ActiveJob, view.ActiveInspect, active = started.Name, true, started
			if plan.Trigger != triggerInterval {
				evq.normal(EventJobStarted, actionCreateJob, started, fmt.Sprintf("Started inspect Job %s (%s)", started.Name, plan.Trigger))
			}
			log.Info("Started inspect Job", "job", started.Name, "trigger", plan.Trigger)
			wake.in(requeueActiveJob)
		case err == nil && view.Queued != nil:
			wake.in(view.Queued.RetryAfter)
		case err == nil:
			wake.in(requeueLockBusy)
		case errors.Is(err, errRetrySoon):
			wake.in(requeueSoon)
		case isSpecError(err):
			view.SpecError = sanitize(err.Error(), 1024)
			terminal = err
			if old := apimeta.FindStatusCondition(table.Status.Conditions, deltav1.ConditionReady); old == nil || old.Message != view.SpecError {
				evq.warning(EventInvalidSpec, actionValidate, nil, view.SpecError)
			}
		default:
			return ctrl.Result{}, err
		}
	} else {
		wake.in(plan.Due.Sub(now))
	}
	st.ActiveJob = view.ActiveJob
	st.Queue = view.Queued.Status(1)
	st.NextInspectTime = nil
	if plan.Due.After(now) {
		// Whole seconds, as the API server stores it: a finer time would differ from the stored one and
		// rewrite the status at every pass.
		st.NextInspectTime = &metav1.Time{Time: plan.Due.Add(time.Second - 1).Truncate(time.Second).UTC()}
	}

	if st.Streams, err = r.tableStreams(ctx, &table); err != nil {
		return ctrl.Result{}, err
	}

	// 4. Prune old inspect Jobs whose results are recorded.
	r.pruneInspectJobs(ctx, &table, jobs)

	// 5. One status write, then events and metrics.
	setReady(&table, st, conds, view)
	setKstatus(conds, kstatusView{Working: inspectWorking(view)})
	st.ObservedGeneration = table.Generation
	if stop, res, err := commitStatus(ctx, &r.reconcilerBase, &table, &table.Status, st, evq); stop {
		return res, err
	}
	r.deleteStartFailed(ctx, jobs, table.UID, table.Status.RecentRuns)
	for _, run := range added {
		if run.Kind == JobInspect {
			observeRun("DeltaTable", table.Namespace, run)
		}
	}
	setTableGauges(&table)
	if terminal != nil {
		log.Info("DeltaTable spec cannot be turned into a Job", "reason", view.SpecError)
		return ctrl.Result{}, reconcile.TerminalError(terminal)
	}
	return wake.result(), nil
}

// errRetrySoon means "the cache is behind; look again in a second".
var errRetrySoon = errors.New("retry soon")

// startInspect starts the inspect Job of plan unless it exists or the table is busy. It returns the Job it
// started, nil when it did not start one (view.Waiting says why), or an error: errRetrySoon, a terminal
// error for a spec the worker cannot be given, or an unexpected API error.
func (r *DeltaTableReconciler) startInspect(ctx context.Context, table *deltav1.DeltaTable, plan inspectPlan, jobs []batchv1.Job, view *tableView) (*batchv1.Job, error) {
	args, err := inspectArgs(table)
	if err != nil {
		return nil, specError{err}
	}
	if err := r.checkJobTemplate(table.Spec.JobTemplate); err != nil {
		return nil, err
	}
	req := &JobRequest{
		Kind: JobInspect, OwnerKind: "DeltaTable", Owner: table, Table: table, Template: table.Spec.JobTemplate,
		Args: args, Operations: []deltav1.Operation{deltav1.OperationInspect}, SlotKey: plan.Key,
		Scheduled: plan.Due, Trigger: plan.Trigger, Generation: table.Generation, Image: r.WorkerImage,
	}
	name := req.Name()
	for i := range jobs {
		if jobs[i].Name == name {
			return nil, nil // started by an earlier pass; its end will be folded
		}
	}
	job := BuildJob(req)
	err = r.startJob(ctx, job, table, jobs, admissionRequest(job, req, "DeltaTable", table, false))
	var busy *LockBusy
	var queued *Queued
	switch {
	case err == nil:
		return job, nil
	case errors.As(err, &queued):
		view.Queued = queued
		view.Waiting = "inspect " + queued.Message()
		return nil, nil
	case errors.As(err, &busy):
		view.Waiting = "inspect waits for Job " + busy.Holder + ", which holds the table's lock"
		return nil, nil
	case isAlreadyExists(err):
		return nil, errRetrySoon
	case apierrors.IsInvalid(err):
		return nil, specError{fmt.Errorf("the API server rejected the inspect Job built from this spec (check jobTemplate): %w", err)}
	}
	return nil, err
}

// releaseFinishedHolder clears the table's lock when its holder Job finished.
func (r *DeltaTableReconciler) releaseFinishedHolder(ctx context.Context, table *deltav1.DeltaTable, jobs []batchv1.Job) error {
	holder, own, err := r.Lock.Holder(ctx, table)
	if err != nil || holder == "" || !own {
		return err
	}
	for i := range jobs {
		if jobs[i].Name == holder && !isLive(&jobs[i]) {
			return r.Lock.Release(ctx, table, holder)
		}
	}
	return nil
}

// pruneInspectJobs deletes this table's finished inspect Jobs beyond the newest keepInspectJobs, once a newer
// inspect run is recorded in the persisted status (so no result is lost). Failures are retried next pass.
func (r *DeltaTableReconciler) pruneInspectJobs(ctx context.Context, table *deltav1.DeltaTable, jobs []batchv1.Job) {
	var done []*batchv1.Job
	for i := range jobs {
		j := &jobs[i]
		if ref := metav1.GetControllerOf(j); ref != nil && ref.UID == table.UID && !isLive(j) {
			done = append(done, j)
		}
	}
	if len(done) <= keepInspectJobs {
		return
	}
	slices.SortFunc(done, func(a, b *batchv1.Job) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	recorded := lastInspectAttempt(&table.Status)
	for _, j := range done[keepInspectJobs:] {
		if _, _, cond := jobFinished(j); cond == nil || cond.LastTransitionTime.After(recorded) {
			continue
		}
		if err := client.IgnoreNotFound(r.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground))); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to delete an old inspect Job", "job", j.Name)
		}
	}
}

// queueTableRunEvents explains a newly recorded run on the table. Periodic inspections that change nothing
// stay quiet: one event per table and interval would drown the namespace's events.
func queueTableRunEvents(evq *eventQueue, table *deltav1.DeltaTable, run *finishedRun) {
	rec := &run.Record
	what := "maintenance Job " + rec.JobName
	if run.Kind == JobInspect {
		what = "inspect Job " + rec.JobName
	}
	switch rec.Result {
	case deltav1.RunSucceeded, deltav1.RunNothingToDo:
		if run.Kind != JobInspect {
			evq.normal(EventRunSucceeded, actionRecord, run.Job, what+" succeeded: "+rec.Message)
			return
		}
		if a := run.Result.Applied; a != nil && (len(a.Properties) > 0 || len(a.ClusteringColumns) > 0) {
			evq.normal(EventPropertiesApplied, actionRecord, run.Job, appliedMessage(run.Result))
		}
		if table.Status.LastInspectedTime == nil || table.Status.FailedInspections > 0 {
			evq.normal(EventInspected, actionRecord, run.Job, what+": "+rec.Message)
		}
	default:
		queueRunProblem(evq, run, what)
	}
}

func isAlreadyExists(err error) bool { return apierrors.IsAlreadyExists(err) }

// specError is a spec that cannot work until someone changes it: the reconciler says so in a condition and
// returns reconcile.TerminalError instead of retrying.
type specError struct{ error }

func (e specError) Unwrap() error { return e.error }

func isSpecError(err error) bool {
	var se specError
	return errors.As(err, &se)
}

// oldestLive returns the oldest live Job among jobs, the one that holds or will take the table, if any.
func oldestLive(jobs []batchv1.Job) *batchv1.Job {
	var oldest *batchv1.Job
	for i := range jobs {
		if j := &jobs[i]; isLive(j) && (oldest == nil || j.CreationTimestamp.Before(&oldest.CreationTimestamp)) {
			oldest = j
		}
	}
	return oldest
}
