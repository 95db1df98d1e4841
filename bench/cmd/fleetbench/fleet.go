package main

import (
	"context"
	"fmt"
	"log"
	"sync"
	"sync/atomic"
	"time"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

func newClient(cfg *rest.Config) (client.Client, error) {
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		return nil, err
	}
	if err := deltav1.AddToScheme(scheme); err != nil {
		return nil, err
	}
	cfg = rest.CopyConfig(cfg)
	cfg.QPS, cfg.Burst = 2000, 4000
	return client.New(cfg, client.Options{Scheme: scheme})
}

func namespaceName(i int) string { return fmt.Sprintf("fleet-%02d", i) }

// parallel runs f(0..n-1) on workers goroutines and returns the first error.
func parallel(n, workers int, f func(i int) error) error {
	var next atomic.Int64
	var first error
	var once sync.Once
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for {
				i := int(next.Add(1) - 1)
				if i >= n {
					return
				}
				if err := f(i); err != nil {
					once.Do(func() { first = err })
					return
				}
			}
		})
	}
	wg.Wait()
	return first
}

func ignoreExists(err error) error {
	if apierrors.IsAlreadyExists(err) {
		return nil
	}
	return err
}

// createFleet creates the namespaces (with the default ServiceAccount the worker pods run as: there is no
// ServiceAccount controller), the tables (inspected every 24 h, so nothing is due in the idle window once
// the first inspections ran) and the policies (each names tables/policies tables, scheduled daily twelve
// hours from now).
func createFleet(ctx context.Context, c client.Client, o options) error {
	for i := range o.nsCount {
		ns := namespaceName(i)
		if err := ignoreExists(c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})); err != nil {
			return err
		}
		if err := ignoreExists(c.Create(ctx, &corev1.ServiceAccount{ObjectMeta: metav1.ObjectMeta{Name: "default", Namespace: ns}})); err != nil {
			return err
		}
	}
	start := time.Now()
	err := parallel(o.tables, 32, func(i int) error {
		t := &deltav1.DeltaTable{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("t%05d", i), Namespace: namespaceName(i % o.nsCount)},
			Spec: deltav1.DeltaTableSpec{Location: fmt.Sprintf("s3://fleet/t%05d", i),
				InspectInterval: &metav1.Duration{Duration: 24 * time.Hour}},
		}
		if err := c.Create(ctx, t); err != nil || i < o.inspect {
			return err
		}
		return seedInspected(ctx, c, t)
	})
	if err != nil {
		return fmt.Errorf("create tables: %w", err)
	}
	log.Printf("created %d tables (%d of them as inspected) in %.0fs", o.tables, max(o.tables-o.inspect, 0), time.Since(start).Seconds())
	per := max(o.tables/max(o.policies, 1), 1)
	hour := (time.Now().UTC().Hour() + 12) % 24
	err = parallel(o.policies, 32, func(i int) error {
		// Policy i names tables i, i+policies, …: all in the namespace i % namespaces.
		ns := i % o.nsCount
		var names []string
		for k := range per {
			if t := i + k*o.policies; t < o.tables && t%o.nsCount == ns {
				names = append(names, fmt.Sprintf("t%05d", t))
			}
		}
		if len(names) == 0 {
			names = []string{fmt.Sprintf("t%05d", i%o.tables)}
		}
		p := &deltav1.OptimizePolicy{
			ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("p%04d", i), Namespace: namespaceName(ns)},
			Spec: deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: names},
				Schedule: fmt.Sprintf("%d %d * * *", i%60, hour), TimeZone: "UTC"},
		}
		return ignoreExists(c.Create(ctx, p))
	})
	if err != nil {
		return fmt.Errorf("create policies: %w", err)
	}
	return nil
}

// seedInspected gives a new table the status a first inspection leaves: reachable at its generation,
// inspected now, so that its next inspection is twelve hours or more away.
func seedInspected(ctx context.Context, c client.Client, t *deltav1.DeltaTable) error {
	now := metav1.Now()
	version := int64(3)
	t.Status.LastInspectedTime = &now
	t.Status.Version, t.Status.NumFiles, t.Status.NumSmallFiles, t.Status.SizeBytes = &version, 100, 4, 100<<20
	t.Status.Conditions = []metav1.Condition{{Type: deltav1.ConditionReachable, Status: metav1.ConditionTrue,
		Reason: deltav1.ReasonInspected, Message: "seeded by fleetbench", ObservedGeneration: t.Generation, LastTransitionTime: now}}
	return c.Status().Update(ctx, t)
}

// waitInspected waits until every table has been inspected once.
func waitInspected(ctx context.Context, c client.Client, m *child, o options, deadline time.Time) error {
	for time.Now().Before(deadline) {
		var list deltav1.DeltaTableList
		if err := c.List(ctx, &list); err != nil {
			return err
		}
		done := 0
		for _, t := range list.Items {
			if t.Status.LastInspectedTime != nil && t.Status.ActiveJob == "" {
				done++
			}
		}
		rec, _ := m.reconciles()
		log.Printf("%d of %d tables inspected; reconciles so far %v", done, o.tables, rec)
		if done >= o.tables {
			return nil
		}
		time.Sleep(10 * time.Second)
	}
	return fmt.Errorf("not every table was inspected within the timeout")
}

// completer plays kubelet: a pending worker pod is marked Succeeded with the termination message a worker
// writes for its operation.
type completer struct {
	cancel context.CancelFunc
	done   chan struct{}
	count  atomic.Int64
}

func startCompleter(ctx context.Context, c client.Client) *completer {
	ctx, cancel := context.WithCancel(ctx)
	k := &completer{cancel: cancel, done: make(chan struct{})}
	inspect := encodeResult(inspectResult())
	maintain := encodeResult(maintainResult())
	go func() {
		defer close(k.done)
		for ctx.Err() == nil {
			var pods corev1.PodList
			err := c.List(ctx, &pods, client.MatchingLabels{"app.kubernetes.io/managed-by": "deltakeeper"},
				client.MatchingFields{"status.phase": string(corev1.PodPending)})
			if err == nil {
				_ = parallel(len(pods.Items), 16, func(i int) error {
					p := &pods.Items[i]
					msg := inspect
					if p.Labels[deltav1.LabelOperation] == "maintain" {
						msg = maintain
					}
					now := metav1.Now()
					p.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
						Name: p.Spec.Containers[0].Name, Image: p.Spec.Containers[0].Image,
						State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
							ExitCode: 0, Reason: "Completed", Message: msg, StartedAt: now, FinishedAt: now}},
					}}}
					if c.Status().Update(ctx, p) == nil {
						k.count.Add(1)
					}
					return nil
				})
			}
			select {
			case <-ctx.Done():
			case <-time.After(250 * time.Millisecond):
			}
		}
	}()
	return k
}

func (k *completer) completed() int { return int(k.count.Load()) }

func (k *completer) stop() { k.cancel(); <-k.done }

func inspectResult() *result.Result {
	v := int64(3)
	return &result.Result{Command: "inspect", Outcome: result.Succeeded, Version: &v, DurationMs: 900,
		Table: &result.Table{Version: v, NumFiles: 100, SizeBytes: 100 << 20, NumSmallFiles: 4, SmallFileThreshold: 64 << 20,
			MinReaderVersion: 1, MinWriterVersion: 2}}
}

func maintainResult() *result.Result {
	v := int64(4)
	return &result.Result{Command: "maintain", Outcome: result.Succeeded, Version: &v, DurationMs: 4000}
}

func encodeResult(r *result.Result) string {
	data, err := r.Encode()
	if err != nil {
		panic(err)
	}
	return string(data)
}
