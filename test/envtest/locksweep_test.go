package envtest

import (
	"context"
	"slices"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/deltakeeper/deltakeeper/controllers"
)

// A table deleted while its Job ran leaves a lock Lease that no reconciler releases. The sweep deletes lock
// Leases whose holder Job finished or is gone, and keeps the held ones, the just-taken ones (their Job is
// being created) and Leases that are not table locks.
func TestLockSweep_DeletesOnlyTheLocksNoJobHolds(t *testing.T) {
	ctx := context.Background()
	ns := newNamespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	job := func(name string, finished bool) {
		j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: batchv1.JobSpec{
			Template: corev1.PodTemplateSpec{Spec: corev1.PodSpec{RestartPolicy: corev1.RestartPolicyNever,
				Containers: []corev1.Container{{Name: "worker", Image: testWorkerImage}}}}}}
		if err := k8sClient.Create(ctx, j); err != nil {
			t.Fatal(err)
		}
		if !finished {
			return
		}
		now := metav1.NewTime(clk.Now())
		j.Status.StartTime, j.Status.CompletionTime, j.Status.Succeeded = &now, &now, 1
		j.Status.Conditions = []batchv1.JobCondition{
			{Type: batchv1.JobSuccessCriteriaMet, Status: corev1.ConditionTrue, LastTransitionTime: now},
			{Type: batchv1.JobComplete, Status: corev1.ConditionTrue, LastTransitionTime: now}}
		if err := k8sClient.Status().Update(ctx, j); err != nil {
			t.Fatal(err)
		}
	}
	lease := func(name, holder string, acquired time.Time) {
		at := metav1.NewMicroTime(acquired)
		l := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns,
			Labels:      map[string]string{"app.kubernetes.io/managed-by": "deltakeeper"},
			Annotations: map[string]string{"deltakeeper.io/holder-namespace": ns}},
			Spec: coordinationv1.LeaseSpec{HolderIdentity: ptr.To(holder), AcquireTime: &at, RenewTime: &at}}
		if err := k8sClient.Create(ctx, l); err != nil {
			t.Fatal(err)
		}
	}
	long := clk.Now().Add(-2 * time.Hour)
	job("running", false)
	job("finished", true)
	lease("deltakeeper-location-gone", "deleted-job", long)
	lease("deltakeeper-location-finished", "finished", long)
	lease("deltakeeper-location-running", "running", long)
	lease("deltakeeper-location-just-taken", "being-created", clk.Now())
	lease("deltakeeper-leader", "deleted-job", long) // not a table lock

	lock := &controllers.TableLock{Client: k8sClient, Reader: k8sClient, Clock: clk, Namespace: ns}
	n, err := lock.SweepStale(ctx)
	if err != nil || n != 2 {
		t.Fatalf("SweepStale = %d, %v; want the 2 stale locks deleted", n, err)
	}
	var left coordinationv1.LeaseList
	if err := k8sClient.List(ctx, &left, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, l := range left.Items {
		names = append(names, l.Name)
	}
	slices.Sort(names)
	want := []string{"deltakeeper-leader", "deltakeeper-location-just-taken", "deltakeeper-location-running"}
	if !slices.Equal(names, want) {
		t.Fatalf("Leases left %v, want %v", names, want)
	}
	// Past the create grace, a holder whose Job never appeared is stale too.
	clk.Step(2 * time.Minute)
	if n, err := lock.SweepStale(ctx); err != nil || n != 1 {
		t.Fatalf("second sweep = %d, %v; want the just-taken lock whose Job never came", n, err)
	}
}
