package controllers

import (
	"context"
	"fmt"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// TableLock keeps at most one worker Job running per table, whichever policy or table reconciler starts it.
//
// The lock is a coordination.k8s.io Lease per table (LeaseName), held by the name of the Job that runs on
// the table. It lives in the API server, so it survives manager restarts and leader changes:
//   - Acquire creates the Lease (atomic: AlreadyExists means someone else won) or takes over a free or stale
//     one with an update guarded by its resourceVersion (Conflict means someone else won).
//   - A holder is stale when its Job is gone or finished. A holder whose Job does not exist yet is not stale
//     for createGrace after acquisition: the Lease is taken just before the Job is created, and another
//     reconciler must not slip in between.
//   - Release clears the holder once the holder's Job finished; a missed release costs nothing, because a
//     finished holder is stale.
//   - Acquire also refuses while any live Job labelled with the table exists (cached list), which covers
//     Leases deleted by hand and Jobs started by an older manager.
//
// Leases and holder Jobs are read with an uncached reader, so a decision never rests on a stale cache.
type TableLock struct {
	Client client.Client // writes
	Reader client.Reader // uncached reads (the manager's API reader)
	Clock  clock.PassiveClock
}

// createGrace is how long a holder whose Job does not exist yet keeps the lock.
const createGrace = time.Minute

// LockBusy says who holds a table's lock.
type LockBusy struct{ Holder string }

func (b *LockBusy) Error() string { return "table lock held by Job " + b.Holder }

// Acquire takes table's lock for jobName. It returns a *LockBusy error when another Job holds it, or an
// error for unexpected API failures. Acquiring a lock already held by jobName succeeds.
func (l *TableLock) Acquire(ctx context.Context, table *deltav1.DeltaTable, jobName string, liveJobs []batchv1.Job) error {
	for i := range liveJobs {
		if j := &liveJobs[i]; j.Name != jobName && isLive(j) {
			return &LockBusy{Holder: j.Name}
		}
	}
	key := types.NamespacedName{Namespace: table.Namespace, Name: LeaseName(table.Name)}
	var lease coordinationv1.Lease
	err := l.Reader.Get(ctx, key, &lease)
	if apierrors.IsNotFound(err) {
		lease = l.newLease(table, jobName)
		if err := l.Client.Create(ctx, &lease); err != nil {
			if apierrors.IsAlreadyExists(err) {
				return &LockBusy{Holder: "(another Job, just now)"}
			}
			return fmt.Errorf("create lock Lease %s: %w", key, err)
		}
		return nil
	}
	if err != nil {
		return fmt.Errorf("read lock Lease %s: %w", key, err)
	}
	holder := ptr.Deref(lease.Spec.HolderIdentity, "")
	switch {
	case holder == jobName:
		return nil
	case holder != "":
		stale, err := l.isStale(ctx, table.Namespace, holder, lease.Spec.AcquireTime)
		if err != nil {
			return err
		}
		if !stale {
			return &LockBusy{Holder: holder}
		}
	}
	now := metav1.NewMicroTime(l.Clock.Now())
	lease.Spec.HolderIdentity = ptr.To(jobName)
	lease.Spec.AcquireTime = &now
	lease.Spec.RenewTime = &now
	lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	// Update carries the resourceVersion we read: if anyone changed the Lease since, it fails with Conflict.
	if err := l.Client.Update(ctx, &lease); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return &LockBusy{Holder: "(another Job, just now)"}
		}
		return fmt.Errorf("take over lock Lease %s: %w", key, err)
	}
	return nil
}

// isStale reports whether holder no longer needs the lock: its Job is finished, or gone for longer than
// createGrace after the lock was acquired.
func (l *TableLock) isStale(ctx context.Context, namespace, holder string, acquired *metav1.MicroTime) (bool, error) {
	var job batchv1.Job
	err := l.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: holder}, &job)
	switch {
	case apierrors.IsNotFound(err):
		return acquired == nil || l.Clock.Since(acquired.Time) > createGrace, nil
	case err != nil:
		return false, fmt.Errorf("read lock holder Job %s/%s: %w", namespace, holder, err)
	}
	return !isLive(&job), nil
}

// Release frees table's lock if jobName holds it. Losing a race here is harmless (see TableLock).
func (l *TableLock) Release(ctx context.Context, namespace, table, jobName string) error {
	key := types.NamespacedName{Namespace: namespace, Name: LeaseName(table)}
	var lease coordinationv1.Lease
	if err := l.Reader.Get(ctx, key, &lease); err != nil {
		return client.IgnoreNotFound(err)
	}
	if ptr.Deref(lease.Spec.HolderIdentity, "") != jobName {
		return nil
	}
	lease.Spec.HolderIdentity = nil
	lease.Spec.RenewTime = ptr.To(metav1.NewMicroTime(l.Clock.Now()))
	if err := l.Client.Update(ctx, &lease); err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release lock Lease %s: %w", key, err)
	}
	return nil
}

// Holder returns the Job holding table's lock, or "".
func (l *TableLock) Holder(ctx context.Context, namespace, table string) (string, error) {
	var lease coordinationv1.Lease
	err := l.Reader.Get(ctx, types.NamespacedName{Namespace: namespace, Name: LeaseName(table)}, &lease)
	if err != nil {
		return "", client.IgnoreNotFound(err)
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), nil
}

// newLease is a table's lock held by jobName. The table owns it, so it goes when the table goes.
func (l *TableLock) newLease(table *deltav1.DeltaTable, jobName string) coordinationv1.Lease {
	now := metav1.NewMicroTime(l.Clock.Now())
	return coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:      LeaseName(table.Name),
			Namespace: table.Namespace,
			Labels: map[string]string{
				labelAppName:       appName,
				labelAppManagedBy:  appManagedBy,
				deltav1.LabelTable: LabelValue(table.Name),
			},
			Annotations: map[string]string{deltav1.AnnotationTable: table.Name},
			OwnerReferences: []metav1.OwnerReference{{
				APIVersion: deltav1.GroupVersion.String(),
				Kind:       "DeltaTable",
				Name:       table.Name,
				UID:        table.UID,
			}},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:   ptr.To(jobName),
			AcquireTime:      &now,
			RenewTime:        &now,
			LeaseTransitions: ptr.To[int32](0),
		},
	}
}
