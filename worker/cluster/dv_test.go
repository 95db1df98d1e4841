package cluster_test

import (
	"context"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
)

func TestOptimize_PurgesRowsHiddenByDeletionVectors(t *testing.T) {
	f := newFixture(t, map[string]string{"delta.enableDeletionVectors": "true"})
	f.appendFiles(eventRows(8_000, 0, 1), 4)
	f.clusterBy("a", "b")
	f.optimize(opts(func(o *cluster.Options) { o.TargetFileSize = 1 << 20 }))
	snap := f.latest()
	victim := snap.Files()[0]
	var deleted []uint64
	for r := uint64(0); r < 4_000; r += 3 {
		deleted = append(deleted, r)
	}
	tx, err := snap.Begin(delta.OpMerge, delta.TxnOptions{Operation: "DELETE"})
	if err != nil {
		t.Fatal(err)
	}
	tx.Remove(true, victim)
	dv, err := tabletest.InlineDV(deleted...)
	if err != nil {
		t.Fatal(err)
	}
	tx.Add(victim.WithDeletionVector(dv, victim.ModificationTime))
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Fatal(err)
	}
	before := f.rows()
	op := f.optimize(opts(func(o *cluster.Options) { o.TargetFileSize = 1 << 20 }))
	if op.Outcome != result.Succeeded || op.RowsPurged != int64(len(deleted)) {
		t.Fatalf("op = %+v, want the file with %d deleted rows rewritten", op, len(deleted))
	}
	sameRows(t, before, f.rows())
	for _, a := range f.latest().Files() {
		if a.DeletionVector != nil {
			t.Fatalf("file %s still carries a deletion vector", a.Path)
		}
	}
}
