package controllers

import (
	"context"
	"errors"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
	"sigs.k8s.io/controller-runtime/pkg/client/interceptor"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func newLock(t *testing.T, objs ...client.Object) (*TableLock, client.Client, *clocktesting.FakeClock) {
	t.Helper()
	scheme := runtime.NewScheme()
	if err := clientgoscheme.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	if err := deltav1.AddToScheme(scheme); err != nil {
		t.Fatal(err)
	}
	c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).Build()
	clk := clocktesting.NewFakeClock(time.Date(2026, 5, 21, 3, 0, 0, 0, time.UTC))
	return &TableLock{Client: c, Reader: c, Clock: clk}, c, clk
}

func job(name string, finished bool) *batchv1.Job {
	j := &batchv1.Job{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: "lake"}}
	if finished {
		j.Status.Conditions = []batchv1.JobCondition{{Type: batchv1.JobComplete, Status: corev1.ConditionTrue}}
	}
	return j
}

func busyHolder(err error) string {
	var b *LockBusy
	if errors.As(err, &b) {
		return b.Holder
	}
	return ""
}

func TestTableLock_AllowsOneJobPerTable(t *testing.T) {
	ctx := context.Background()
	table := s3Table("orders").obj()
	lock, c, clk := newLock(t, job("a", false))

	if err := lock.Acquire(ctx, table, "a", nil); err != nil {
		t.Fatalf("first acquire: %v", err)
	}
	if err := lock.Acquire(ctx, table, "a", nil); err != nil {
		t.Errorf("re-acquire by the holder must succeed (retried reconcile): %v", err)
	}
	if h := busyHolder(lock.Acquire(ctx, table, "b", nil)); h != "a" {
		t.Errorf("second Job got the lock, or the wrong holder %q", h)
	}
	var lease coordinationv1.Lease
	if err := c.Get(ctx, client.ObjectKey{Namespace: "lake", Name: "deltakeeper-table-orders"}, &lease); err != nil {
		t.Fatal(err)
	}
	if lease.OwnerReferences[0].UID != table.UID || *lease.Spec.HolderIdentity != "a" {
		t.Errorf("lease = %+v", lease)
	}

	// The holder finishes: its lock is stale, the next Job takes it over.
	a := job("a", true)
	if err := c.Status().Update(ctx, a); err != nil {
		// The fake client needs the object itself updated when no status subresource is registered.
		if err := c.Update(ctx, a); err != nil {
			t.Fatal(err)
		}
	}
	if err := lock.Acquire(ctx, table, "b", nil); err != nil {
		t.Errorf("take over from a finished holder: %v", err)
	}

	// Release by someone else is ignored; by the holder it frees the table.
	if err := lock.Release(ctx, "lake", "orders", "a"); err != nil {
		t.Fatal(err)
	}
	if h, _ := lock.Holder(ctx, "lake", "orders"); h != "b" {
		t.Errorf("holder after a stranger's release = %q", h)
	}
	if err := lock.Release(ctx, "lake", "orders", "b"); err != nil {
		t.Fatal(err)
	}
	if h, _ := lock.Holder(ctx, "lake", "orders"); h != "" {
		t.Errorf("holder after release = %q", h)
	}

	// A holder whose Job was never created keeps the table for createGrace, then loses it.
	if err := lock.Acquire(ctx, table, "c-not-created", nil); err != nil {
		t.Fatal(err)
	}
	if h := busyHolder(lock.Acquire(ctx, table, "d", nil)); h != "c-not-created" {
		t.Errorf("a lock taken a moment ago must hold while its Job is being created; holder %q", h)
	}
	clk.Step(createGrace + time.Second)
	if err := lock.Acquire(ctx, table, "d", nil); err != nil {
		t.Errorf("a holder without a Job after createGrace is stale: %v", err)
	}
}

func TestTableLock_RefusesWhileALiveJobRunsOnTheTable(t *testing.T) {
	lock, _, _ := newLock(t)
	live := []batchv1.Job{*job("old-manager-job", false), *job("done", true)}
	if h := busyHolder(lock.Acquire(context.Background(), s3Table("orders").obj(), "new", live)); h != "old-manager-job" {
		t.Errorf("holder = %q: a live labelled Job must keep the table busy even without a Lease", h)
	}
	if err := lock.Acquire(context.Background(), s3Table("orders").obj(), "new", live[1:]); err != nil {
		t.Errorf("a finished Job does not keep the table busy: %v", err)
	}
}

func TestTableLock_LosesRacesCleanly(t *testing.T) {
	ctx := context.Background()
	table := s3Table("orders").obj()
	scheme := runtime.NewScheme()
	_ = clientgoscheme.AddToScheme(scheme)
	gr := schema.GroupResource{Group: "coordination.k8s.io", Resource: "leases"}
	racing := func(objs ...client.Object) *TableLock {
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
			// Another manager wins between our read and our write.
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return apierrors.NewAlreadyExists(gr, LeaseName("orders"))
			},
			Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
				return apierrors.NewConflict(gr, LeaseName("orders"), errors.New("the object has been modified"))
			},
		}).Build()
		return &TableLock{Client: c, Reader: c, Clock: clocktesting.NewFakeClock(time.Now())}
	}
	if err := racing().Acquire(ctx, table, "a", nil); busyHolder(err) == "" {
		t.Errorf("losing the create race: %v, want LockBusy", err)
	}
	free := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: LeaseName("orders"), Namespace: "lake"}}
	if err := racing(free).Acquire(ctx, table, "a", nil); busyHolder(err) == "" {
		t.Errorf("losing the take-over race: %v, want LockBusy", err)
	}
}
