package envtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// A policy with parallelism 3 runs one Indexed Job pinned to the table's inspected version; status follows
// its indexes, and the run's result is index 0's, which made the commit.
func TestOptimizePolicy_ParallelismRunsOneIndexedJobAndRecordsIndexZerosCommit(t *testing.T) {
	ctx, ns, clk := controllerTest(t)
	inspectTable(t, clk, ns, "big", nil, 100) // inspected at version 3
	p := newPolicy(t, ns, "spread", deltav1.OptimizePolicySpec{
		Targets: deltav1.PolicyTargets{TableNames: []string{"big"}}, Parallelism: ptr.To[int32](3),
	})
	annotate(t, p, deltav1.AnnotationRunNow, "now-1")
	job := waitLiveJob(t, ns, "big", "maintain")

	spec := job.Spec
	if spec.CompletionMode == nil || *spec.CompletionMode != batchv1.IndexedCompletion || ptr.Deref(spec.Completions, 0) != 3 ||
		ptr.Deref(spec.Parallelism, 0) != 3 || ptr.Deref(spec.BackoffLimitPerIndex, -1) != deltav1.DefaultBackoffLimit {
		t.Fatalf("Job spec: completionMode %v completions %v parallelism %v backoffLimitPerIndex %v",
			spec.CompletionMode, spec.Completions, spec.Parallelism, spec.BackoffLimitPerIndex)
	}
	args := strings.Join(spec.Template.Spec.Containers[0].Args, " ")
	want := fmt.Sprintf("--share $(JOB_COMPLETION_INDEX)/3 --run-id %s --at-version 3 --share-wait ", job.Name)
	if !strings.Contains(args, want) || !strings.HasPrefix(args, "worker maintain s3://lake/big --optimize") {
		t.Fatalf("args %q lack %q", args, want)
	}
	if leaseHolder(t, ns, "big") == "" {
		t.Fatal("the table's lock is free while the scale-out Job runs")
	}

	// Index 1 fails once and is retried; indexes 1 and 2 finish: status shows it while index 0 waits.
	var fresh batchv1.Job
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), &fresh); err != nil {
		t.Fatal(err)
	}
	start := metav1.NewTime(clk.Now())
	fresh.Status.StartTime = &start
	fresh.Status.CompletedIndexes, fresh.Status.Failed, fresh.Status.Succeeded = "1,2", 1, 2
	if err := k8sClient.Status().Update(ctx, &fresh); err != nil {
		t.Fatal(err)
	}
	waitPolicy(t, p, "shows the indexes' progress", func(p *deltav1.OptimizePolicy) (bool, string) {
		for _, ts := range p.Status.Targets {
			if sh := ts.LastRun.Shares; ts.Table == "big" && sh != nil {
				return sh.Completed == "1,2" && sh.Retries == 1 && sh.Parallelism == 3 && sh.AtVersion == 3 && ts.LastRun.Result == deltav1.RunRunning,
					fmt.Sprintf("%+v", *sh)
			}
		}
		return false, fmt.Sprintf("%+v", p.Status.Targets)
	})

	// The shares' pods end; index 1's result is its share, index 0's the commit.
	clk.Step(time.Minute)
	share := &result.Result{Command: "maintain", Outcome: result.Succeeded, Ops: []result.Op{{Name: "optimize", Outcome: result.Succeeded, FilesAdded: 2}},
		Share: &result.Share{Run: job.Name, Index: 1, Count: 3, Version: 3, Units: 4}}
	commit := maintainResult(4)
	commit.Share = &result.Share{Run: job.Name, Index: 0, Count: 3, Version: 3, Committed: []int{0, 2}, Dropped: []int{1}, SupersededFiles: 2, UnitsCommitted: 9}
	indexPod(t, &fresh, 1, encode(t, share), clk.Now())
	indexPod(t, &fresh, 0, encode(t, commit), clk.Now().Add(-time.Second)) // the newest pod is index 1's
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(job), &fresh); err != nil {
		t.Fatal(err)
	}
	now := metav1.NewTime(clk.Now())
	fresh.Status.CompletedIndexes, fresh.Status.Succeeded, fresh.Status.CompletionTime = "0-2", 3, &now
	fresh.Status.Conditions = []batchv1.JobCondition{
		{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
		{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, Reason: "CompletionsReached", LastTransitionTime: now},
	}
	if err := k8sClient.Status().Update(ctx, &fresh); err != nil {
		t.Fatal(err)
	}
	got := waitPolicy(t, p, "records the run", func(p *deltav1.OptimizePolicy) (bool, string) {
		return len(p.Status.RecentRuns) == 1 && p.Status.RecentRuns[0].Result == deltav1.RunSucceeded, fmt.Sprintf("%+v", p.Status.RecentRuns)
	})
	rec := got.Status.RecentRuns[0]
	if rec.TableVersion == nil || *rec.TableVersion != 4 || rec.Shares == nil || rec.Shares.Committed != "0,2" || rec.Shares.Dropped != "1" ||
		rec.Shares.Completed != "0-2" || rec.Shares.SupersededFiles != 2 || rec.FilesRemoved != 60 {
		t.Fatalf("record %+v shares %+v: want index 0's commit at version 4", rec, rec.Shares)
	}
	eventually(t, "the table's lock released after the run", func() (bool, string) {
		h := leaseHolder(t, ns, "big")
		return h == "", "holder " + h
	})
}

// A policy whose table was never inspected has no version to pin: the scale-out run waits, it does not
// fall back to planning from whatever each pod reads. A run-now of a never-inspected table waits earlier,
// for the first inspection to apply the declared properties (the same wait every run-now has); either
// message is the wait, and no Job may start.
func TestOptimizePolicy_ParallelismWaitsForAVersionToPin(t *testing.T) {
	_, ns, _ := controllerTest(t)
	newTable(t, ns, "fresh", nil)
	p := newPolicy(t, ns, "spread", deltav1.OptimizePolicySpec{
		Targets: deltav1.PolicyTargets{TableNames: []string{"fresh"}}, Parallelism: ptr.To[int32](2),
	})
	annotate(t, p, deltav1.AnnotationRunNow, "now-1")
	waitPolicy(t, p, "waits for a version", func(p *deltav1.OptimizePolicy) (bool, string) {
		c := condition(p.Status.Conditions, deltav1.ConditionReady)
		return strings.Contains(c, "no inspected version yet") || strings.Contains(c, "waits for its first inspection"), c
	})
	if jobs := policyJobs(t, ns, "spread"); len(jobs) != 0 {
		t.Fatalf("%d maintenance Jobs started without a pinned version", len(jobs))
	}
}

// indexPod plays the Job controller and kubelet for one index of an Indexed Job.
func indexPod(t *testing.T, job *batchv1.Job, index int, message string, finished time.Time) {
	t.Helper()
	ctx := context.Background()
	ann := map[string]string{"batch.kubernetes.io/job-completion-index": fmt.Sprint(index)}
	for k, v := range job.Spec.Template.Annotations {
		ann[k] = v
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{
			Name: fmt.Sprintf("%s-%d-pod", job.Name, index), Namespace: job.Namespace,
			Labels: job.Spec.Template.Labels, Annotations: ann,
			OwnerReferences: []metav1.OwnerReference{{APIVersion: "batch/v1", Kind: "Job", Name: job.Name, UID: job.UID, Controller: ptr.To(true)}},
		},
		Spec: *job.Spec.Template.Spec.DeepCopy(),
	}
	if err := k8sClient.Create(ctx, pod); err != nil {
		t.Fatalf("create pod %d of %s: %v", index, job.Name, err)
	}
	at := metav1.NewTime(finished)
	pod.Status = corev1.PodStatus{Phase: corev1.PodSucceeded, ContainerStatuses: []corev1.ContainerStatus{{
		Name: "worker", Image: testWorkerImage, State: corev1.ContainerState{Terminated: &corev1.ContainerStateTerminated{
			ExitCode: 0, Reason: "Completed", Message: message, StartedAt: at, FinishedAt: at,
		}},
	}}}
	if err := k8sClient.Status().Update(ctx, pod); err != nil {
		t.Fatalf("set status of pod %d of %s: %v", index, job.Name, err)
	}
}
