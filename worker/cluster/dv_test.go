package cluster_test

import (
	"context"
	"encoding/binary"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// inlineDV builds an inline deletion vector ("i": the bitmap Z85-encoded in the log).
func inlineDV(t *testing.T, rows ...uint64) *delta.DeletionVectorDescriptor {
	t.Helper()
	data, err := delta.EncodeRoaringBitmapArray(roaring64.BitmapOf(rows...))
	if err != nil {
		t.Fatal(err)
	}
	const alphabet = "0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ.-:+=^!/*?&<>()[]{}@%$#"
	padded := append(append([]byte{}, data...), make([]byte, (4-len(data)%4)%4)...)
	var z []byte
	for i := 0; i < len(padded); i += 4 {
		v := binary.BigEndian.Uint32(padded[i:])
		var block [5]byte
		for j := 4; j >= 0; j-- {
			block[j] = alphabet[v%85]
			v /= 85
		}
		z = append(z, block[:]...)
	}
	return &delta.DeletionVectorDescriptor{StorageType: delta.DVStorageInline, PathOrInlineDv: string(z),
		SizeInBytes: int32(len(data)), Cardinality: int64(len(rows))}
}

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
	tx.Add(victim.WithDeletionVector(inlineDV(t, deleted...), victim.ModificationTime))
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
