package controllers

import (
	"context"
	"fmt"
	"slices"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// Jobs that cannot start. A worker Job whose pod cannot be created (a missing ServiceAccount: the Job
// controller reports FailedCreate events), cannot be scheduled (a missing PersistentVolumeClaim, requests
// no node satisfies: PodScheduled=False, reason Unschedulable) or cannot run its container (an image that
// cannot be pulled, a missing Secret: a waiting reason) would otherwise look "running" for up to
// activeDeadlineSeconds while it holds the table's lock. The reconcilers look at every live Job's pods
// (and, when it has none, its events) each startCheckInterval and say why in Ready's message; once
// jobTemplate.startTimeout has passed since the Job was created (waitingSince), the Job's owner marks it
// (AnnotationStartFailed), which makes it a finished, failed run everywhere (isLive, readRun): the lock is
// released, the run is recorded with reason StartFailed (history, Event, runs metric), and the owner deletes
// the Job once its status holds the record.

// startCheckInterval is how often a Job that has not started is looked at again.
const startCheckInterval = 20 * time.Second

// startFailed reports whether a Job was marked as never having started, and why.
func startFailed(job *batchv1.Job) (string, bool) {
	why, ok := job.Annotations[deltav1.AnnotationStartFailed]
	return why, ok
}

// jobStarted reports whether a pod of the Job ever ran: the Job's counters say so, or a pod got past
// Pending or has a container that started.
func jobStarted(job *batchv1.Job, pods []corev1.Pod) bool {
	if s := job.Status; ptrValue(s.Ready) > 0 || s.Succeeded > 0 || s.Failed > 0 {
		return true
	}
	for _, p := range ownPods(job, pods) {
		if p.Status.Phase == corev1.PodRunning || p.Status.Phase == corev1.PodSucceeded || p.Status.Phase == corev1.PodFailed {
			return true
		}
		for _, cs := range p.Status.ContainerStatuses {
			if cs.State.Running != nil || cs.State.Terminated != nil {
				return true
			}
		}
	}
	return false
}

func ptrValue(p *int32) int32 {
	if p == nil {
		return 0
	}
	return *p
}

// ownPods are the pods that belong to this Job (not to a deleted predecessor with the same name).
func ownPods(job *batchv1.Job, pods []corev1.Pod) []corev1.Pod {
	return slices.DeleteFunc(slices.Clone(pods), func(p corev1.Pod) bool {
		ref := metav1.GetControllerOf(&p)
		return ref != nil && ref.UID != job.UID
	})
}

// whyNotStarted explains why a Job that has not started has no running pod, from its pods and, when it has
// none, its events; "" when nothing says so yet (the pod is being scheduled or pulled).
func whyNotStarted(job *batchv1.Job, pods []corev1.Pod, events []corev1.Event) string {
	pods = ownPods(job, pods)
	if why := stuckPod(pods); why != "" {
		return why
	}
	for i := range pods {
		for _, c := range pods[i].Status.Conditions {
			if c.Type == corev1.PodScheduled && c.Status == corev1.ConditionFalse && c.Reason != "" {
				return sanitize(fmt.Sprintf("worker pod %s cannot be scheduled: %s: %s", pods[i].Name, c.Reason, c.Message), 512)
			}
		}
	}
	if len(pods) > 0 {
		return ""
	}
	var newest *corev1.Event
	for i := range events {
		e := &events[i]
		if e.Reason == "FailedCreate" && (newest == nil || eventTime(e).After(eventTime(newest))) {
			newest = e
		}
	}
	if newest != nil {
		return sanitize("Job "+job.Name+" cannot create its pod: "+newest.Message, 512)
	}
	return ""
}

func eventTime(e *corev1.Event) time.Time {
	switch {
	case !e.LastTimestamp.IsZero():
		return e.LastTimestamp.Time
	case !e.EventTime.IsZero():
		return e.EventTime.Time
	}
	return e.CreationTimestamp.Time
}

// waitingSince is when a Job began to wait for its pod: its creation, or its scheduled time when that is
// later. In a cluster the scheduled time (the reconciler's clock when it decided to start the Job) is never
// after the creation; with a clock that runs apart from the API server's (tests), it is the time the
// reconciler's own clock measures the wait from.
func waitingSince(job *batchv1.Job) time.Time {
	since := job.CreationTimestamp.Time
	for _, a := range []string{deltav1.AnnotationScheduledTime, deltav1.AnnotationResumedTime} {
		if t, err := time.Parse(time.RFC3339, job.Annotations[a]); err == nil && t.After(since) {
			since = t
		}
	}
	return since
}

// startTimeoutMessage is the run record's message for a Job past its start timeout.
func startTimeoutMessage(job *batchv1.Job, timeout time.Duration, why string) string {
	if why == "" {
		why = "no pod of the Job started; see kubectl describe job " + job.Name
	}
	return sanitize(fmt.Sprintf("the worker pod did not start within jobTemplate.startTimeout (%s), so the Job was deleted: %s", timeout, why), maxRecordMessage)
}

// jobEvents reads a Job's events uncached (the manager caches no Events), by the Job's UID.
func (r *reconcilerBase) jobEvents(ctx context.Context, job *batchv1.Job) ([]corev1.Event, error) {
	if r.APIReader == nil {
		return nil, nil
	}
	var list corev1.EventList
	sel := fields.SelectorFromSet(fields.Set{"involvedObject.uid": string(job.UID)})
	if err := r.APIReader.List(ctx, &list, client.InNamespace(job.Namespace), client.MatchingFieldsSelector{Selector: sel}); err != nil {
		return nil, fmt.Errorf("list the events of Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return list.Items, nil
}

// checkStarts looks at the live Jobs among jobs that have not started. It returns why each one has not (by
// Job name; "" when nothing says so yet) and asks w to look again soon. Jobs that owner started and that
// are older than timeout are marked start-failed, in jobs too, so that this pass already folds them as
// failed runs. A failure to read events only loses the explanation.
func (r *reconcilerBase) checkStarts(ctx context.Context, jobs []batchv1.Job, pods map[string][]corev1.Pod, owner types.UID, timeout time.Duration, now time.Time, w *wakeup) (map[string]string, error) {
	whys := map[string]string{}
	for i := range jobs {
		j := &jobs[i]
		if !isLive(j) || j.DeletionTimestamp != nil || jobStarted(j, pods[j.Name]) || ptr.Deref(j.Spec.Suspend, false) {
			continue // a suspended Job starts nothing by design: its timeout counts from its resumption
		}
		var events []corev1.Event
		if len(ownPods(j, pods[j.Name])) == 0 && j.Status.Active == 0 {
			var err error
			if events, err = r.jobEvents(ctx, j); err != nil {
				ctrl.LoggerFrom(ctx).Error(err, "Cannot read a Job's events to say why it does not start", "job", j.Name)
			}
		}
		why := whyNotStarted(j, pods[j.Name], events)
		whys[j.Name] = why
		ref := metav1.GetControllerOf(j)
		if ref == nil || ref.UID != owner {
			w.in(startCheckInterval)
			continue
		}
		if left := timeout - now.Sub(waitingSince(j)); left > 0 {
			w.in(min(left, startCheckInterval))
			continue
		}
		msg := startTimeoutMessage(j, timeout, why)
		patch := client.MergeFrom(j.DeepCopy())
		if j.Annotations == nil {
			j.Annotations = map[string]string{}
		}
		j.Annotations[deltav1.AnnotationStartFailed] = msg
		if err := r.Patch(ctx, j, patch); err != nil {
			if client.IgnoreNotFound(err) == nil {
				continue
			}
			return nil, fmt.Errorf("mark Job %s/%s as not started: %w", j.Namespace, j.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Worker Job did not start in time; stopping it", "job", j.Name, "timeout", timeout, "why", why)
	}
	return whys, nil
}

// deleteStartFailed deletes the start-failed Jobs that owner started once recorded (in the persisted
// status): their record is all that is left of them. Failures are retried next pass.
func (r *reconcilerBase) deleteStartFailed(ctx context.Context, jobs []batchv1.Job, owner types.UID, recorded []deltav1.RunRecord) {
	for i := range jobs {
		j := &jobs[i]
		ref := metav1.GetControllerOf(j)
		if _, marked := startFailed(j); !marked || ref == nil || ref.UID != owner || j.DeletionTimestamp != nil {
			continue
		}
		if !slices.ContainsFunc(recorded, func(rec deltav1.RunRecord) bool { return rec.JobName == j.Name }) {
			continue
		}
		if err := client.IgnoreNotFound(r.Delete(ctx, j, client.PropagationPolicy(metav1.DeletePropagationBackground))); err != nil {
			ctrl.LoggerFrom(ctx).Error(err, "Failed to delete a worker Job that did not start", "job", j.Name)
		}
	}
}
