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
	"k8s.io/utils/ptr"
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
	return &TableLock{Client: c, Reader: c, Clock: clk, Namespace: "deltakeeper-system"}, c, clk
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
	name, _ := TableLeaseName(table)
	if err := c.Get(ctx, client.ObjectKey{Namespace: "deltakeeper-system", Name: name}, &lease); err != nil {
		t.Fatal(err)
	}
	if *lease.Spec.HolderIdentity != "a" || lease.Annotations[annotationHolderNamespace] != "lake" ||
		lease.Annotations[annotationLockedLocation] != "s3://lakehouse/sales/orders" {
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
	if err := lock.Release(ctx, table, "a"); err != nil {
		t.Fatal(err)
	}
	if h, own, _ := lock.Holder(ctx, table); h != "b" || !own {
		t.Errorf("holder after a stranger's release = %q (own namespace %v)", h, own)
	}
	if err := lock.Release(ctx, table, "b"); err != nil {
		t.Fatal(err)
	}
	if h, _, _ := lock.Holder(ctx, table); h != "" {
		t.Errorf("holder after release = %q", h)
	}
	if err := c.Get(ctx, client.ObjectKey{Namespace: "deltakeeper-system", Name: name}, &lease); !apierrors.IsNotFound(err) {
		t.Errorf("the Lease must be deleted on release (no Lease per table left behind): %v", err)
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
	leaseName, _ := TableLeaseName(table)
	racing := func(objs ...client.Object) *TableLock {
		c := fake.NewClientBuilder().WithScheme(scheme).WithObjects(objs...).WithInterceptorFuncs(interceptor.Funcs{
			// Another manager wins between our read and our write.
			Create: func(context.Context, client.WithWatch, client.Object, ...client.CreateOption) error {
				return apierrors.NewAlreadyExists(gr, leaseName)
			},
			Update: func(context.Context, client.WithWatch, client.Object, ...client.UpdateOption) error {
				return apierrors.NewConflict(gr, leaseName, errors.New("the object has been modified"))
			},
		}).Build()
		return &TableLock{Client: c, Reader: c, Clock: clocktesting.NewFakeClock(time.Now()), Namespace: "deltakeeper-system"}
	}
	if err := racing().Acquire(ctx, table, "a", nil); busyHolder(err) == "" {
		t.Errorf("losing the create race: %v, want LockBusy", err)
	}
	free := &coordinationv1.Lease{ObjectMeta: metav1.ObjectMeta{Name: leaseName, Namespace: "deltakeeper-system"}}
	if err := racing(free).Acquire(ctx, table, "a", nil); busyHolder(err) == "" {
		t.Errorf("losing the take-over race: %v, want LockBusy", err)
	}
}

func TestTableLock_IsOnePerPhysicalTableAcrossNamespaces(t *testing.T) {
	ctx := context.Background()
	lock, _, _ := newLock(t, job("a", false))
	mine := s3Table("orders").obj()
	// The same table, written another way, from another namespace.
	theirs := s3Table("orders-copy").obj()
	theirs.Namespace, theirs.Spec.Location = "analytics", "s3a://lakehouse/sales/orders/"
	if err := lock.Acquire(ctx, mine, "a", nil); err != nil {
		t.Fatal(err)
	}
	if h := busyHolder(lock.Acquire(ctx, theirs, "a", nil)); h != "lake/a" {
		t.Errorf("a Job of the same name in another namespace took the lock, or the holder %q is not qualified", h)
	}
	if h, own, _ := lock.Holder(ctx, theirs); h != "a" || own {
		t.Errorf("Holder seen from the other namespace = %q, own %v", h, own)
	}
	if err := lock.Release(ctx, theirs, "a"); err != nil {
		t.Fatal(err)
	}
	if h, _, _ := lock.Holder(ctx, mine); h != "a" {
		t.Errorf("a release from another namespace freed the lock: holder %q", h)
	}
	// Another endpoint is another store: its bucket "lakehouse" is a different table.
	other := s3Table("orders").withEndpoint("https://minio.other.svc:9000").obj()
	if err := lock.Acquire(ctx, other, "b", nil); err != nil {
		t.Errorf("a table on another S3 endpoint shares the lock: %v", err)
	}
}

func TestTableLock_HonoursTheLeaseOfAnOlderManager(t *testing.T) {
	ctx := context.Background()
	old := &coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{Name: LeaseName("orders"), Namespace: "lake"},
		Spec:       coordinationv1.LeaseSpec{HolderIdentity: ptr.To("old-job"), AcquireTime: &metav1.MicroTime{Time: time.Now()}},
	}
	lock, c, _ := newLock(t, old, job("old-job", false))
	table := s3Table("orders").obj()
	if h := busyHolder(lock.Acquire(ctx, table, "new", nil)); h != "old-job" {
		t.Fatalf("holder = %q: the running Job of the previous manager version must keep the table", h)
	}
	done := job("old-job", true)
	if err := c.Status().Update(ctx, done); err != nil {
		if err := c.Update(ctx, done); err != nil {
			t.Fatal(err)
		}
	}
	if err := lock.Acquire(ctx, table, "new", nil); err != nil {
		t.Fatalf("once the old Job finished the lock is free: %v", err)
	}
	if err := c.Get(ctx, client.ObjectKeyFromObject(old), &coordinationv1.Lease{}); !apierrors.IsNotFound(err) {
		t.Errorf("the free old-style Lease must be deleted: %v", err)
	}
}
