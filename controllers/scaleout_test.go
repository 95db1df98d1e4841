package controllers

import (
	"testing"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

func TestShareRequest_SpreadsOnlyShareableStepsOfAPinnedVersion(t *testing.T) {
	pol := func(n int32, ann string) *deltav1.OptimizePolicy {
		p := &deltav1.OptimizePolicy{Spec: deltav1.OptimizePolicySpec{Parallelism: ptr.To(n)}}
		if ann != "" {
			p.Annotations = map[string]string{deltav1.AnnotationRunNowParallelism: ann}
		}
		return p
	}
	inspected := &deltav1.DeltaTable{Status: deltav1.DeltaTableStatus{Version: ptr.To[int64](7)}}
	fresh := &deltav1.DeltaTable{}
	optimize := []deltav1.Operation{deltav1.OperationOptimize, deltav1.OperationVacuum}
	for _, tc := range []struct {
		name    string
		p       *deltav1.OptimizePolicy
		table   *deltav1.DeltaTable
		args    []string
		ops     []deltav1.Operation
		runNow  bool
		want    int32 // 0: one pod
		waiting bool
	}{
		{"three pods", pol(3, ""), inspected, nil, optimize, false, 3, false},
		{"one pod", pol(1, ""), inspected, nil, optimize, false, 0, false},
		{"run-now override", pol(1, "4"), inspected, nil, optimize, true, 4, false},
		{"override ignored for a scheduled run", pol(1, "4"), inspected, nil, optimize, false, 0, false},
		{"bad override keeps the spec", pol(2, "zero"), inspected, nil, optimize, true, 2, false},
		{"vacuum alone is one pod", pol(3, ""), inspected, nil, []deltav1.Operation{deltav1.OperationVacuum}, false, 0, false},
		{"z-order is one pod", pol(3, ""), inspected, []string{"--zorder-by", "a"}, optimize, false, 0, false},
		{"no version to pin waits", pol(3, ""), fresh, nil, optimize, false, 0, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, why := shareRequest(tc.p, tc.table, tc.args, tc.ops, tc.runNow)
			switch {
			case tc.waiting != (why != ""):
				t.Fatalf("wait reason %q", why)
			case tc.want == 0 && got != nil, tc.want != 0 && (got == nil || got.Count != tc.want || got.AtVersion != 7):
				t.Fatalf("share request %+v, want %d shares", got, tc.want)
			}
		})
	}
}

func TestShareProgress_ReadsTheIndexesAndIndexZerosCommit(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Annotations: map[string]string{}}}
	if shareProgress(job, nil) != nil {
		t.Fatal("a one-pod Job has share progress")
	}
	makeIndexed(job, &ShareRequest{Count: 3, AtVersion: 12}, 2)
	if *job.Spec.BackoffLimitPerIndex != 2 || *job.Spec.Completions != 3 || *job.Spec.Parallelism != 3 {
		t.Fatalf("spec %+v", job.Spec)
	}
	job.Status.CompletedIndexes, job.Status.FailedIndexes, job.Status.Failed = "0,2", ptr.To("1"), 2
	sp := shareProgress(job, &result.Result{Share: &result.Share{Committed: []int{0, 2}, Missing: []int{1}, SupersededFiles: 3,
		Vacuumed: []int{0, 2}, VacuumFilesDeleted: 40}})
	want := deltav1.ShareProgress{Parallelism: 3, AtVersion: 12, Completed: "0,2", Failed: "1", Retries: 2, Committed: "0,2", Missing: "1", SupersededFiles: 3,
		Vacuumed: "0,2", VacuumedFiles: 40}
	if *sp != want {
		t.Fatalf("progress %+v, want %+v", *sp, want)
	}
	pods := []corev1.Pod{
		{ObjectMeta: metav1.ObjectMeta{Name: "a", Annotations: map[string]string{completionIndexAnnotation: "1"}}},
		{ObjectMeta: metav1.ObjectMeta{Name: "b", Annotations: map[string]string{completionIndexAnnotation: "0"}}},
	}
	if got := resultPods(job, pods); len(got) != 1 || got[0].Name != "b" {
		t.Fatalf("result pods %v, want index 0's", got)
	}
}
