package controllers

import (
	"context"
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/client-go/tools/events"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// Config is what the reconcilers need from the manager's command line.
type Config struct {
	// WorkerImage runs the worker Jobs unless a jobTemplate names another.
	WorkerImage string
	// Clock is the reconcilers' clock; tests pass a fake one.
	Clock clock.PassiveClock
	// EventRecorderName is the reporting controller of the Events (default "deltakeeper").
	EventRecorderName string
}

// CacheOptions restricts the manager's Job and Pod caches to deltakeeper's own worker Jobs and pods, so a
// cluster with thousands of unrelated pods costs the manager nothing.
func CacheOptions() cache.Options {
	ours := labels.SelectorFromSet(labels.Set{labelAppManagedBy: appManagedBy})
	return cache.Options{ByObject: map[client.Object]cache.ByObject{
		&batchv1.Job{}: {Label: ours},
		&corev1.Pod{}:  {Label: ours},
	}}
}

// SetupWithManager registers the three reconcilers.
func SetupWithManager(mgr ctrl.Manager, cfg Config) error {
	if cfg.WorkerImage == "" {
		return fmt.Errorf("no worker image configured")
	}
	if cfg.Clock == nil {
		cfg.Clock = clock.RealClock{}
	}
	if cfg.EventRecorderName == "" {
		cfg.EventRecorderName = "deltakeeper"
	}
	recorder := mgr.GetEventRecorder(cfg.EventRecorderName)
	lock := &TableLock{Client: mgr.GetClient(), Reader: mgr.GetAPIReader(), Clock: cfg.Clock}
	base := reconcilerBase{Client: mgr.GetClient(), Clock: cfg.Clock, Recorder: recorder, Lock: lock, WorkerImage: cfg.WorkerImage}
	if err := (&DeltaTableReconciler{reconcilerBase: base}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the DeltaTable controller: %w", err)
	}
	if err := (&OptimizePolicyReconciler{reconcilerBase: base}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the OptimizePolicy controller: %w", err)
	}
	if err := (&StreamIngestReconciler{Client: mgr.GetClient(), Clock: cfg.Clock, Recorder: recorder}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the StreamIngest controller: %w", err)
	}
	return nil
}

// reconcilerBase is what the Job-running reconcilers share.
type reconcilerBase struct {
	client.Client
	Clock       clock.PassiveClock
	Recorder    events.EventRecorder
	Lock        *TableLock
	WorkerImage string
}

// tableJobs lists the worker Jobs on a table, from any owner, from the cache.
func (r *reconcilerBase) tableJobs(ctx context.Context, namespace, table string) ([]batchv1.Job, error) {
	var list batchv1.JobList
	if err := r.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingLabels{deltav1.LabelTable: LabelValue(table)}); err != nil {
		return nil, fmt.Errorf("list Jobs of table %s/%s: %w", namespace, table, err)
	}
	jobs := list.Items[:0]
	for _, j := range list.Items {
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

// startJob takes the table's lock for the Job and creates it. It returns *LockBusy when the table is busy;
// an AlreadyExists error means a previous pass created the Job (the caller looks again).
func (r *reconcilerBase) startJob(ctx context.Context, job *batchv1.Job, table *deltav1.DeltaTable, tableJobs []batchv1.Job) error {
	if err := r.Lock.Acquire(ctx, table, job.Name, tableJobs); err != nil {
		return err
	}
	if err := r.Create(ctx, job); err != nil {
		if !isAlreadyExists(err) {
			// Free the table again; the next pass retries. A failed release only delays others by createGrace.
			_ = r.Lock.Release(ctx, table.Namespace, table.Name, job.Name)
		}
		return fmt.Errorf("create Job %s/%s: %w", job.Namespace, job.Name, err)
	}
	return nil
}
