package controllers

import (
	"fmt"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/utils/clock"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
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
	base := reconcilerBase{Client: mgr.GetClient(), Clock: cfg.Clock, Recorder: recorder, Lock: lock, WorkerImage: cfg.WorkerImage, AllowedImages: cfg.AllowedImages}
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
