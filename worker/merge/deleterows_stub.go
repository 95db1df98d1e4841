package merge

// A stand-in for dv's table.DeleteRows until it lands (row-by-row copy-on-write, no DVs, no row
// ids): the merge calls deleteRows through these names, which then become aliases of table's.

import (
	"context"
	"errors"
	"io"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

type fileDeletes struct {
	File      *delta.AddFile
	Positions *roaring64.Bitmap
}

type deleteResult struct {
	FilesTouched, FilesRewritten, FilesRemoved, DVsWritten int
	RowsDeleted, BytesWritten                              int64
	Abort                                                  func(ctx context.Context) error
}

func deleteRows(ctx context.Context, tx *delta.Transaction, deletes []fileDeletes, opts table.WriteOptions) (*deleteResult, error) {
	snap := tx.Snapshot()
	res := &deleteResult{}
	var outsAll []*table.RewriteOutputs
	res.Abort = func(ctx context.Context) error {
		for _, o := range outsAll {
			_ = o.Abort(ctx)
		}
		return nil
	}
	for _, fd := range deletes {
		f := fd.File
		key, err := delta.ObjectKey(snap.Table().Location(), f.Path)
		if err != nil {
			return nil, err
		}
		deleted := roaring64.New()
		if f.DeletionVector != nil {
			if deleted, err = delta.LoadDeletionVector(ctx, snap.Table().Store(), f.DeletionVector); err != nil {
				return nil, err
			}
		}
		deleted.Or(fd.Positions)
		ra, err := snap.Table().Store().Open(ctx, key)
		if err != nil {
			return nil, err
		}
		pf, err := parquetio.Open(ctx, ra)
		if err != nil {
			return nil, err
		}
		outs, err := table.NewRewriteOutputs(ctx, snap, f.PartitionValues, opts)
		if err != nil {
			return nil, err
		}
		outsAll = append(outsAll, outs)
		schema := outs.Options().Schema
		rows, err := pf.Rows(ctx, schema, parquetio.ReadOptions{Deleted: deleted, MatchFieldIDs: snap.ColumnMappingMode() == delta.ColumnMappingID})
		if err != nil {
			return nil, err
		}
		var kept []types.Struct
		for {
			b, err := rows.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, err
			}
			kept = append(kept, b.Rows...)
		}
		rows.Close()
		ra.Close()
		tx.Remove(true, f)
		res.FilesTouched++
		res.RowsDeleted += int64(fd.Positions.GetCardinality())
		if len(kept) == 0 {
			res.FilesRemoved++
			continue
		}
		sw, err := outs.Create(0)
		if err != nil {
			return nil, err
		}
		pw, err := parquetio.NewWriter(sw, schema, outs.Options().Writer)
		if err != nil {
			return nil, err
		}
		if err := pw.Write(kept); err != nil {
			return nil, err
		}
		wr, err := pw.Close()
		if err != nil {
			return nil, err
		}
		if err := sw.Close(); err != nil {
			return nil, err
		}
		add, err := outs.AddFile(0, wr)
		if err != nil {
			return nil, err
		}
		tx.Add(add)
		res.FilesRewritten++
		res.BytesWritten += add.Size
	}
	return res, nil
}
