package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	coordinationv1 "k8s.io/api/coordination/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
)

// A lock Lease is deleted by Release when the reconciler that started its holder sees the Job finish. A
// table deleted while its Job ran, or a holder that finished while no reconciler looked at its table again,
// leaves a Lease nobody releases. That is harmless for the lock (a stale holder is taken over) but leaves
// one object per such table in the manager's namespace for ever; the leader sweeps them.

// lockSweepInterval is how often the leader looks for stale lock Leases.
const lockSweepInterval = 10 * time.Minute

// locationLeasePrefix starts the name of every lock Lease (LocationLeaseName).
const locationLeasePrefix = "deltakeeper-location-"

// SweepStale deletes the lock Leases in the lock namespace whose holder no longer needs them (isStale: its
// Job finished, or does not exist createGrace after the lock was taken). Each delete is guarded by the
// resourceVersion read, so a Lease taken over meanwhile stays. It returns how many it deleted.
func (l *TableLock) SweepStale(ctx context.Context) (int, error) {
	var leases coordinationv1.LeaseList
	if err := l.Reader.List(ctx, &leases, client.InNamespace(l.Namespace),
		client.MatchingLabels{labelAppManagedBy: appManagedBy}); err != nil {
		return 0, fmt.Errorf("list lock Leases in %s: %w", l.Namespace, err)
	}
	deleted := 0
	for i := range leases.Items {
		lease := &leases.Items[i]
		if !strings.HasPrefix(lease.Name, locationLeasePrefix) {
			continue
		}
		holder := ptr.Deref(lease.Spec.HolderIdentity, "")
		stale := holder == "" && (lease.Spec.AcquireTime == nil || l.Clock.Since(lease.Spec.AcquireTime.Time) > createGrace)
		if holder != "" {
			ns := lease.Annotations[annotationHolderNamespace]
			if ns == "" {
				continue // not ours to judge: every lock Lease names its holder's namespace
			}
			var err error
			if stale, err = l.isStale(ctx, ns, holder, lease.Spec.AcquireTime); err != nil {
				return deleted, err
			}
		}
		if !stale {
			continue
		}
		err := l.Client.Delete(ctx, lease, client.Preconditions{UID: &lease.UID, ResourceVersion: &lease.ResourceVersion})
		switch {
		case err == nil:
			deleted++
		case apierrors.IsConflict(err) || apierrors.IsNotFound(err):
		default:
			return deleted, fmt.Errorf("delete stale lock Lease %s/%s: %w", lease.Namespace, lease.Name, err)
		}
	}
	return deleted, nil
}

// sweepStaleLocks runs SweepStale every lockSweepInterval until ctx ends (a manager Runnable: the leader
// only). A failed sweep is logged and retried at the next interval.
func (l *TableLock) sweepStaleLocks(ctx context.Context) error {
	log := ctrl.LoggerFrom(ctx).WithName("lock-sweep")
	t := time.NewTicker(lockSweepInterval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			n, err := l.SweepStale(ctx)
			if err != nil {
				log.Error(err, "Sweeping stale table locks failed; retrying at the next interval")
			} else if n > 0 {
				log.Info("Deleted stale table lock Leases", "count", n)
			}
		}
	}
}
