package envtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// Jobs that cannot start. envtest runs no Job controller, scheduler or kubelet, so each test plays the part
// that would report the problem: the Job controller's FailedCreate event for a pod the API server refuses
// (a missing ServiceAccount), or the PodScheduled=False/Unschedulable condition the scheduler sets on a pod
// it cannot place (a missing PersistentVolumeClaim, requests no node has).

// failedCreateEvent records what the Job controller reports when the API server refuses its pod.
func failedCreateEvent(t *testing.T, job *batchv1.Job, msg string) {
	t.Helper()
	now := metav1.Now()
	ev := &corev1.Event{
		ObjectMeta:     metav1.ObjectMeta{GenerateName: job.Name + ".", Namespace: job.Namespace},
		InvolvedObject: corev1.ObjectReference{Kind: "Job", APIVersion: "batch/v1", Namespace: job.Namespace, Name: job.Name, UID: job.UID},
		Reason:         "FailedCreate", Message: msg, Type: corev1.EventTypeWarning, Count: 3,
		Source:         corev1.EventSource{Component: "job-controller"},
		FirstTimestamp: now, LastTimestamp: now,
	}
	if err := k8sClient.Create(context.Background(), ev); err != nil {
		t.Fatal(err)
	}
}

// unschedulablePod creates the Job's pod as the scheduler leaves it when no node fits: Pending, with
// PodScheduled=False reason Unschedulable and the scheduler's message.
func unschedulablePod(t *testing.T, job *batchv1.Job, msg string) {
	t.Helper()
	ctx := context.Background()
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
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{
		Type: corev1.PodScheduled, Status: corev1.ConditionFalse, Reason: corev1.PodReasonUnschedulable, Message: msg,
		LastTransitionTime: metav1.Now(),
	}}}
	if err := k8sClient.Status().Update(ctx, pod); err != nil {
		t.Fatalf("set pod status of %s: %v", job.Name, err)
	}
}

// waitJobGone waits until the Job is deleted.
func waitJobGone(t *testing.T, job *batchv1.Job) {
	t.Helper()
	eventually(t, "Job "+job.Name+" deleted", func() (bool, string) {
		err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(job), &batchv1.Job{})
		return apierrors.IsNotFound(err), fmt.Sprint(err)
	})
}

// passStartTimeout moves the clock past job's start timeout (counted from its creation, an API server
// time) and pokes obj.
func passStartTimeout(t *testing.T, clk *clocktesting.FakeClock, job *batchv1.Job, timeout time.Duration, obj client.Object) {
	t.Helper()
	since := job.CreationTimestamp.Time
	if sched, err := time.Parse(time.RFC3339, job.Annotations[deltav1.AnnotationScheduledTime]); err == nil && sched.After(since) {
		since = sched // the manager measures from the later of the two (controllers.waitingSince)
	}
	if at := since.Add(timeout + 2*time.Second); at.After(clk.Now()) {
		clk.SetTime(at)
	}
	poke(t, obj)
}

func TestDeltaTable_JobWithoutItsServiceAccountIsExplainedThenStopped(t *testing.T) {
	ctx, ns, clk := controllerTest(t)
	table := &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec: deltav1.DeltaTableSpec{
			Location: "s3://lake/orders",
			Storage: &deltav1.StorageSpec{S3: &deltav1.S3Storage{Endpoint: "https://minio.storage.svc:9000",
				Credentials: &deltav1.S3Credentials{SecretRef: &deltav1.S3SecretRef{Name: "lake-keys"}}}},
			JobTemplate: &deltav1.JobTemplate{ServiceAccountName: "lake-reader"},
		},
	}
	if err := k8sClient.Create(ctx, table); err != nil {
		t.Fatal(err)
	}
	job := waitLiveJob(t, ns, "orders", "inspect")
	if sa := job.Spec.Template.Spec.ServiceAccountName; sa != "lake-reader" {
		t.Fatalf("the Job runs as %q", sa)
	}
	failedCreateEvent(t, job, `Error creating: pods "`+job.Name+`-x" is forbidden: error looking up service account `+ns+`/lake-reader: serviceaccount "lake-reader" not found`)
	poke(t, table)
	waitTable(t, table, "says why the Job does not start", func(tb *deltav1.DeltaTable) (bool, string) {
		ready := condition(tb.Status.Conditions, deltav1.ConditionReady)
		return strings.Contains(ready, "cannot create its pod") && strings.Contains(ready, `serviceaccount "lake-reader" not found`), ready
	})

	passStartTimeout(t, clk, job, deltav1.DefaultStartTimeout, table)
	waitJobGone(t, job)
	got := waitTable(t, table, "records the failed start", func(tb *deltav1.DeltaTable) (bool, string) {
		return len(tb.Status.RecentRuns) > 0 && tb.Status.RecentRuns[0].JobName == job.Name, fmt.Sprintf("%+v", tb.Status.RecentRuns)
	})
	run := got.Status.RecentRuns[0]
	if run.Result != deltav1.RunFailed || run.Reason != deltav1.ReasonStartFailed || !strings.Contains(run.Message, "startTimeout (10m0s)") ||
		!strings.Contains(run.Message, "lake-reader") {
		t.Errorf("run = %+v: want Failed/StartFailed naming the timeout and the missing ServiceAccount", run)
	}
	if ready := condition(got.Status.Conditions, deltav1.ConditionReady); !strings.HasPrefix(ready, "False/StartFailed") || got.Status.FailedInspections != 1 {
		t.Errorf("Ready = %q, failedInspections %d: want False/StartFailed after one failed attempt", ready, got.Status.FailedInspections)
	}
	if h := leaseHolder(t, ns, "orders"); h != "" {
		t.Errorf("the lock is still held by %q", h)
	}
	waitEvent(t, ns, "orders", "StartFailed", "did not start")
}

func TestDeltaTable_UnschedulablePodIsExplainedThenStopped(t *testing.T) {
	ctx, ns, clk := controllerTest(t)
	table := &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: "local", Namespace: ns},
		Spec: deltav1.DeltaTableSpec{
			Location: "file:///data/tables/local",
			Storage:  &deltav1.StorageSpec{Local: &deltav1.LocalStorage{ClaimName: "lake-data"}},
		},
	}
	if err := k8sClient.Create(ctx, table); err != nil {
		t.Fatal(err)
	}
	job := waitLiveJob(t, ns, "local", "inspect")
	// What the scheduler says about a pod whose claim does not exist.
	unschedulablePod(t, job, `0/3 nodes are available: persistentvolumeclaim "lake-data" not found. preemption: 0/3 nodes are available: 3 Preemption is not helpful for scheduling.`)
	poke(t, table)
	waitTable(t, table, "says why the pod is not scheduled", func(tb *deltav1.DeltaTable) (bool, string) {
		ready := condition(tb.Status.Conditions, deltav1.ConditionReady)
		return strings.Contains(ready, "cannot be scheduled: Unschedulable") && strings.Contains(ready, `persistentvolumeclaim "lake-data" not found`), ready
	})
	passStartTimeout(t, clk, job, deltav1.DefaultStartTimeout, table)
	waitJobGone(t, job)
	waitTable(t, table, "records the failed start", func(tb *deltav1.DeltaTable) (bool, string) {
		runs := tb.Status.RecentRuns
		return len(runs) > 0 && runs[0].Reason == deltav1.ReasonStartFailed && strings.Contains(runs[0].Message, "lake-data"), fmt.Sprintf("%+v", runs)
	})
	eventually(t, "the lock released", func() (bool, string) { h := leaseHolder(t, ns, "local"); return h == "", h })
}

func TestOptimizePolicy_JobWithImpossibleRequestsIsExplainedThenStopped(t *testing.T) {
	_, ns, clk := controllerTest(t)
	table := inspectTable(t, clk, ns, "big", nil, 500)
	p := newPolicy(t, ns, "huge", deltav1.OptimizePolicySpec{
		Targets: deltav1.PolicyTargets{TableNames: []string{"big"}},
		JobTemplate: &deltav1.JobTemplate{
			Resources:    corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500")}},
			StartTimeout: &metav1.Duration{Duration: 2 * time.Minute},
		},
	})
	annotate(t, p, deltav1.AnnotationRunNow, "now")
	job := waitLiveJob(t, ns, "big", "maintain")
	unschedulablePod(t, job, "0/3 nodes are available: 3 Insufficient cpu. preemption: 0/3 nodes are available: 3 No preemption victims found for incoming pod.")
	poke(t, table)
	waitTable(t, table, "says why the policy's Job does not start", func(tb *deltav1.DeltaTable) (bool, string) {
		ready := condition(tb.Status.Conditions, deltav1.ConditionReady)
		return strings.Contains(ready, "Insufficient cpu"), ready
	})

	// The policy's own startTimeout (2m) applies, not the default.
	passStartTimeout(t, clk, job, 2*time.Minute, p)
	waitJobGone(t, job)
	got := waitPolicy(t, p, "records the failed start", func(p *deltav1.OptimizePolicy) (bool, string) {
		for _, r := range p.Status.RecentRuns {
			if r.JobName == job.Name && r.Result == deltav1.RunFailed && r.Reason == deltav1.ReasonStartFailed {
				return true, ""
			}
		}
		return false, fmt.Sprintf("%+v", p.Status.RecentRuns)
	})
	if c := condition(got.Status.Conditions, deltav1.ConditionLastRunSucceeded); !strings.HasPrefix(c, "False/StartFailed") || !strings.Contains(c, "Insufficient cpu") {
		t.Errorf("LastRunSucceeded = %q", c)
	}
	waitEvent(t, ns, "huge", "StartFailed", "Insufficient cpu")
	eventually(t, "the lock released", func() (bool, string) { h := leaseHolder(t, ns, "big"); return h == "", h })
}

func TestStreamIngest_JobWithAnUnpullableImageIsExplainedThenStopped(t *testing.T) {
	_, ns, clk := controllerTest(t)
	newTable(t, ns, "clicks", nil)
	si := newStream(t, ns, "clicks-csv", "clicks", nil)
	job := waitIngestJob(t, si)
	// What the kubelet reports for an image it cannot pull: the pod is scheduled, its container waits.
	ctx := context.Background()
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: job.Name + "-pod", Namespace: ns, Labels: job.Spec.Template.Labels,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}},
		},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	if err := k8sClient.Create(ctx, pod); err != nil {
		t.Fatal(err)
	}
	pod.Status = corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "worker", Image: testWorkerImage, State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{
			Reason: "ImagePullBackOff", Message: `Back-off pulling image "deltakeeper:envtest"`}},
	}}}
	if err := k8sClient.Status().Update(ctx, pod); err != nil {
		t.Fatal(err)
	}
	poke(t, si)
	waitStream(t, si, "says why the Job does not start", func(s *deltav1.StreamIngest) (bool, string) {
		ready := condition(s.Status.Conditions, deltav1.ConditionReady)
		return strings.Contains(ready, "ImagePullBackOff"), ready
	})
	passStartTimeout(t, clk, job, deltav1.DefaultStartTimeout, si)
	waitJobGone(t, job)
	waitStream(t, si, "records the failed start", func(s *deltav1.StreamIngest) (bool, string) {
		for _, r := range s.Status.RecentJobs {
			if r.JobName == job.Name && r.Result == deltav1.RunFailed && r.Reason == deltav1.ReasonStartFailed && strings.Contains(r.Message, "ImagePullBackOff") {
				return s.Status.ActiveJob == "", ""
			}
		}
		return false, fmt.Sprintf("%+v", s.Status.RecentJobs)
	})
}
