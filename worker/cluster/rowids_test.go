package cluster_test

import (
	"context"
	"errors"
	"io"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// rowIdentities maps every live row's stable row id to the row (canonical, data columns only) and its
// row commit version, as a reader of a row-tracking table computes them: the materialized column when
// set, else baseRowId + physical row index and defaultRowCommitVersion.
func rowIdentities(t *testing.T, snap *delta.Snapshot) map[int64]string {
	t.Helper()
	ctx := context.Background()
	rt, err := snap.RowTracking()
	if err != nil {
		t.Fatal(err)
	}
	schema := &types.StructType{Fields: append([]*types.StructField{}, snap.PhysicalSchema().Fields...)}
	nData := len(schema.Fields)
	schema.Fields = append(schema.Fields,
		&types.StructField{Name: rt.MaterializedRowIDColumn, Type: types.Primitive(types.TypeLong), Nullable: true},
		&types.StructField{Name: rt.MaterializedRowCommitVersionColumn, Type: types.Primitive(types.TypeLong), Nullable: true})
	store := snap.Table().Store()
	ids := map[int64]string{}
	for _, f := range snap.Files() {
		key, err := delta.ObjectKey(store.Location(), f.Path)
		if err != nil {
			t.Fatal(err)
		}
		opts := parquetio.ReadOptions{WithRowIndex: true}
		if f.DeletionVector != nil {
			if opts.Deleted, err = delta.LoadDeletionVector(ctx, store, f.DeletionVector); err != nil {
				t.Fatal(err)
			}
		}
		r, err := store.Open(ctx, key)
		if err != nil {
			t.Fatal(err)
		}
		pf, err := parquetio.Open(ctx, r)
		if err != nil {
			t.Fatal(err)
		}
		rr, err := pf.Rows(ctx, schema, opts)
		if err != nil {
			t.Fatal(err)
		}
		for {
			b, err := rr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				t.Fatal(err)
			}
			for i, row := range b.Rows {
				id, err := delta.PreservedRowID(f, b.RowIndexes[i], row[nData])
				if err != nil {
					t.Fatal(err)
				}
				ver, err := delta.PreservedRowCommitVersion(f, row[nData+1])
				if err != nil {
					t.Fatal(err)
				}
				if _, dup := ids[id]; dup {
					t.Fatalf("row id %d appears twice", id)
				}
				ids[id] = table.CanonicalRow(append(row[:nData:nData], ver))
			}
		}
		rr.Close()
		r.Close()
	}
	return ids
}

func sameIdentities(t *testing.T, before, after map[int64]string) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("%d row ids after, %d before", len(after), len(before))
	}
	for id, row := range before {
		if after[id] != row {
			t.Fatalf("row id %d: %q after, %q before: row ids or commit versions were not preserved", id, after[id], row)
		}
	}
}
