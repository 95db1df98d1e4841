package controllers

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/apiutil"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// The reconcile skeleton every kind shares: read → fold finished Jobs (foldFinishedJobs) → act, collecting
// when to look again (wakeup) and the events to emit (eventQueue) → one status write, then the events
// (commitStatus). A change to how the reconcilers write status or fold Jobs is an edit here.

// reconcilerBase is what the reconcilers share: the client, the clock, the event recorder, the table lock
// and the worker image of the Jobs they start.
type reconcilerBase struct {
	client.Client
	Clock       clock.PassiveClock
	Recorder    events.EventRecorder
	Lock        *TableLock
	WorkerImage string
	// APIReader reads what the cache does not hold (a Job's events); nil in unit tests.
	APIReader client.Reader
	// AllowedImages are the images besides WorkerImage that a jobTemplate may name (checkJobTemplate).
	AllowedImages []string
	// Admission caps and queues worker Jobs; every Job creation asks it first (nil: no cap).
	Admission *Admission
}

// tableJobs lists the maintenance and inspect Jobs on a table, from any owner, from the cache. Ingest Jobs
// are left out: appends never conflict with compaction, clustering or vacuum (the worker retries the
// conflicts keyed modes can meet), so a stream neither waits for the table's lock nor holds it, and its
// Jobs are the StreamIngest's history, not the table's.
func (r *reconcilerBase) tableJobs(ctx context.Context, namespace, table string) ([]batchv1.Job, error) {
	var list batchv1.JobList
	if err := r.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingLabels{deltav1.LabelTable: LabelValue(table)}); err != nil {
		return nil, fmt.Errorf("list Jobs of table %s/%s: %w", namespace, table, err)
	}
	jobs := list.Items[:0]
	for _, j := range list.Items {
		if j.Labels[deltav1.LabelOperation] == string(JobIngest) {
			continue
		}
		if j.Annotations[deltav1.AnnotationTable] == table { // long names share a hashed label value only in theory
			jobs = append(jobs, j)
		}
	}
	return jobs, nil
}

// podsByJob lists the worker pods carrying a label selector and groups them by Job name.
func (r *reconcilerBase) podsByJob(ctx context.Context, namespace string, sel client.MatchingLabels) (map[string][]corev1.Pod, error) {
	var list corev1.PodList
	if err := r.List(ctx, &list, client.InNamespace(namespace), sel); err != nil {
		return nil, fmt.Errorf("list worker pods in %s: %w", namespace, err)
	}
	out := map[string][]corev1.Pod{}
	for _, p := range list.Items {
		if name := p.Labels[batchv1.JobNameLabel]; name != "" {
			out[name] = append(out[name], p)
		}
	}
	return out, nil
}

// startJob asks the admission for the Job, takes the table's lock for it and creates it. It returns *Queued
// when the Job must wait for admission, *LockBusy when the table is busy; an AlreadyExists error means a
// previous pass created the Job (the caller looks again).
func (r *reconcilerBase) startJob(ctx context.Context, job *batchv1.Job, table *deltav1.DeltaTable, tableJobs []batchv1.Job, ask AdmissionRequest) error {
	ticket, err := r.Admission.Admit(ask)
	if err != nil {
		return err
	}
	if err := r.Lock.Acquire(ctx, table, job.Name, tableJobs); err != nil {
		ticket.Cancel()
		return err
	}
	if err := r.Create(ctx, job); err != nil {
		ticket.Cancel()
		if !isAlreadyExists(err) {
			// Free the table again; the next pass retries. A failed release only delays others by createGrace.
			_ = r.Lock.Release(ctx, table, job.Name)
		}
		return fmt.Errorf("create Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}

// admissionRequest describes job for the Admission: owner is the object whose reconciler asks, urgent marks
// ingest triggers and run-now requests.
func admissionRequest(job *batchv1.Job, req *JobRequest, ownerKind string, owner client.Object, urgent bool) AdmissionRequest {
	due := req.Scheduled
	if due.IsZero() {
		due = owner.GetCreationTimestamp().Time
	}
	return AdmissionRequest{
		Job: client.ObjectKeyFromObject(job), Kind: req.Kind, Pods: int(ptr.Deref(job.Spec.Parallelism, 1)), Due: due, Urgent: urgent,
		Owner: Owner{Kind: ownerKind, Key: client.ObjectKeyFromObject(owner)},
	}
}

// wakeup collects the earliest time a reconcile wants to look again.
type wakeup struct{ after time.Duration }

// in asks to look again within d. A d that is not positive asks nothing: what it waits for is due now and
// this pass handles it.
func (w *wakeup) in(d time.Duration) {
	if d > 0 && (w.after == 0 || d < w.after) {
		w.after = d
	}
}

// result is the reconcile's result: requeue at the earliest wake-up, or wait for a watch event.
func (w wakeup) result() ctrl.Result { return ctrl.Result{RequeueAfter: w.after} }

// foldFinishedJobs reads the runs of the finished Jobs among jobs from their pods and merges them into
// history (the newest limit records kept). It returns the new history and the runs it added, which the
// caller applies to its status and explains in events. A finished Job whose pod the cache does not show yet
// is left for a later pass, which w schedules.
func foldFinishedJobs(history []deltav1.RunRecord, jobs []batchv1.Job, pods map[string][]corev1.Pod, now time.Time, limit int, w *wakeup) ([]deltav1.RunRecord, []*finishedRun) {
	var finished []finishedRun
	for i := range jobs {
		j := &jobs[i]
		if isLive(j) {
			continue
		}
		run, ready := readRun(j, pods[j.Name], now)
		if !ready {
			w.in(requeueResult)
			continue
		}
		finished = append(finished, run)
	}
	return mergeRuns(history, finished, limit)
}

// commitStatus ends every reconcile the same way: it writes the object's status once, when next differs from
// the status read, and then emits the queued events (never before: an event must not report a state that was
// never persisted, and a retried write would report it twice). When stop is true the caller returns res and
// err at once: the write lost to another writer or the object is gone (look again soon, report nothing), or
// the API failed.
func commitStatus[S any](ctx context.Context, r *reconcilerBase, obj client.Object, status, next *S, evq eventQueue) (stop bool, res ctrl.Result, err error) {
	if !equality.Semantic.DeepEqual(status, next) {
		*status = *next
		if err := r.Status().Update(ctx, obj); err != nil {
			if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
				return true, ctrl.Result{RequeueAfter: requeueSoon}, nil
			}
			return true, ctrl.Result{}, fmt.Errorf("update %s %s/%s status: %w", kindOf(r.Scheme(), obj), obj.GetNamespace(), obj.GetName(), err)
		}
	}
	evq.emit(r.Recorder, obj)
	return false, ctrl.Result{}, nil
}

// kindOf names obj's kind for messages (typed objects read from the cache carry no TypeMeta).
func kindOf(scheme *runtime.Scheme, obj runtime.Object) string {
	if gvk, err := apiutil.GVKForObject(obj, scheme); err == nil {
		return gvk.Kind
	}
	return fmt.Sprintf("%T", obj)
}
