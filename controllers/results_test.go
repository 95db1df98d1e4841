package controllers

import (
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

var finishTime = time.Date(2026, 5, 21, 3, 5, 0, 0, time.UTC)

// finishedJob is a maintenance Job that ended at finishTime.
func finishedJob(succeeded bool, condReason string) *batchv1.Job {
	cond := batchv1.JobCondition{Type: batchv1.JobFailed, Status: corev1.ConditionTrue, Reason: condReason,
		Message: "details", LastTransitionTime: metav1.NewTime(finishTime)}
	job := &batchv1.Job{
		ObjectMeta: metav1.ObjectMeta{Name: "orders-maintain-abc", UID: "job-uid", Labels: map[string]string{deltav1.LabelOperation: "maintain"},
			Annotations: map[string]string{deltav1.AnnotationTable: "orders", deltav1.AnnotationOperations: "Optimize,Checkpoint",
				deltav1.AnnotationTrigger: "SmallFiles", deltav1.AnnotationScheduledTime: "2026-05-21T03:00:00Z"}},
		Status: batchv1.JobStatus{StartTime: &metav1.Time{Time: finishTime.Add(-time.Minute)}},
	}
	if succeeded {
		cond.Type, cond.Reason, cond.Message = batchv1.JobComplete, "", ""
		job.Status.CompletionTime = &metav1.Time{Time: finishTime}
	}
	job.Status.Conditions = []batchv1.JobCondition{cond}
	return job
}

func workerPod(owner types.UID, exit int32, msg string, finished time.Time) corev1.Pod {
	return corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "p", OwnerReferences: []metav1.OwnerReference{{UID: owner, Controller: ptr.To(true)}}},
		Status: corev1.PodStatus{ContainerStatuses: []corev1.ContainerStatus{{Name: "worker", State: corev1.ContainerState{
			Terminated: &corev1.ContainerStateTerminated{ExitCode: exit, Reason: "Error", Message: msg, FinishedAt: metav1.NewTime(finished)},
		}}}},
	}
}

const goodResult = `{"v":1,"cmd":"maintain","outcome":"succeeded","version":42,"ms":61000,` +
	`"table":{"version":42,"files":10,"bytes":1073741824,"small":1,"smallBelow":67108864,"minReader":1,"minWriter":2},` +
	`"ops":[{"op":"optimize","outcome":"succeeded","version":41,"filesAdded":3,"filesRemoved":57,"bytesAdded":900,"bytesRemoved":1000},` +
	`{"op":"checkpoint","outcome":"succeeded","version":42}]}`

func TestReadRun_TurnsTerminationMessagesIntoRecords(t *testing.T) {
	tests := []struct {
		name        string
		job         *batchv1.Job
		pods        []corev1.Pod
		now         time.Time
		wantReady   bool
		wantResult  deltav1.RunResult
		wantReason  string
		wantProblem string
		wantInMsg   string
	}{
		{
			name:       "good result",
			job:        finishedJob(true, ""),
			pods:       []corev1.Pod{workerPod("job-uid", 0, goodResult, finishTime)},
			now:        finishTime,
			wantReady:  true,
			wantResult: deltav1.RunSucceeded, wantReason: "SmallFiles", wantInMsg: "optimize succeeded (-57/+3 files",
		},
		{
			name: "refused (exit 2) with a result",
			job:  finishedJob(false, "PodFailurePolicy"),
			pods: []corev1.Pod{workerPod("job-uid", 2, `{"v":1,"cmd":"maintain","outcome":"refused","reason":"UnsupportedFeature",`+
				`"msg":"table uses writer feature \"rowTracking\"","ms":5}`, finishTime)},
			now: finishTime, wantReady: true,
			wantResult: deltav1.RunRefused, wantReason: "UnsupportedFeature", wantInMsg: "rowTracking",
		},
		{
			name:      "truncated result",
			job:       finishedJob(true, ""),
			pods:      []corev1.Pod{workerPod("job-uid", 0, goodResult[:200], finishTime)},
			now:       finishTime,
			wantReady: true, wantResult: deltav1.RunFailed, wantProblem: deltav1.ReasonInvalidResult, wantInMsg: "could not be read",
		},
		{
			name:      "unknown schema version",
			job:       finishedJob(true, ""),
			pods:      []corev1.Pod{workerPod("job-uid", 0, strings.Replace(goodResult, `"v":1`, `"v":7`, 1), finishTime)},
			now:       finishTime,
			wantReady: true, wantResult: deltav1.RunFailed, wantProblem: deltav1.ReasonInvalidResult, wantInMsg: "schema version 7",
		},
		{
			name: "fallback-to-logs garbage from a crash, with a credential in it",
			job:  finishedJob(false, "BackoffLimitExceeded"),
			pods: []corev1.Pod{workerPod("job-uid", 1, "starting\npanic: runtime error: index out of range\n"+
				"GET https://admin:hunter2@minio:9000/bucket?X-Amz-Signature=abcdef failed", finishTime)},
			now:       finishTime,
			wantReady: true, wantResult: deltav1.RunFailed, wantProblem: deltav1.ReasonJobFailed, wantInMsg: "exited with code 1",
		},
		{
			name:      "finished, pod not cached yet",
			job:       finishedJob(true, ""),
			now:       finishTime.Add(5 * time.Second),
			wantReady: false,
		},
		{
			name:      "failed at the deadline, pod gone",
			job:       finishedJob(false, "DeadlineExceeded"),
			now:       finishTime.Add(time.Minute),
			wantReady: true, wantResult: deltav1.RunFailed, wantProblem: deltav1.ReasonJobFailed, wantInMsg: "DeadlineExceeded",
		},
		{
			name: "retried Job: the successful pod wins over the earlier failure",
			job:  finishedJob(true, ""),
			pods: []corev1.Pod{
				workerPod("job-uid", 0, goodResult, finishTime.Add(-30*time.Second)),
				workerPod("job-uid", 1, `{"v":1,"cmd":"maintain","outcome":"failed","reason":"Conflict","ms":1}`, finishTime),
				workerPod("other-job", 0, "{}", finishTime),
			},
			now:       finishTime,
			wantReady: true, wantResult: deltav1.RunSucceeded,
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			run, ready := readRun(tc.job, tc.pods, tc.now)
			if ready != tc.wantReady {
				t.Fatalf("ready = %v, want %v", ready, tc.wantReady)
			}
			if !ready {
				return
			}
			rec := run.Record
			if rec.Result != tc.wantResult || run.Problem != tc.wantProblem || (tc.wantReason != "" && rec.Reason != tc.wantReason) {
				t.Errorf("result %s problem %q reason %q, want %s %q %q", rec.Result, run.Problem, rec.Reason, tc.wantResult, tc.wantProblem, tc.wantReason)
			}
			if !strings.Contains(rec.Message, tc.wantInMsg) {
				t.Errorf("message %q does not contain %q", rec.Message, tc.wantInMsg)
			}
			if strings.Contains(rec.Message, "hunter2") || strings.Contains(rec.Message, "abcdef") {
				t.Errorf("message leaks a credential: %q", rec.Message)
			}
			if len(rec.Message) > 1024 {
				t.Errorf("message of %d bytes exceeds the CRD's 1024", len(rec.Message))
			}
			if rec.JobName != "orders-maintain-abc" || rec.Table != "orders" || len(rec.Operations) != 2 ||
				rec.ScheduledTime == nil || rec.CompletionTime == nil || !rec.CompletionTime.Time.Equal(finishTime) {
				t.Errorf("record misses the Job's facts: %+v", rec)
			}
		})
	}
}

func TestReadRun_SumsOpsAndKeepsTheVersion(t *testing.T) {
	run, _ := readRun(finishedJob(true, ""), []corev1.Pod{workerPod("job-uid", 0, goodResult, finishTime)}, finishTime)
	r := run.Record
	if *r.TableVersion != 42 || r.FilesAdded != 3 || r.FilesRemoved != 57 || r.BytesAdded != 900 || r.BytesRemoved != 1000 {
		t.Errorf("record = %+v", r)
	}
	if run.Result == nil || run.Result.Outcome != result.Succeeded {
		t.Errorf("result = %+v", run.Result)
	}
}

func TestSanitize_RemovesCredentials(t *testing.T) {
	in := `GET https://AKIAIOSFODNN7EXAMPLE:wJalrXUtnFEMI@s3.example.com/b?X-Amz-Credential=AKIA%2F2026&X-Amz-Signature=deadbeef
aws_secret_access_key = wJalrXUtnFEMI/K7MDENG token: "abc123" and key AKIAIOSFODNN7EXAMPLE`
	out := sanitize(in, 1024)
	for _, leak := range []string{"wJalrXUtnFEMI", "deadbeef", "abc123", "AKIAIOSFODNN7EXAMPLE", "AKIA%2F2026"} {
		if strings.Contains(out, leak) {
			t.Errorf("sanitize left %q in %q", leak, out)
		}
	}
	if !strings.Contains(out, "s3.example.com/b") {
		t.Errorf("sanitize removed the useful part: %q", out)
	}
	if got := sanitize(strings.Repeat("é", 600), 100); len(got) > 100 || !strings.HasSuffix(got, "…") {
		t.Errorf("truncate: %d bytes %q", len(got), got)
	}
}

func TestHumanBytes(t *testing.T) {
	for n, want := range map[int64]string{0: "0B", 1023: "1023B", 1536: "1.5KiB", 13207024435: "12.3GiB", 1 << 50: "1.0PiB"} {
		if got := humanBytes(n); got != want {
			t.Errorf("humanBytes(%d) = %s, want %s", n, got, want)
		}
	}
}

func TestSummarize_RefusedVacuumNamesTheSpecFieldOnce(t *testing.T) {
	refusal := "retention 1h0m0s is shorter than the table's delta.deletedFileRetentionDuration (168h0m0s): readers of older " +
		"snapshots and writers still committing may need those files; pass --allow-short-retention if no such reader or writer exists"
	res := &result.Result{Outcome: result.Refused, Message: refusal, Ops: []result.Op{
		{Name: "optimize", Outcome: result.NothingToDo},
		{Name: "vacuum", Outcome: result.Refused, Reason: result.ReasonBadArgument, Message: refusal},
	}}
	got := summarize(res)
	if !strings.Contains(got, "set the OptimizePolicy's spec.vacuum.allowShortRetention: true") {
		t.Errorf("summary does not name the spec field:\n%s", got)
	}
	if strings.Contains(got, "--allow-short-retention") {
		t.Errorf("summary names the CLI flag:\n%s", got)
	}
	if n := strings.Count(got, "is shorter than the table's"); n != 1 {
		t.Errorf("summary says the refusal %d times:\n%s", n, got)
	}
}
