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

// TableLock keeps at most one worker Job running per physical table, whichever policy or table reconciler
// starts it, and whichever DeltaTable (in any namespace) names the table.
//
// The lock is a coordination.k8s.io Lease per table identity (tableIdentity: the canonical location, plus
// the S3 endpoint or volume claim where one location can name two stores), named by a hash of it
// (LocationLeaseName) and kept in one namespace, the manager's own (Namespace): the only namespace whose
// Leases the manager must write, and the one a namespace-scoped install grants anyway. The Lease is held by
// the name of the Job that runs on the table (annotated with the Job's namespace). It lives in the API
// server, so it survives manager restarts and leader changes:
//   - Acquire creates the Lease (atomic: AlreadyExists means someone else won) or takes over a stale one
//     with an update guarded by its resourceVersion (Conflict means someone else won).
//   - A holder is stale when its Job is gone or finished. A holder whose Job does not exist yet is not stale
//     for createGrace after acquisition: the Lease is taken just before the Job is created, and another
//     reconciler must not slip in between.
//   - Release deletes the Lease (guarded by its resourceVersion) once the holder's Job finished, so Leases
//     exist only while a table is busy; a missed release costs nothing, because a finished holder is stale.
//   - Acquire also refuses while any live Job labelled with the table exists (cached list), which covers
//     Leases deleted by hand and Jobs started by an older manager, and while the Lease an older manager
//     kept in the table's namespace (LeaseName) has a live holder: an upgrade never overlaps a Job the
//     previous version started. A free or stale old-style Lease is deleted.
//
// Leases and holder Jobs are read with an uncached reader, so a decision never rests on a stale cache.
type TableLock struct {
	Client client.Client // writes
	Reader client.Reader // uncached reads (the manager's API reader)
	Clock  clock.PassiveClock
	// Namespace holds the Leases: the manager's namespace.
	Namespace string
}

// createGrace is how long a holder whose Job does not exist yet keeps the lock.
const createGrace = time.Minute

// annotationHolderNamespace on a lock Lease is the namespace of the holder Job; annotationLockedTable names
// the DeltaTable (namespace/name) that started it, for people reading the Lease.
const (
	annotationHolderNamespace = "deltakeeper.io/holder-namespace"
	annotationLockedTable     = "deltakeeper.io/table"
	annotationLockedLocation  = "deltakeeper.io/location"
)

// LockBusy says who holds a table's lock.
type LockBusy struct{ Holder string }

func (b *LockBusy) Error() string { return "table lock held by Job " + b.Holder }

// leaseKey is the lock Lease of table.
func (l *TableLock) leaseKey(table *deltav1.DeltaTable) (types.NamespacedName, string, error) {
	id, err := tableIdentity(table)
	if err != nil {
		return types.NamespacedName{}, "", specError{fmt.Errorf("spec.location: %w", err)}
	}
	ns := l.Namespace
	if ns == "" {
		ns = table.Namespace
	}
	return types.NamespacedName{Namespace: ns, Name: LocationLeaseName(id)}, id, nil
}

// Acquire takes table's lock for jobName (a Job in table's namespace). It returns a *LockBusy error when
// another Job holds it, or an error for unexpected API failures. Acquiring a lock already held by jobName
// succeeds.
func (l *TableLock) Acquire(ctx context.Context, table *deltav1.DeltaTable, jobName string, liveJobs []batchv1.Job) error {
	for i := range liveJobs {
		if j := &liveJobs[i]; j.Name != jobName && isLive(j) {
			return &LockBusy{Holder: j.Name}
		}
	}
	if err := l.checkLegacy(ctx, table, jobName); err != nil {
		return err
	}
	key, id, err := l.leaseKey(table)
	if err != nil {
		return err
	}
	var lease coordinationv1.Lease
	err = l.Reader.Get(ctx, key, &lease)
	if apierrors.IsNotFound(err) {
		lease = l.newLease(key, id, table, jobName)
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
	holder, holderNS := leaseHolder(&lease, table.Namespace)
	switch {
	case holder == jobName && holderNS == table.Namespace:
		return nil
	case holder != "":
		stale, err := l.isStale(ctx, holderNS, holder, lease.Spec.AcquireTime)
		if err != nil {
			return err
		}
		if !stale {
			return &LockBusy{Holder: holderName(holderNS, holder, table.Namespace)}
		}
	}
	now := metav1.NewMicroTime(l.Clock.Now())
	lease.Spec.HolderIdentity = ptr.To(jobName)
	lease.Spec.AcquireTime = &now
	lease.Spec.RenewTime = &now
	lease.Spec.LeaseTransitions = ptr.To(ptr.Deref(lease.Spec.LeaseTransitions, 0) + 1)
	if lease.Annotations == nil {
		lease.Annotations = map[string]string{}
	}
	lease.Annotations[annotationHolderNamespace] = table.Namespace
	lease.Annotations[annotationLockedTable] = table.Namespace + "/" + table.Name
	// Update carries the resourceVersion we read: if anyone changed the Lease since, it fails with Conflict.
	if err := l.Client.Update(ctx, &lease); err != nil {
		if apierrors.IsConflict(err) || apierrors.IsNotFound(err) {
			return &LockBusy{Holder: "(another Job, just now)"}
		}
		return fmt.Errorf("take over lock Lease %s: %w", key, err)
	}
	return nil
}

// checkLegacy honours the per-object Lease of an older manager (LeaseName in the table's namespace): busy
// while its holder lives, deleted once it is free or stale.
func (l *TableLock) checkLegacy(ctx context.Context, table *deltav1.DeltaTable, jobName string) error {
	key := types.NamespacedName{Namespace: table.Namespace, Name: LeaseName(table.Name)}
	if l.Namespace == "" {
		return nil // no separate lock namespace: not an upgrade that could leave old Leases
	}
	var lease coordinationv1.Lease
	if err := l.Reader.Get(ctx, key, &lease); err != nil {
		if apierrors.IsNotFound(err) {
			return nil
		}
		return fmt.Errorf("read old-style lock Lease %s: %w", key, err)
	}
	if holder := ptr.Deref(lease.Spec.HolderIdentity, ""); holder != "" && holder != jobName {
		stale, err := l.isStale(ctx, table.Namespace, holder, lease.Spec.AcquireTime)
		if err != nil {
			return err
		}
		if !stale {
			return &LockBusy{Holder: holder}
		}
	}
	err := l.Client.Delete(ctx, &lease, client.Preconditions{UID: &lease.UID, ResourceVersion: &lease.ResourceVersion})
	if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
		return fmt.Errorf("delete old-style lock Lease %s: %w", key, err)
	}
	return nil
}

// leaseHolder returns the holder Job of a Lease and its namespace (def for Leases without the annotation).
func leaseHolder(lease *coordinationv1.Lease, def string) (name, namespace string) {
	namespace = lease.Annotations[annotationHolderNamespace]
	if namespace == "" {
		namespace = def
	}
	return ptr.Deref(lease.Spec.HolderIdentity, ""), namespace
}

// holderName names a holder Job for messages: qualified when it runs in another namespace.
func holderName(namespace, name, from string) string {
	if namespace == from {
		return name
	}
	return namespace + "/" + name
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

// Release frees table's lock if jobName (in table's namespace) holds it. Losing a race here is harmless
// (see TableLock).
func (l *TableLock) Release(ctx context.Context, table *deltav1.DeltaTable, jobName string) error {
	key, _, err := l.leaseKey(table)
	if err != nil {
		return nil // a location without a key never had a Lease (and Acquire refused it)
	}
	var lease coordinationv1.Lease
	if err := l.Reader.Get(ctx, key, &lease); err != nil {
		return client.IgnoreNotFound(err)
	}
	if holder, ns := leaseHolder(&lease, table.Namespace); holder != jobName || ns != table.Namespace {
		return nil
	}
	err = l.Client.Delete(ctx, &lease, client.Preconditions{UID: &lease.UID, ResourceVersion: &lease.ResourceVersion})
	if err != nil && !apierrors.IsConflict(err) && !apierrors.IsNotFound(err) {
		return fmt.Errorf("release lock Lease %s: %w", key, err)
	}
	return nil
}

// Holder returns the Job holding table's lock and whether it runs in the table's own namespace, or "".
func (l *TableLock) Holder(ctx context.Context, table *deltav1.DeltaTable) (name string, ownNamespace bool, err error) {
	key, _, err := l.leaseKey(table)
	if err != nil {
		return "", false, nil // a location without a key never had a Lease (and Acquire refused it)
	}
	var lease coordinationv1.Lease
	if err := l.Reader.Get(ctx, key, &lease); err != nil {
		return "", false, client.IgnoreNotFound(err)
	}
	holder, ns := leaseHolder(&lease, table.Namespace)
	return holder, ns == table.Namespace, nil
}

// newLease is the lock of a table identity held by jobName. It has no owner: it is shared by every
// DeltaTable naming the table, and Release deletes it.
func (l *TableLock) newLease(key types.NamespacedName, identity string, table *deltav1.DeltaTable, jobName string) coordinationv1.Lease {
	now := metav1.NewMicroTime(l.Clock.Now())
	return coordinationv1.Lease{
		ObjectMeta: metav1.ObjectMeta{
			Name:      key.Name,
			Namespace: key.Namespace,
			Labels: map[string]string{
				labelAppName:      appName,
				labelAppManagedBy: appManagedBy,
			},
			Annotations: map[string]string{
				annotationHolderNamespace: table.Namespace,
				annotationLockedTable:     table.Namespace + "/" + table.Name,
				annotationLockedLocation:  sanitize(identity, 2048),
			},
		},
		Spec: coordinationv1.LeaseSpec{
			HolderIdentity:   ptr.To(jobName),
			AcquireTime:      &now,
			RenewTime:        &now,
			LeaseTransitions: ptr.To[int32](0),
		},
	}
}
