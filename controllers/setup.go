package controllers

import (
	"context"
	"fmt"
	"maps"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/manager"
)

// Config is what the reconcilers need from the manager's command line.
type Config struct {
	// WorkerImage runs the worker Jobs unless a jobTemplate names another.
	WorkerImage string
	// AllowedImages are the other images a jobTemplate may name: exact references or prefixes ending in *.
	AllowedImages []string
	// Clock is the reconcilers' clock; tests pass a fake one.
	Clock clock.PassiveClock
	// EventRecorderName is the reporting controller of the Events (default "deltakeeper").
	EventRecorderName string
	// LockNamespace holds the per-table lock Leases: the manager's own namespace (see TableLock).
	LockNamespace string
	// Admission caps and paces worker Jobs (--max-running-jobs and friends); zero fields take the defaults
	// (DefaultMaxRunningJobs, DefaultJobStartRate, DefaultJobStartBurst, no per-namespace cap). A negative
	// MaxRunning or StartRate turns that limit off.
	Admission AdmissionLimits
}

// CacheOptions restricts the manager's Job, Pod and Lease caches to deltakeeper's own worker Jobs, pods and
// table locks, so a cluster with thousands of unrelated pods (or node Leases) costs the manager nothing, and
// strips managed fields from everything cached: at 10,000 tables they are a large share of each object and
// nothing reads them.
func CacheOptions() cache.Options {
	ours := labels.SelectorFromSet(labels.Set{labelAppManagedBy: appManagedBy})
	return cache.Options{
		ByObject: map[client.Object]cache.ByObject{
			&batchv1.Job{}:          {Label: ours},
			&corev1.Pod{}:           {Label: ours},
			&coordinationv1.Lease{}: {Label: ours},
		},
		DefaultTransform: stripForCache,
	}
}

// WatchNamespaces limits the cache of opts (from CacheOptions) to namespaces, as a namespace-scoped install
// (--watch-namespaces) needs; none leaves it cluster-wide. The table lock reads its Leases from the cache, so
// Leases are also cached in lockNamespace (the manager's own, which the install need not watch), besides the
// watched namespaces (the old-style per-table Leases an older manager left there).
func WatchNamespaces(opts *cache.Options, namespaces []string, lockNamespace string) {
	watched := map[string]cache.Config{}
	for _, ns := range namespaces {
		if ns = strings.TrimSpace(ns); ns != "" {
			watched[ns] = cache.Config{}
		}
	}
	if len(watched) == 0 {
		opts.DefaultNamespaces = nil
		return
	}
	opts.DefaultNamespaces = watched
	leases := maps.Clone(watched)
	if lockNamespace != "" {
		leases[lockNamespace] = cache.Config{}
	}
	// ByObject is keyed by object pointers: find the Lease entry CacheOptions made.
	for obj, by := range opts.ByObject {
		if _, ok := obj.(*coordinationv1.Lease); ok {
			by.Namespaces = leases
			opts.ByObject[obj] = by
		}
	}
}

// stripForCache drops what nothing in the manager reads from cached objects: managed fields and the
// kubectl last-applied-configuration annotation (a second copy of the spec on every object applied with
// kubectl). At 10,000 tables they are a large share of each object.
func stripForCache(obj any) (any, error) {
	obj, err := cache.TransformStripManagedFields()(obj)
	if err != nil {
		return obj, err
	}
	if m, ok := obj.(metav1.Object); ok {
		if a := m.GetAnnotations(); a != nil {
			if _, ok := a[corev1.LastAppliedConfigAnnotation]; ok {
				delete(a, corev1.LastAppliedConfigAnnotation)
				m.SetAnnotations(a)
			}
		}
	}
	return obj, nil
}

// lockReader serves the table lock's reads: Leases from the cache (label-selected to the lock Leases), the
// rest (holder Jobs) from the API server. A stale Lease is safe: the lock's correctness rests on Create
// (AlreadyExists) and Update with the resourceVersion read (Conflict), so a stale read costs one retry,
// never a second holder; reading every table's Lease uncached on each reconcile was most of the manager's
// idle API load.
type lockReader struct {
	cached, live client.Reader
}

func (r lockReader) Get(ctx context.Context, key client.ObjectKey, obj client.Object, opts ...client.GetOption) error {
	if _, ok := obj.(*coordinationv1.Lease); ok {
		return r.cached.Get(ctx, key, obj, opts...)
	}
	return r.live.Get(ctx, key, obj, opts...)
}

func (r lockReader) List(ctx context.Context, list client.ObjectList, opts ...client.ListOption) error {
	return r.live.List(ctx, list, opts...)
}

// admissionLimits fills in the defaults.
func admissionLimits(l AdmissionLimits) AdmissionLimits {
	switch {
	case l.MaxRunning == 0:
		l.MaxRunning = DefaultMaxRunningJobs
	case l.MaxRunning < 0:
		l.MaxRunning = 0
	}
	switch {
	case l.StartRate == 0:
		l.StartRate = DefaultJobStartRate
	case l.StartRate < 0:
		l.StartRate = 0
	}
	if l.StartBurst <= 0 {
		l.StartBurst = DefaultJobStartBurst
	}
	l.MaxRunningPerNamespace = max(l.MaxRunningPerNamespace, 0)
	return l
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
	lock := &TableLock{Client: mgr.GetClient(), Reader: lockReader{cached: mgr.GetClient(), live: mgr.GetAPIReader()}, Clock: cfg.Clock,
		Namespace: cfg.LockNamespace}
	admission := NewAdmission(admissionLimits(cfg.Admission), nil)
	if err := admission.watchJobs(context.Background(), mgr.GetCache()); err != nil {
		return err
	}
	if err := mgr.Add(manager.RunnableFunc(admission.refreshMetrics)); err != nil {
		return fmt.Errorf("add the admission metrics: %w", err)
	}
	if err := mgr.Add(manager.RunnableFunc(lock.sweepStaleLocks)); err != nil {
		return fmt.Errorf("add the stale lock sweep: %w", err)
	}
	base := reconcilerBase{Client: mgr.GetClient(), Clock: cfg.Clock, Recorder: recorder, Lock: lock, WorkerImage: cfg.WorkerImage,
		AllowedImages: cfg.AllowedImages, APIReader: mgr.GetAPIReader(), Admission: admission}
	if err := indexTableIdentity(context.Background(), mgr.GetFieldIndexer()); err != nil {
		return err
	}
	if err := (&DeltaTableReconciler{reconcilerBase: base}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the DeltaTable controller: %w", err)
	}
	if err := (&OptimizePolicyReconciler{reconcilerBase: base}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the OptimizePolicy controller: %w", err)
	}
	if err := (&StreamIngestReconciler{reconcilerBase: base}).SetupWithManager(mgr); err != nil {
		return fmt.Errorf("set up the StreamIngest controller: %w", err)
	}
	return nil
}
