package envtest

import (
	"context"
	"fmt"
	"io"
	"os"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	eventsv1 "k8s.io/api/events/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/config"
	"sigs.k8s.io/controller-runtime/pkg/log/zap"
	metricsserver "sigs.k8s.io/controller-runtime/pkg/metrics/server"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/controllers"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// The controller tests run the real reconcilers in a manager against the suite's kube-apiserver. envtest has
// no Job controller and no kubelet, so the tests play both: they create a Job's pod with a terminated worker
// container carrying the result, and set the Job's terminal conditions by hand. Each test has its own
// namespace, its own manager watching only that namespace, and a fake clock; stepping the clock does not wake
// the workqueue, so tests poke the object (an annotation change) to make the reconciler look again.

const testWorkerImage = "deltakeeper:envtest"

var setLoggerOnce sync.Once

// startManager runs the controllers for one namespace until the test ends; the lock Leases live there too.
func startManager(t *testing.T, ns string, clk *clocktesting.FakeClock) {
	t.Helper()
	startManagerWith(t, []string{ns}, ns, clk, cfg, nil)
}

// startManagerFor runs the controllers for several namespaces, with the lock Leases in lockNS.
func startManagerFor(t *testing.T, namespaces []string, lockNS string, clk *clocktesting.FakeClock) {
	t.Helper()
	startManagerWith(t, namespaces, lockNS, clk, cfg, nil)
}

// startManagerWith runs the controllers for namespaces, with the lock Leases in lockNS, on restCfg (a test
// may wrap its transport), with tune changing the controllers' configuration (admission limits).
// It returns a function that stops the manager (a restart), which the test's cleanup also calls.
func startManagerWith(t *testing.T, namespaces []string, lockNS string, clk *clocktesting.FakeClock, restCfg *rest.Config,
	tune func(*controllers.Config)) (stop func()) {
	t.Helper()
	setLoggerOnce.Do(func() {
		w := io.Writer(io.Discard)
		if os.Getenv("ENVTEST_LOG") != "" {
			w = os.Stderr
		}
		ctrl.SetLogger(zap.New(zap.WriteTo(w), zap.UseDevMode(true)))
	})
	cacheOpts := controllers.CacheOptions()
	controllers.WatchNamespaces(&cacheOpts, namespaces, lockNS)
	mgr, err := ctrl.NewManager(restCfg, ctrl.Options{
		Scheme:                 scheme,
		Cache:                  cacheOpts,
		Metrics:                metricsserver.Options{BindAddress: "0"},
		HealthProbeBindAddress: "0",
		Controller:             config.Controller{SkipNameValidation: ptr.To(true)},
	})
	if err != nil {
		t.Fatal(err)
	}
	ctrlCfg := controllers.Config{WorkerImage: testWorkerImage, Clock: clk, LockNamespace: lockNS}
	if tune != nil {
		tune(&ctrlCfg)
	}
	if err := controllers.SetupWithManager(mgr, ctrlCfg); err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- mgr.Start(ctx) }()
	var once sync.Once
	stop = func() {
		once.Do(func() {
			cancel()
			if err := <-done; err != nil {
				t.Errorf("manager: %v", err)
			}
		})
	}
	t.Cleanup(stop)
	return stop
}

// controllerTest creates a namespace, a fake clock at the real now (API server timestamps are real) and a
// manager.
func controllerTest(t *testing.T) (context.Context, string, *clocktesting.FakeClock) {
	t.Helper()
	ns := newNamespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	startManager(t, ns, clk)
	return context.Background(), ns, clk
}

// eventually polls cond until it holds or the timeout passes.
func eventually(t *testing.T, what string, cond func() (bool, string)) {
	t.Helper()
	deadline := time.Now().Add(20 * time.Second)
	last := ""
	for time.Now().Before(deadline) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("timed out waiting for %s; last: %s", what, last)
}

// consistently checks cond for a while (things that must not happen).
func consistently(t *testing.T, what string, d time.Duration, cond func() (bool, string)) {
	t.Helper()
	for end := time.Now().Add(d); time.Now().Before(end); time.Sleep(50 * time.Millisecond) {
		if ok, msg := cond(); !ok {
			t.Fatalf("%s: %s", what, msg)
		}
	}
}

var pokes atomic.Int64

// poke changes an annotation so the object's reconciler looks again (after a clock step).
func poke(t *testing.T, obj client.Object) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{"test.deltakeeper.io/poke":"%d"}}}`, pokes.Add(1))
	if err := k8sClient.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("poke %s: %v", obj.GetName(), err)
	}
}

// annotate sets an annotation (run-now requests).
func annotate(t *testing.T, obj client.Object, key, value string) {
	t.Helper()
	patch := fmt.Sprintf(`{"metadata":{"annotations":{%q:%q}}}`, key, value)
	if err := k8sClient.Patch(context.Background(), obj, client.RawPatch("application/merge-patch+json", []byte(patch))); err != nil {
		t.Fatalf("annotate %s: %v", obj.GetName(), err)
	}
}

// tableJobs lists the worker Jobs on a table, optionally of one operation.
func tableJobs(t *testing.T, ns, table, op string) []batchv1.Job {
	t.Helper()
	sel := client.MatchingLabels{deltav1.LabelTable: table}
	if op != "" {
		sel[deltav1.LabelOperation] = op
	}
	var list batchv1.JobList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns), sel); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func liveJobs(jobs []batchv1.Job) []string {
	var names []string
	for _, j := range jobs {
		done := false
		for _, c := range j.Status.Conditions {
			if (c.Type == batchv1.JobComplete || c.Type == batchv1.JobFailed) && c.Status == corev1.ConditionTrue {
				done = true
			}
		}
		if !done && j.DeletionTimestamp == nil {
			names = append(names, j.Name)
		}
	}
	return names
}

// waitLiveJob waits until exactly one live Job of op runs on the table and returns it.
func waitLiveJob(t *testing.T, ns, table, op string) *batchv1.Job {
	t.Helper()
	var found *batchv1.Job
	eventually(t, "a live "+op+" Job on table "+table, func() (bool, string) {
		jobs := tableJobs(t, ns, table, op)
		live := liveJobs(jobs)
		if len(live) != 1 {
			return false, fmt.Sprintf("live %v", live)
		}
		for i := range jobs {
			if jobs[i].Name == live[0] {
				found = &jobs[i]
			}
		}
		return true, ""
	})
	return found
}

// finishJob plays kubelet and Job controller: a pod whose worker container exited with code and message,
// then the Job's terminal conditions at the fake clock's time.
func finishJob(t *testing.T, clk *clocktesting.FakeClock, job *batchv1.Job, exitCode int32, message string) {
	t.Helper()
	ctx := context.Background()
	now := metav1.NewTime(clk.Now())
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: job.Name + "-pod", Namespace: job.Namespace,
			Labels: job.Spec.Template.Labels, Annotations: job.Spec.Template.Annotations,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}},
		},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	if err := k8sClient.Create(ctx, pod); err != nil {
		t.Fatalf("create pod of %s: %v", job.Name, err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "worker", Image: testWorkerImage, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: exitCode, Reason: "Completed", Message: message, StartedAt: now, FinishedAt: now,
		}},
	}}}
	if exitCode != 0 {
		pod.Status.Phase = corev1.PodFailed
		pod.Status.ContainerStatuses[0].State.Terminated.Reason = "Error"
	}
	if err := k8sClient.Status().Update(ctx, pod); err != nil {
		t.Fatalf("set pod status of %s: %v", job.Name, err)
	}
	var fresh batchv1.Job
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), &fresh); err != nil {
		t.Fatal(err)
	}
	start := metav1.NewTime(clk.Now().Add(-time.Second))
	fresh.Status.StartTime = &start
	if exitCode == 0 {
		fresh.Status.Succeeded = 1
		fresh.Status.CompletionTime = &now
		fresh.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
		}
	} else {
		fresh.Status.Failed = 1
		reason := "BackoffLimitExceeded"
		if exitCode == 2 {
			reason = "PodFailurePolicy"
		}
		fresh.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobFailureTarget, Status: corev1.ConditionTrue, Reason: reason, LastTransitionTime: now},
			{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: reason, Message: "Job has reached the specified backoff limit", LastTransitionTime: now},
		}
	}
	if err := k8sClient.Status().Update(ctx, &fresh); err != nil {
		t.Fatalf("finish Job %s: %v", job.Name, err)
	}
}

// encode renders a worker result as the worker writes it.
func encode(t *testing.T, r *result.Result) string {
	t.Helper()
	data, err := r.Encode()
	if err != nil {
		t.Fatal(err)
	}
	return string(data)
}

// inspectResult is a successful inspect report.
func inspectResult(version, files, small int64, clustering ...string) *result.Result {
	tbl := &result.Table{Version: version, NumFiles: files, SizeBytes: files << 20, NumSmallFiles: small, SmallFileThreshold: 64 << 20,
		ClusteringColumns: clustering, MinReaderVersion: 1, MinWriterVersion: 2}
	for _, c := range clustering {
		tbl.Quality = append(tbl.Quality, result.ColumnQuality{Column: c, Status: "ok", NumFiles: files, NumFilesWithStats: files,
			AvgDepth: 2.5, MaxDepth: 4, OverlapRatio: 0.1, SkippingEffectiveness: 0.9})
	}
	return &result.Result{Command: "inspect", Outcome: result.Succeeded, Version: &version, DurationMs: 900, Table: tbl}
}

// maintainResult is a successful maintenance report.
func maintainResult(version int64) *result.Result {
	return &result.Result{Command: "maintain", Outcome: result.Succeeded, Version: &version, DurationMs: 61000,
		Table: &result.Table{Version: version, NumFiles: 5, SizeBytes: 5 << 30, MinReaderVersion: 1, MinWriterVersion: 2},
		Ops: []result.Op{
			{Name: "optimize", Outcome: result.Succeeded, Version: &version, FilesAdded: 5, FilesRemoved: 60, BytesAdded: 5 << 30, BytesRemoved: 5 << 30},
			{Name: "checkpoint", Outcome: result.Succeeded},
		}}
}

// newTable creates an S3 DeltaTable with static keys.
func newTable(t *testing.T, ns, name string, labels map[string]string) *deltav1.DeltaTable {
	t.Helper()
	table := &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Labels: labels},
		Spec: deltav1.DeltaTableSpec{
			Location: "s3://lake/" + name,
			Storage: &deltav1.StorageSpec{S3: &deltav1.S3Storage{Endpoint: "https://minio.storage.svc:9000", ForcePathStyle: true,
				Credentials: &deltav1.S3Credentials{SecretRef: &deltav1.S3SecretRef{Name: "lake-keys"}}}},
		},
	}
	if err := k8sClient.Create(context.Background(), table); err != nil {
		t.Fatal(err)
	}
	return table
}

// inspectTable creates a table and completes its first inspect Job with the given number of small files.
func inspectTable(t *testing.T, clk *clocktesting.FakeClock, ns, name string, labels map[string]string, small int64) *deltav1.DeltaTable {
	t.Helper()
	table := newTable(t, ns, name, labels)
	job := waitLiveJob(t, ns, name, "inspect")
	finishJob(t, clk, job, 0, encode(t, inspectResult(3, 100, small)))
	waitTable(t, table, "inspected", func(tb *deltav1.DeltaTable) (bool, string) {
		return tb.Status.LastInspectedTime != nil && tb.Status.ActiveJob == "", fmt.Sprintf("%+v", tb.Status)
	})
	eventually(t, "the table's lock released", func() (bool, string) {
		h := leaseHolder(t, ns, name)
		return h == "", "holder " + h
	})
	return table
}

// waitTable waits until the table's status satisfies cond.
func waitTable(t *testing.T, table *deltav1.DeltaTable, what string, cond func(*deltav1.DeltaTable) (bool, string)) *deltav1.DeltaTable {
	t.Helper()
	var got deltav1.DeltaTable
	eventually(t, "table "+table.Name+" "+what, func() (bool, string) {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(table), &got); err != nil {
			return false, err.Error()
		}
		return cond(&got)
	})
	return &got
}

// waitPolicy waits until the policy's status satisfies cond.
func waitPolicy(t *testing.T, p *deltav1.OptimizePolicy, what string, cond func(*deltav1.OptimizePolicy) (bool, string)) *deltav1.OptimizePolicy {
	t.Helper()
	var got deltav1.OptimizePolicy
	eventually(t, "policy "+p.Name+" "+what, func() (bool, string) {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(p), &got); err != nil {
			return false, err.Error()
		}
		return cond(&got)
	})
	return &got
}

// condition returns "Status/Reason: message" of a condition, or "".
func condition(conds []metav1.Condition, condType string) string {
	c := meta.FindStatusCondition(conds, condType)
	if c == nil {
		return ""
	}
	return string(c.Status) + "/" + c.Reason + ": " + c.Message
}

// leaseHolder is the Job holding the lock of table ns/name, whose Lease the test manager keeps in ns; ""
// when the table is free (a released lock has no Lease).
func leaseHolder(t *testing.T, ns, table string) string {
	t.Helper()
	return leaseHolderIn(t, ns, ns, table)
}

// leaseHolderIn is leaseHolder with the lock Leases in lockNS.
func leaseHolderIn(t *testing.T, lockNS, ns, table string) string {
	t.Helper()
	var dt deltav1.DeltaTable
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: table}, &dt); err != nil {
		return "(no table: " + err.Error() + ")"
	}
	name, err := controllers.TableLeaseName(&dt)
	if err != nil {
		t.Fatal(err)
	}
	var lease coordinationv1.Lease
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: lockNS, Name: name}, &lease); err != nil {
		if apierrors.IsNotFound(err) {
			return ""
		}
		return "(no lease: " + err.Error() + ")"
	}
	return ptr.Deref(lease.Spec.HolderIdentity, "")
}

// waitEvent waits for an events.k8s.io Event with reason about the named object.
func waitEvent(t *testing.T, ns, regarding, reason, noteContains string) {
	t.Helper()
	eventually(t, "event "+reason+" about "+regarding, func() (bool, string) {
		var list eventsv1.EventList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		var seen []string
		for _, e := range list.Items {
			if e.Regarding.Name == regarding && e.Reason == reason && strings.Contains(e.Note, noteContains) {
				return true, ""
			}
			seen = append(seen, e.Regarding.Name+":"+e.Reason)
		}
		return false, strings.Join(seen, ", ")
	})
}

func clientKey(obj client.Object) client.ObjectKey { return client.ObjectKeyFromObject(obj) }
