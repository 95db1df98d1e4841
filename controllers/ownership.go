package controllers

import (
	"cmp"
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// One owner per physical table. Two DeltaTables (in any namespaces) that name the same table (tableIdentity)
// would otherwise commit their declared properties against each other on every inspection and schedule
// maintenance twice. The older one owns the table: the earlier creationTimestamp, then the smaller
// namespace/name, an order every reconciler computes alike from its cache. The other one, the duplicate,
// says so in Ready (DuplicateLocation, naming the owner) and starts nothing: no inspection, so no
// declared-property commits, and no maintenance. When the owner is deleted the duplicate is reconciled
// again (sameIdentity) and takes over. The table lock (TableLock) is keyed by the same identity, so even
// while caches disagree for a moment after two creations, two Jobs never run on the table at once.

// fieldTableIdentity indexes DeltaTables by a hash of their identity in the manager's cache.
const fieldTableIdentity = "deltakeeper.io/table-identity"

func identityKey(t *deltav1.DeltaTable) (string, bool) {
	id, err := tableIdentity(t)
	if err != nil {
		return "", false
	}
	return longHash(id), true
}

// indexTableIdentity registers the identity index with the manager's cache.
func indexTableIdentity(ctx context.Context, indexer client.FieldIndexer) error {
	err := indexer.IndexField(ctx, &deltav1.DeltaTable{}, fieldTableIdentity, func(obj client.Object) []string {
		t, ok := obj.(*deltav1.DeltaTable)
		if !ok {
			return nil
		}
		if key, ok := identityKey(t); ok {
			return []string{key}
		}
		return nil
	})
	if err != nil {
		return fmt.Errorf("index DeltaTables by location: %w", err)
	}
	return nil
}

// ownsBefore reports whether a owns a shared table rather than b: older first, then namespace/name.
func ownsBefore(a, b *deltav1.DeltaTable) bool {
	if !a.CreationTimestamp.Equal(&b.CreationTimestamp) {
		return a.CreationTimestamp.Before(&b.CreationTimestamp)
	}
	return cmp.Or(cmp.Compare(a.Namespace, b.Namespace), cmp.Compare(a.Name, b.Name)) < 0
}

// sameIdentity lists the DeltaTables (all namespaces the cache sees) that name table's physical table,
// table itself included when the cache has it; tables being deleted are left out.
func (r *reconcilerBase) sameIdentity(ctx context.Context, table *deltav1.DeltaTable) ([]deltav1.DeltaTable, error) {
	key, ok := identityKey(table)
	if !ok {
		return nil, nil
	}
	var list deltav1.DeltaTableList
	if err := r.List(ctx, &list, client.MatchingFields{fieldTableIdentity: key}); err != nil {
		return nil, fmt.Errorf("list DeltaTables at the location of %s/%s: %w", table.Namespace, table.Name, err)
	}
	out := list.Items[:0]
	for _, t := range list.Items {
		if t.DeletionTimestamp == nil {
			out = append(out, t)
		}
	}
	return out, nil
}

// locationOwner returns the DeltaTable that owns table's physical table when that is another one (table is
// a duplicate), or nil.
func (r *reconcilerBase) locationOwner(ctx context.Context, table *deltav1.DeltaTable) (*deltav1.DeltaTable, error) {
	same, err := r.sameIdentity(ctx, table)
	if err != nil {
		return nil, err
	}
	var owner *deltav1.DeltaTable
	for i := range same {
		t := &same[i]
		if t.UID != table.UID && ownsBefore(t, table) && (owner == nil || ownsBefore(t, owner)) {
			owner = t
		}
	}
	return owner, nil
}

// duplicateMessage is the Ready message (and skip reason) of a duplicate.
func duplicateMessage(table, owner *deltav1.DeltaTable) string {
	return fmt.Sprintf("DeltaTable %s/%s, created earlier, manages the same table (%s); this one runs nothing "+
		"until that one is deleted: delete this DeltaTable or point it at another location",
		owner.Namespace, owner.Name, owner.Spec.Location)
}

// tablesAtSameLocation maps a DeltaTable's creation or deletion to every DeltaTable naming the same
// physical table, so a duplicate learns at once that it became one or that its owner went away.
func (r *DeltaTableReconciler) tablesAtSameLocation(ctx context.Context, obj client.Object) []reconcile.Request {
	table, ok := obj.(*deltav1.DeltaTable)
	if !ok {
		return nil
	}
	same, err := r.sameIdentity(ctx, table)
	if err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list DeltaTables at the same location", "table", table.Name)
		return nil
	}
	var reqs []reconcile.Request
	for _, t := range same {
		if t.UID != table.UID {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: t.Namespace, Name: t.Name}})
		}
	}
	return reqs
}
