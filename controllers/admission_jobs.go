package controllers

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/source"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// The Admission's view of running Jobs and its wake-ups: it counts live worker Jobs from the manager's Job
// informer (label-selected to deltakeeper's Jobs, see CacheOptions), and when capacity frees it wakes the
// reconcilers of the runs next in line through a channel source, instead of having hundreds of waiters poll.

// watchJobs feeds the Admission from the manager's Job informer.
func (a *Admission) watchJobs(ctx context.Context, c cache.Cache) error {
	inf, err := c.GetInformer(ctx, &batchv1.Job{})
	if err != nil {
		return fmt.Errorf("get the Job informer for admission: %w", err)
	}
	_, err = inf.AddEventHandler(toolscache.ResourceEventHandlerFuncs{
		AddFunc:    func(obj any) { a.observe(obj) },
		UpdateFunc: func(_, obj any) { a.observe(obj) },
		DeleteFunc: func(obj any) {
			if d, ok := obj.(toolscache.DeletedFinalStateUnknown); ok {
				obj = d.Obj
			}
			if j, ok := obj.(*batchv1.Job); ok {
				a.gone(types.NamespacedName{Namespace: j.Namespace, Name: j.Name})
			}
		},
	})
	if err != nil {
		return fmt.Errorf("watch Jobs for admission: %w", err)
	}
	return nil
}

// observe counts a live worker Job and stops counting a finished one.
func (a *Admission) observe(obj any) {
	j, ok := obj.(*batchv1.Job)
	if !ok || j.Labels[labelAppManagedBy] != appManagedBy {
		return
	}
	key := types.NamespacedName{Namespace: j.Namespace, Name: j.Name}
	if !isLive(j) {
		a.gone(key)
		return
	}
	slot := jobSlot{namespace: j.Namespace, kind: JobKind(j.Labels[deltav1.LabelOperation]), pods: int(max(ptr.Deref(j.Spec.Parallelism, 1), 1))}
	a.mu.Lock()
	old, had := a.running[key]
	a.running[key] = slot
	delete(a.reserved, key)
	if !had || old != slot {
		a.publishRunning()
	}
	a.mu.Unlock()
}

// gone stops counting a finished or deleted Job and hands its capacity on.
func (a *Admission) gone(key types.NamespacedName) {
	a.mu.Lock()
	_, had := a.running[key]
	delete(a.running, key)
	_, reserved := a.reserved[key]
	delete(a.reserved, key)
	if had {
		a.publishRunning()
	}
	a.mu.Unlock()
	if had || reserved {
		a.wakeHead()
	}
}

// wakeHead wakes the reconcilers of the runs that would get capacity now.
func (a *Admission) wakeHead() {
	now := a.clock.Now()
	a.mu.Lock()
	a.refill(now)
	_, next := a.evaluate(nil)
	wake := a.toWake(next, now)
	a.mu.Unlock()
	a.send(wake)
}

// toWake picks the owners among ws not woken within wakeDebounce. Called with mu held.
func (a *Admission) toWake(ws []*waiter, now time.Time) []Owner {
	var owners []Owner
	for _, w := range ws {
		if now.Sub(w.lastWake) < wakeDebounce || w.req.Owner.Kind == "" {
			continue
		}
		w.lastWake = now
		owners = append(owners, w.req.Owner)
	}
	return owners
}

// send enqueues the owners' reconciles. It never blocks: a full channel drops the wake-up, and the waiter
// looks again after requeueQueued anyway.
func (a *Admission) send(owners []Owner) {
	for _, o := range owners {
		a.mu.Lock()
		ch := a.wakeups[o.Kind]
		a.mu.Unlock()
		if ch == nil {
			continue
		}
		obj := ownerObject(o)
		if obj == nil {
			continue
		}
		select {
		case ch <- event.GenericEvent{Object: obj}:
		default:
		}
	}
}

// ownerObject is an empty object of the owner's kind and name, enough to enqueue its reconcile.
func ownerObject(o Owner) client.Object {
	meta := metav1.ObjectMeta{Namespace: o.Key.Namespace, Name: o.Key.Name}
	switch o.Kind {
	case "DeltaTable":
		return &deltav1.DeltaTable{ObjectMeta: meta}
	case "OptimizePolicy":
		return &deltav1.OptimizePolicy{ObjectMeta: meta}
	case "StreamIngest":
		return &deltav1.StreamIngest{ObjectMeta: meta}
	}
	return nil
}

// wakeSource is the source a controller of kind adds (WatchesRawSource) to be woken when its runs' turn
// comes. A nil Admission gives a source that never fires.
func (a *Admission) wakeSource(kind string) source.Source {
	ch := make(chan event.GenericEvent, 4096)
	if a != nil {
		a.mu.Lock()
		a.wakeups[kind] = ch
		a.mu.Unlock()
	}
	return source.Channel(ch, &handler.EnqueueRequestForObject{})
}

// publishRunning sets deltakeeper_worker_jobs_running from the running Jobs. Called with mu held.
func (a *Admission) publishRunning() {
	counts := map[[2]string]int{}
	for _, s := range a.running {
		counts[[2]string{s.namespace, metricKind(s.kind)}] += s.pods
	}
	workerJobsRunning.Reset()
	for k, n := range counts {
		workerJobsRunning.WithLabelValues(k[0], k[1]).Set(float64(n))
	}
}

// publishQueue sets deltakeeper_queue_length and deltakeeper_queue_oldest_wait_seconds. Called with mu held.
func (a *Admission) publishQueue(now time.Time) {
	counts := map[string]int{}
	var oldest time.Time
	for _, w := range a.queue {
		counts[metricKind(w.req.Kind)]++
		if oldest.IsZero() || w.since.Before(oldest) {
			oldest = w.since
		}
	}
	queueLength.Reset()
	for _, k := range []JobKind{JobInspect, JobMaintain, JobIngest} { // always a series: dashboards show 0, not "No data"
		queueLength.WithLabelValues(metricKind(k)).Set(0)
	}
	for k, n := range counts {
		queueLength.WithLabelValues(k).Set(float64(n))
	}
	if oldest.IsZero() {
		queueOldestWait.Set(0)
	} else {
		queueOldestWait.Set(now.Sub(oldest).Seconds())
	}
}

// metricKind is the kind label of the admission metrics: inspect, optimize, ingest, or the Job's operation.
func metricKind(k JobKind) string {
	if k == JobMaintain {
		return "optimize"
	}
	if k == "" {
		return "unknown"
	}
	return string(k)
}

// refreshMetrics publishes the queue gauges every few seconds (a scrape interval is 30 s or more; publishing at
// every Admit would walk a queue of thousands for each of thousands of calls) and drops stale waiters.
func (a *Admission) refreshMetrics(ctx context.Context) error {
	t := time.NewTicker(5 * time.Second)
	defer t.Stop()
	a.mu.Lock()
	a.publishQueue(a.clock.Now())
	a.mu.Unlock()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			now := a.clock.Now()
			a.mu.Lock()
			a.sweep(now)
			a.publishQueue(now)
			a.mu.Unlock()
		}
	}
}

// Stats is a snapshot for tests and logs: worker pods running or admitted, and runs waiting.
func (a *Admission) Stats() (running, waiting int) {
	a.mu.Lock()
	defer a.mu.Unlock()
	running, _ = a.usage()
	return running, len(a.queue)
}
