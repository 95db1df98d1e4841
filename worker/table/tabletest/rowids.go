package tabletest

import (
	"context"
	"encoding/binary"
	"errors"
	"fmt"
	"io"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// RowIdentities maps every live row's stable row id to the row (canonical, data columns only) followed
// by its row commit version, as a reader of a row-tracking table computes them
// (delta.PreservedRowID): the materialized column when set, else baseRowId + physical row index and
// defaultRowCommitVersion. Two snapshots preserve row tracking for each other exactly when their maps
// are equal; a row id met twice is an error.
func RowIdentities(ctx context.Context, snap *delta.Snapshot) (map[int64]string, error) {
	rt, err := snap.RowTracking()
	if err != nil {
		return nil, err
	}
	if rt.MaterializedRowIDColumn == "" || rt.MaterializedRowCommitVersionColumn == "" {
		return nil, fmt.Errorf("table %s names no materialized row-tracking columns", snap.Table().Location())
	}
	schema := &types.StructType{Fields: append([]*types.StructField{}, snap.PhysicalSchema().Fields...)}
	nData := len(schema.Fields)
	schema.Fields = append(schema.Fields,
		&types.StructField{Name: rt.MaterializedRowIDColumn, Type: types.Primitive(types.TypeLong), Nullable: true},
		&types.StructField{Name: rt.MaterializedRowCommitVersionColumn, Type: types.Primitive(types.TypeLong), Nullable: true})
	matchIDs := snap.ColumnMappingMode() == delta.ColumnMappingID
	store := snap.Table().Store()
	ids := map[int64]string{}
	for _, f := range snap.Files() {
		if err := fileIdentities(ctx, snap, f, schema, nData, matchIDs, ids); err != nil {
			return nil, fmt.Errorf("table %s, file %s: %w", store.Location(), f.Path, err)
		}
	}
	return ids, nil
}

func fileIdentities(ctx context.Context, snap *delta.Snapshot, f *delta.AddFile, schema *types.StructType, nData int, matchIDs bool, ids map[int64]string) error {
	store := snap.Table().Store()
	key, err := delta.ObjectKey(store.Location(), f.Path)
	if err != nil {
		return err
	}
	opts := parquetio.ReadOptions{WithRowIndex: true, MatchFieldIDs: matchIDs}
	if f.DeletionVector != nil {
		if opts.Deleted, err = delta.LoadDeletionVector(ctx, store, f.DeletionVector); err != nil {
			return err
		}
	}
	r, err := store.Open(ctx, key)
	if err != nil {
		return err
	}
	defer r.Close()
	pf, err := parquetio.Open(ctx, r)
	if err != nil {
		return err
	}
	rr, err := pf.Rows(ctx, schema, opts)
	if err != nil {
		return err
	}
	defer rr.Close()
	for {
		b, err := rr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		for i, row := range b.Rows {
			id, err := delta.PreservedRowID(f, b.RowIndexes[i], row[nData])
			if err != nil {
				return err
			}
			ver, err := delta.PreservedRowCommitVersion(f, row[nData+1])
			if err != nil {
				return err
			}
			if _, dup := ids[id]; dup {
				return fmt.Errorf("row id %d appears twice", id)
			}
			ids[id] = table.CanonicalRow(append(row[:nData:nData], ver))
		}
	}
}

// SameIdentities reports the first difference between two RowIdentities maps.
func SameIdentities(before, after map[int64]string) error {
	if len(before) != len(after) {
		return fmt.Errorf("%d row ids after, %d before", len(after), len(before))
	}
	for id, row := range before {
		if after[id] != row {
			return fmt.Errorf("row id %d: %q after, %q before: row ids or commit versions were not preserved", id, after[id], row)
		}
	}
	return nil
}

// InlineDV builds an inline deletion vector ("i": the bitmap Z85-encoded in the log) deleting the
// given physical rows.
func InlineDV(rows ...uint64) (*delta.DeletionVectorDescriptor, error) {
	data, err := delta.EncodeRoaringBitmapArray(roaring64.BitmapOf(rows...))
	if err != nil {
		return nil, err
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
		SizeInBytes: int32(len(data)), Cardinality: int64(len(rows))}, nil
}
