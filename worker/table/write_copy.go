package table

import (
	"context"
	"fmt"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// CopyResult is what CopyFiles wrote: the AddFiles for the caller's transaction, the keys of the
// files (for DeleteWritten when the commit does not happen) and the rows they hold.
type CopyResult struct {
	Adds []*delta.AddFile
	Keys []string
	Rows int64
}

// CopyFits reports whether CopyFiles can write the rows of a Parquet file f into the table of
// snap: an unpartitioned table, and a file whose columns parquetio.CopyFits the table's physical
// schema (which, under column mapping, a source file's logical names never do).
func CopyFits(snap *delta.Snapshot, f *parquetio.File) bool {
	return len(snap.Metadata().PartitionColumns) == 0 && parquetio.CopyFits(f, snap.PhysicalSchema())
}

// CopyFiles writes the rows of Parquet files that CopyFits the table as new data files, through
// parquetio.Rewrite's column copy (no row is decoded): files roll over at the target size, with
// statistics from the pages written, as Writer's. Nothing is committed. On error the files written
// so far are deleted.
func CopyFiles(ctx context.Context, snap *delta.Snapshot, opts WriteOptions, inputs []storage.ReaderAt) (*CopyResult, error) {
	l, err := newLayout(snap, opts)
	if err != nil {
		return nil, err
	}
	if len(l.partIdx) > 0 {
		return nil, fmt.Errorf("table %s is partitioned: write its rows with Writer", snap.Table().Location())
	}
	store := snap.Table().Store()
	res := &CopyResult{}
	create := func(i int) (storage.Writer, error) {
		key := delta.DataFileName(i, l.writer.Codec)
		w, err := store.Create(ctx, key)
		if err != nil {
			return nil, fmt.Errorf("create %s: %w", key, err)
		}
		res.Keys = append(res.Keys, key)
		return w, nil
	}
	ins := make([]parquetio.RewriteInput, len(inputs))
	for i, ra := range inputs {
		ins[i] = parquetio.RewriteInput{File: ra}
	}
	writer := l.writer
	// Rewrite holds about two row groups in memory; small targets get row groups that roll in time.
	writer.RowGroupBytes = min(writer.RowGroupBytes, parquetio.DefaultRewriteRowGroupBytes)
	out, err := parquetio.Rewrite(ctx, ins, create, parquetio.RewriteOptions{
		Schema: l.fileSchema, Writer: writer, TargetFileBytes: l.target,
	})
	if err == nil && len(out.Files) != len(res.Keys) {
		err = fmt.Errorf("copy wrote %d files but created %d", len(out.Files), len(res.Keys))
	}
	if err != nil {
		return nil, errorsJoin(err, deleteKeys(ctx, store, res.Keys))
	}
	for i, wr := range out.Files {
		add, err := l.addFile(res.Keys[i], nil, wr)
		if err != nil {
			return nil, errorsJoin(err, deleteKeys(ctx, store, res.Keys))
		}
		res.Adds = append(res.Adds, add)
	}
	res.Rows = out.Rows
	return res, nil
}

// DeleteWritten deletes files CopyFiles wrote: call it when the commit that would have referenced
// them definitely did not happen.
func DeleteWritten(ctx context.Context, snap *delta.Snapshot, keys []string) error {
	return deleteKeys(ctx, snap.Table().Store(), keys)
}

func errorsJoin(err, cleanup error) error {
	if cleanup != nil {
		return fmt.Errorf("%w (and deleting the files written failed: %v)", err, cleanup)
	}
	return err
}
