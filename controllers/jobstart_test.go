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
)

func TestWhyNotStarted_ReadsPodsAndEvents(t *testing.T) {
	job := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: "t-inspect-x", UID: "job-uid"}}
	owned := metav1.ObjectMeta{Name: "t-inspect-x-abc", OwnerReferences: []metav1.OwnerReference{{Kind: "Job", UID: "job-uid", Controller: ptr.To(true)}}}
	predecessor := metav1.ObjectMeta{Name: "t-inspect-x-old", OwnerReferences: []metav1.OwnerReference{{Kind: "Job", UID: "old-uid", Controller: ptr.To(true)}}}
	unschedulable := corev1.PodStatus{Phase: corev1.PodPending, Conditions: []corev1.PodCondition{{Type: corev1.PodScheduled,
		Status: corev1.ConditionFalse, Reason: "Unschedulable", Message: "0/3 nodes are available: 3 Insufficient cpu."}}}
	pulling := corev1.PodStatus{Phase: corev1.PodPending, ContainerStatuses: []corev1.ContainerStatus{{Name: "worker",
		State: corev1.ContainerState{Waiting: &corev1.ContainerStateWaiting{Reason: "ErrImagePull", Message: "not found"}}}}}
	old, recent := metav1.NewTime(time.Unix(100, 0)), metav1.NewTime(time.Unix(200, 0))
	events := []corev1.Event{
		{Reason: "FailedCreate", Message: `serviceaccount "old" not found`, LastTimestamp: old},
		{Reason: "FailedCreate", Message: `serviceaccount "lake-reader" not found`, LastTimestamp: recent},
		{Reason: "SuccessfulCreate", Message: "Created pod", LastTimestamp: recent},
	}
	tests := []struct {
		name   string
		pods   []corev1.Pod
		events []corev1.Event
		want   string
	}{
		{"unschedulable", []corev1.Pod{{ObjectMeta: owned, Status: unschedulable}}, nil, "cannot be scheduled: Unschedulable: 0/3 nodes are available: 3 Insufficient cpu."},
		{"image pull", []corev1.Pod{{ObjectMeta: owned, Status: pulling}}, nil, "cannot start: ErrImagePull"},
		{"no pod: the newest FailedCreate", nil, events, `cannot create its pod: serviceaccount "lake-reader" not found`},
		{"a predecessor's pod says nothing", []corev1.Pod{{ObjectMeta: predecessor, Status: unschedulable}}, nil, ""},
		{"a pending pod without news", []corev1.Pod{{ObjectMeta: owned, Status: corev1.PodStatus{Phase: corev1.PodPending}}}, events, ""},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			got := whyNotStarted(job, tc.pods, tc.events)
			if (tc.want == "") != (got == "") || !strings.Contains(got, tc.want) {
				t.Errorf("whyNotStarted = %q, want %q", got, tc.want)
			}
		})
	}
}

func TestJobStarted_AnyPodThatRanCounts(t *testing.T) {
	owned := metav1.ObjectMeta{OwnerReferences: []metav1.OwnerReference{{Kind: "Job", UID: "job-uid", Controller: ptr.To(true)}}}
	job := func(st batchv1.JobStatus) *batchv1.Job {
		return &batchv1.Job{ObjectMeta: metav1.ObjectMeta{UID: types.UID("job-uid")}, Status: st}
	}
	running := corev1.Pod{ObjectMeta: owned, Status: corev1.PodStatus{Phase: corev1.PodRunning}}
	pending := corev1.Pod{ObjectMeta: owned, Status: corev1.PodStatus{Phase: corev1.PodPending}}
	if jobStarted(job(batchv1.JobStatus{Active: 1}), []corev1.Pod{pending}) {
		t.Error("an active Job whose pod is pending has not started")
	}
	for name, c := range map[string]struct {
		j    *batchv1.Job
		pods []corev1.Pod
	}{
		"ready counter": {job(batchv1.JobStatus{Ready: ptr.To[int32](1)}), nil},
		"a failed pod":  {job(batchv1.JobStatus{Failed: 1}), nil},
		"a running pod": {job(batchv1.JobStatus{}), []corev1.Pod{running}},
	} {
		if !jobStarted(c.j, c.pods) {
			t.Errorf("%s: the Job has started", name)
		}
	}
}

func TestWaitingSince_IsTheLaterOfCreationAndSchedule(t *testing.T) {
	created := time.Date(2026, 5, 21, 3, 0, 0, 0, time.UTC)
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{CreationTimestamp: metav1.NewTime(created),
		Annotations: map[string]string{deltav1.AnnotationScheduledTime: created.Add(-time.Hour).Format(time.RFC3339)}}}
	if got := waitingSince(j); !got.Equal(created) {
		t.Errorf("a slot that waited for the lock counts from the Job's creation, got %s", got)
	}
	j.Annotations[deltav1.AnnotationScheduledTime] = created.Add(time.Hour).Format(time.RFC3339)
	if got := waitingSince(j); !got.Equal(created.Add(time.Hour)) {
		t.Errorf("got %s", got)
	}
	j.Annotations[deltav1.AnnotationStartFailed] = "why"
	if isLive(j) {
		t.Error("a Job marked start-failed is not live: it releases the lock and is folded as a failed run")
	}
}
