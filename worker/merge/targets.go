package merge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// openData opens a live data file of the table with its deletion vector (nil when it has none).
func openData(ctx context.Context, snap *delta.Snapshot, f *delta.AddFile) (*parquetio.File, func(), *roaring64.Bitmap, error) {
	key, err := delta.ObjectKey(snap.Table().Location(), f.Path)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("data file %s: %w; merge only reads files under the table root", f.Path, err)
	}
	var deleted *roaring64.Bitmap
	if f.DeletionVector != nil {
		if deleted, err = delta.LoadDeletionVector(ctx, snap.Table().Store(), f.DeletionVector); err != nil {
			return nil, nil, nil, fmt.Errorf("data file %s: %w", f.Path, err)
		}
	}
	ra, err := snap.Table().Store().Open(ctx, key)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("open data file %s: %w", f.Path, err)
	}
	pf, err := parquetio.Open(ctx, ra)
	if err != nil {
		ra.Close()
		return nil, nil, nil, fmt.Errorf("data file %s: %w", f.Path, err)
	}
	return pf, func() { ra.Close() }, deleted, nil
}

// targetRow is a matched target row as the write schema sees it, with its stable row id when row
// tracking preserves ids.
type targetRow struct {
	row   types.Struct
	rowID int64
}

// readTargetRows reads the full rows at the given sorted positions of one target file, in the write
// schema (columns the file predates read null). rtColumn is the physical name of the materialized
// row id column ("" when ids are not preserved).
func readTargetRows(ctx context.Context, snap, wsnap *delta.Snapshot, f *delta.AddFile, positions []int64, rtColumn string) (map[int64]targetRow, error) {
	schema, physical := wsnap.Schema(), wsnap.PhysicalSchema()
	isPart := func(name string) bool { return slices.Contains(wsnap.Metadata().PartitionColumns, name) }
	fileSchema := &types.StructType{}
	var fromFile []int
	consts := make(types.Struct, len(schema.Fields))
	for i, c := range schema.Fields {
		if isPart(c.Name) {
			v, err := snap.PartitionValue(f, c.Name)
			if err != nil {
				return nil, fmt.Errorf("data file %s: partition value of %s: %w", f.Path, c.Name, err)
			}
			consts[i] = v
			continue
		}
		fileSchema.Fields = append(fileSchema.Fields, physical.Fields[i])
		fromFile = append(fromFile, i)
	}
	if rtColumn != "" {
		fileSchema.Fields = append(fileSchema.Fields, &types.StructField{Name: rtColumn, Type: types.Primitive(types.TypeLong), Nullable: true})
	}
	pf, closeFile, deleted, err := openData(ctx, snap, f)
	if err != nil {
		return nil, err
	}
	defer closeFile()
	out := make(map[int64]targetRow, len(positions))
	rows, err := pf.Rows(ctx, fileSchema, parquetio.ReadOptions{
		MatchFieldIDs: snap.ColumnMappingMode() == delta.ColumnMappingID,
		Deleted:       deleted,
		WithRowIndex:  true,
	})
	if err != nil {
		return nil, fmt.Errorf("data file %s: %w", f.Path, err)
	}
	defer rows.Close()
	for {
		b, err := rows.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("data file %s: %w", f.Path, err)
		}
		for n, r := range b.Rows {
			pos := b.RowIndexes[n]
			if _, want := slices.BinarySearch(positions, pos); !want {
				continue
			}
			row := slices.Clone(consts)
			for c, i := range fromFile {
				row[i] = r[c]
			}
			tr := targetRow{row: row}
			if rtColumn != "" {
				id, err := delta.PreservedRowID(f, pos, r[len(fromFile)])
				if err != nil {
					return nil, fmt.Errorf("data file %s, row %d: %w", f.Path, pos, err)
				}
				tr.rowID = id
			}
			out[pos] = tr
		}
	}
	if len(out) != len(positions) {
		return nil, fmt.Errorf("data file %s: %d of %d matched rows read back; the file changed under the merge", f.Path, len(out), len(positions))
	}
	return out, nil
}
