package controllers

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
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

// StreamIngestReconciler keeps a table fed: at most one ingest Job per stream at a time, each running
// `deltakeeper worker ingest` for a bounded time and exiting with its JSON result, which the reconciler
// folds into the status. Short Jobs are the progress mechanism: the manager never reads table data, the
// worker needs no API access, and a committed batch shows in status when its Job ends, within about half
// the trigger interval (ingestBudget). Exactly-once is the worker's: a killed Job's batch is finished or
// replayed by the next one.
//
// Ingest Jobs take no table lock (see tableJobs): appends never conflict with maintenance, and the
// worker retries the conflicts the keyed modes can meet.
type StreamIngestReconciler struct {
	reconcilerBase
}

// SetupWithManager watches StreamIngests (spec changes), their ingest Jobs, and the DeltaTables they name (a
// target that appears or goes changes the verdict).
func (r *StreamIngestReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("streamingest").
		For(&deltav1.StreamIngest{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}))).
		Owns(&batchv1.Job{}).
		Watches(&deltav1.DeltaTable{}, handler.EnqueueRequestsFromMapFunc(r.tableToStreams),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		WatchesRawSource(r.Admission.wakeSource("StreamIngest")).
		Complete(r)
}

// tableToStreams maps a DeltaTable to the StreamIngests that write to or read from it.
func (r *StreamIngestReconciler) tableToStreams(ctx context.Context, obj client.Object) []reconcile.Request {
	var list deltav1.StreamIngestList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list StreamIngests for a DeltaTable", "table", obj.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for _, s := range list.Items {
		if s.Spec.Target == obj.GetName() || (s.Spec.Source.DeltaTable != nil && s.Spec.Source.DeltaTable.Name == obj.GetName()) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
		}
	}
	return reqs
}

// streamView is what a pass saw that the conditions report besides the last outcome.
type streamView struct {
	TargetMissing string // message when the target DeltaTable does not exist
	Unavailable   string // message when the source kind cannot be ingested
	SpecError     string // message when the spec cannot be turned into a Job
	ActiveJob     string
	Stuck         string // why the active Job's pod cannot start
	Next          time.Time
	Queued        *Queued // the due ingest Job waits for admission
	// Yield is the maintenance Job that runs alone on the table, which the due keyed ingest Job waits for.
	Yield *yieldToMaintenance
}

// yieldToMaintenance is why a keyed stream's due Job does not start: maintenance Job Job runs alone on
// the table (exclusive.go).
type yieldToMaintenance struct{ Job string }

func (y *yieldToMaintenance) Error() string {
	return "the next ingest Job waits for maintenance Job " + y.Job + ", which runs alone on the table after its runs lost their work to this stream's keyed writes"
}

// requeueYield is how often a stream that yields to a maintenance Job looks again: maintenance Jobs are
// not the stream's own, so their end wakes nothing.
const requeueYield = 15 * time.Second

// Reconcile folds the stream's finished Jobs into its status, starts the next Job when it is due, writes
// the status once, then emits events and metrics.
func (r *StreamIngestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	log := ctrl.LoggerFrom(ctx)
	// Read uncached: the status names the Job this stream started last and counts the Jobs it started. A
	// cached copy one write behind would not know a Job deleted right after it was created (its delete
	// event can arrive before the status write reaches the cache), and the stream would start its
	// successor under the same name instead of recording the lost run.
	var si deltav1.StreamIngest
	if err := r.Lock.Reader.Get(ctx, req.NamespacedName, &si); err != nil {
		if apierrors.IsNotFound(err) {
			forgetStream(req.Namespace, req.Name)
			return ctrl.Result{}, nil
		}
		return ctrl.Result{}, fmt.Errorf("get StreamIngest %s: %w", req.NamespacedName, err)
	}
	now := r.Clock.Now()
	jobs, err := r.streamJobs(ctx, &si)
	if err != nil {
		return ctrl.Result{}, err
	}
	pods, err := r.podsByJob(ctx, si.Namespace, client.MatchingLabels{deltav1.LabelStream: LabelValue(si.Name)})
	if err != nil {
		return ctrl.Result{}, err
	}
	st := si.Status.DeepCopy()
	conds := conditionSetter{conds: &st.Conditions, generation: si.Generation, now: now}
	var evq eventQueue
	var wake wakeup
	var view streamView

	// 1. Fold finished Jobs, oldest first (a Job past jobTemplate.startTimeout is marked finished first).
	whys, err := r.checkStarts(ctx, jobs, pods, si.UID, si.Spec.JobTemplate.StartTimeoutDuration(), now, &wake)
	if err != nil {
		return ctrl.Result{}, err
	}
	var added []*finishedRun
	st.RecentJobs, added = foldFinishedJobs(st.RecentJobs, jobs, pods, now, maxStreamJobs, &wake)
	outcomes := make([]outcome, len(added))
	for i, run := range added {
		o := classifyIngest(run, run.Job.Annotations[deltav1.AnnotationTrigger] == ingestTriggerAvailableNow)
		outcomes[i] = o
		applyIngestRun(st, run, o)
		setOutcome(conds, o, run.Generation)
		queueIngestEvents(&evq, run, o)
	}

	// 2. The live Job, if any. The status names the Job it started; a Job the cache does not show yet is
	// looked up directly, so that a stale cache never lets a second Job start.
	active := oldestLive(jobs)
	if active == nil && st.ActiveJob != "" && !slices.ContainsFunc(jobs, func(j batchv1.Job) bool { return j.Name == st.ActiveJob }) {
		var j batchv1.Job
		err := r.Lock.Reader.Get(ctx, types.NamespacedName{Namespace: si.Namespace, Name: st.ActiveJob}, &j)
		switch {
		case err == nil && isLive(&j):
			active = &j
		case err == nil:
			wake.in(requeueSoon) // finished: the cache will show it, and it is folded then
			active = &j
		case apierrors.IsNotFound(err):
			// Recorded as a failed run, so that the next Job backs off from it like from any failure.
			log.Info("The stream's ingest Job is gone before its result was read", "job", st.ActiveJob)
			msg := "ingest Job " + st.ActiveJob + " was deleted before it reported; the next Job resumes the stream"
			st.RecentJobs = append(st.RecentJobs, deltav1.RunRecord{JobName: st.ActiveJob, Table: si.Spec.Target,
				Operations: []deltav1.Operation{deltav1.OperationIngest}, Result: deltav1.RunFailed, Reason: deltav1.ReasonJobFailed,
				Message: msg, CompletionTime: &metav1.Time{Time: now}})
			sortRecords(st.RecentJobs)
			st.RecentJobs = st.RecentJobs[:min(len(st.RecentJobs), maxStreamJobs)]
			st.ConsecutiveFailures++
			conds.set(deltav1.ConditionStalled, metav1.ConditionFalse, deltav1.ReasonJobFailed, msg)
			evq.warning(EventJobFailed, actionRecord, nil, msg)
		default:
			return ctrl.Result{}, fmt.Errorf("get ingest Job %s/%s: %w", si.Namespace, st.ActiveJob, err)
		}
	}
	st.ActiveJob = ""
	if active != nil {
		// A Job of the current slot was started by a pass whose status write was lost (a conflict): count
		// it now, so that the next Job takes the next slot and the count says how many were started.
		if active.Name == JobName(si.Spec.Target, JobIngest, ownerKey("StreamIngest", &si), "job/"+strconv.FormatInt(st.JobsStarted, 10)) {
			st.JobsStarted++
		}
		st.ActiveJob = active.Name
		view.ActiveJob = active.Name
		if view.Stuck = whys[active.Name]; view.Stuck == "" {
			view.Stuck = stuckPod(pods[active.Name])
		}
		wake.in(requeueActiveJob)
	}

	// 3. Start the next Job when it is due.
	table, err := r.target(ctx, &si, &view)
	if err != nil {
		return ctrl.Result{}, err
	}
	st.NextJobTime = nil
	if table != nil && view.Unavailable == "" && !si.Spec.Suspend && active == nil {
		due, trigger, done := nextIngestJob(&si, st, now)
		switch {
		case done:
		case due.After(now):
			st.NextJobTime = &metav1.Time{Time: due}
			view.Next = due
			wake.in(due.Sub(now))
		default:
			job, err := r.startIngest(ctx, &si, table, st, jobs, trigger, due)
			switch {
			case errors.As(err, &view.Queued):
				wake.in(view.Queued.RetryAfter)
			case errors.As(err, &view.Yield):
				wake.in(requeueYield)
			case isSpecError(err):
				view.SpecError = sanitize(err.Error(), 1024)
				conds.set(deltav1.ConditionStalled, metav1.ConditionTrue, deltav1.ReasonInvalidSpec, view.SpecError)
				evq.warning(EventInvalidSpec, actionCreateJob, nil, view.SpecError)
			case err != nil && isAlreadyExists(err):
				wake.in(requeueSoon)
			case err != nil:
				return ctrl.Result{}, err
			case job != nil:
				st.ActiveJob, view.ActiveJob = job.Name, job.Name
				if trigger != ingestTriggerInterval && trigger != ingestTriggerBacklog {
					evq.normal(EventJobStarted, actionCreateJob, job, fmt.Sprintf("Started ingest Job %s (%s)", job.Name, trigger))
				}
				log.Info("Started ingest Job", "job", job.Name, "trigger", trigger)
				wake.in(requeueActiveJob)
			default:
				wake.in(requeueSoon)
			}
		}
	}

	st.Queue = view.Queued.Status(1)

	// 4. Prune old finished Jobs whose results the persisted status holds.
	r.pruneIngestJobs(ctx, &si, jobs)

	// 5. One status write, then events and metrics.
	setStreamConditions(&si, st, conds, view)
	setKstatus(conds, kstatusView{OwnStalled: true})
	st.ObservedGeneration = si.Generation
	if stop, res, err := commitStatus(ctx, &r.reconcilerBase, &si, &si.Status, st, evq); stop {
		return res, err
	}
	r.deleteStartFailed(ctx, jobs, si.UID, si.Status.RecentJobs)
	for i, run := range added {
		observeRun("StreamIngest", si.Namespace, run)
		observeIngest(&si, run, outcomes[i])
	}
	setStreamGauges(&si)
	if view.SpecError != "" {
		return ctrl.Result{}, reconcile.TerminalError(fmt.Errorf("%s", view.SpecError))
	}
	return wake.result(), nil
}

// streamJobs lists the stream's own ingest Jobs (not those of a deleted predecessor with the same name).
func (r *StreamIngestReconciler) streamJobs(ctx context.Context, si *deltav1.StreamIngest) ([]batchv1.Job, error) {
	var list batchv1.JobList
	if err := r.List(ctx, &list, client.InNamespace(si.Namespace),
		client.MatchingLabels{deltav1.LabelStream: LabelValue(si.Name), deltav1.LabelOperation: string(JobIngest)}); err != nil {
		return nil, fmt.Errorf("list ingest Jobs of %s/%s: %w", si.Namespace, si.Name, err)
	}
	return slices.DeleteFunc(list.Items, func(j batchv1.Job) bool {
		ref := metav1.GetControllerOf(&j)
		return ref == nil || ref.UID != si.UID
	}), nil
}

// target reads the stream's DeltaTable; nil (view says why) when the stream cannot run.
func (r *StreamIngestReconciler) target(ctx context.Context, si *deltav1.StreamIngest, view *streamView) (*deltav1.DeltaTable, error) {
	names := []string{si.Spec.Target}
	if src := si.Spec.Source.DeltaTable; src != nil {
		names = append(names, src.Name)
	}
	var table *deltav1.DeltaTable
	for _, name := range names {
		var t deltav1.DeltaTable
		err := r.Get(ctx, types.NamespacedName{Namespace: si.Namespace, Name: name}, &t)
		if apierrors.IsNotFound(err) {
			view.TargetMissing = fmt.Sprintf("DeltaTable %q does not exist in namespace %s", name, si.Namespace)
			return nil, nil
		}
		if err != nil {
			return nil, fmt.Errorf("get DeltaTable %s/%s: %w", si.Namespace, name, err)
		}
		if table == nil {
			table = &t
		}
	}
	if si.Spec.Source.DeltaTable != nil {
		view.Unavailable = "ingesting another DeltaTable's changes (source.deltaTable) is not available in this release; " +
			"no batches run and nothing is written to DeltaTable " + si.Spec.Target + "; ingest files with source.files"
	}
	return table, nil
}

// startIngest creates the stream's next Job, named after the count of Jobs started, so that a retried pass
// meets the Job it created instead of starting another. It returns nil without error when that Job exists
// already (finished: a status write was lost; the count moves on).
func (r *StreamIngestReconciler) startIngest(ctx context.Context, si *deltav1.StreamIngest, table *deltav1.DeltaTable,
	st *deltav1.StreamIngestStatus, jobs []batchv1.Job, trigger string, due time.Time) (*batchv1.Job, error) {
	args, err := ingestArgs(si, table)
	if err != nil {
		return nil, specError{err}
	}
	template := si.Spec.JobTemplate
	if template == nil {
		template = table.Spec.JobTemplate // the table's pods settings (image, service account, node placement)
	}
	if err := r.checkJobTemplate(template); err != nil {
		return nil, err
	}
	if mode := si.EffectiveMode(); mode.IsKeyed() {
		// A maintenance Job that lost its work to this stream's batches runs alone (exclusive.go).
		holder, err := r.liveExclusiveMaintenance(ctx, table.Namespace, table.Name)
		if err != nil {
			return nil, err
		}
		if holder != "" {
			return nil, &yieldToMaintenance{Job: holder}
		}
	}
	req := &JobRequest{
		Kind: JobIngest, OwnerKind: "StreamIngest", Owner: si, Table: table, Stream: si.Name, Template: template,
		Args: args, Operations: []deltav1.Operation{deltav1.OperationIngest}, SlotKey: "job/" + strconv.FormatInt(st.JobsStarted, 10),
		Scheduled: due, Trigger: trigger, Generation: si.Generation, Image: r.WorkerImage,
	}
	if mode := si.EffectiveMode(); mode.IsKeyed() {
		req.KeyedWrite = strings.ToLower(string(mode))
	}
	name := req.Name()
	if slices.ContainsFunc(jobs, func(j batchv1.Job) bool { return j.Name == name }) {
		st.JobsStarted++
		return nil, nil
	}
	job := BuildJob(req)
	ticket, err := r.Admission.Admit(admissionRequest(job, req, "StreamIngest", si, true))
	if err != nil {
		return nil, err
	}
	if err := r.Create(ctx, job); err != nil {
		ticket.Cancel()
		if apierrors.IsInvalid(err) {
			return nil, specError{fmt.Errorf("the API server rejected the ingest Job built from this spec (check jobTemplate): %w", err)}
		}
		return nil, fmt.Errorf("create Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	st.JobsStarted++
	return job, nil
}

// pruneIngestJobs deletes the stream's finished Jobs beyond the newest keepIngestJobs once the persisted
// status records them (so no result is lost). Failures are retried next pass.
func (r *StreamIngestReconciler) pruneIngestJobs(ctx context.Context, si *deltav1.StreamIngest, jobs []batchv1.Job) {
	var done []*batchv1.Job
	for i := range jobs {
		if !isLive(&jobs[i]) {
			done = append(done, &jobs[i])
		}
	}
	if len(done) <= keepIngestJobs {
		return
	}
	slices.SortFunc(done, func(a, b *batchv1.Job) int { return b.CreationTimestamp.Compare(a.CreationTimestamp.Time) })
	recorded := map[string]bool{}
	for _, rec := range si.Status.RecentJobs {
		recorded[rec.JobName] = true
	}
	oldest := time.Time{}
	if n := len(si.Status.RecentJobs); n > 0 {
		oldest = si.Status.RecentJobs[n-1].When()
	}
	for _, j := range done[keepIngestJobs:] {
		_, _, cond := jobFinished(j)
		// Recorded, or older than everything recorded (pushed out of the history after being recorded).
		if !recorded[j.Name] && (cond == nil || len(si.Status.RecentJobs) < maxStreamJobs || cond.LastTransitionTime.After(oldest)) {
			continue
		}
		if err := client.IgnoreNotFound(r.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground))); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to delete an old ingest Job", "job", j.Name)
		}
	}
}
