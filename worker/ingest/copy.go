package ingest

import (
	"context"
	"fmt"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// copyGroupFiles bounds the source files one column copy takes at once (each is open while it runs).
const copyGroupFiles = 256

// copyParquet writes the batch's Parquet files whose columns fit the table exactly
// (table.CopyFits: an unpartitioned table, the same column names and layout, only widening
// conversions) through the column-copy engine, parquetio.Rewrite: their pages are copied into the
// new data files without decoding rows. It returns the files left for the row path: every file
// that does not fit (other names or types, new or missing columns, rescue mode, a partitioned
// table), and any the copy could not read, which the row path then reads (and reports, naming the
// file, row and column, if it is bad).
func (r *runner) copyParquet(ctx context.Context, snap *delta.Snapshot, files []source.File, w *writers) (rest []source.File, rows int64, err error) {
	if r.o.Format.Format != format.Parquet || len(snap.Metadata().PartitionColumns) > 0 {
		return files, 0, nil
	}
	type fit struct {
		f  source.File
		ra storage.ReaderAt
	}
	var fits []fit
	defer func() {
		for _, x := range fits {
			x.ra.Close()
		}
	}()
	for _, f := range files {
		if ra, ok := r.openFit(ctx, snap, f); ok {
			fits = append(fits, fit{f, ra})
		} else {
			rest = append(rest, f)
		}
	}
	// With optimized writes the copy takes the files together, so that outputs roll at the target
	// across them; without, each source file gets its own outputs, as on the row path.
	group := 1
	if w.optimized {
		group = copyGroupFiles
	}
	for start := 0; start < len(fits); start += group {
		part := fits[start:min(start+group, len(fits))]
		ras := make([]storage.ReaderAt, len(part))
		for i, x := range part {
			ras[i] = x.ra
		}
		res, err := table.CopyFiles(ctx, snap, w.opts, ras)
		if err != nil {
			if ctx.Err() != nil {
				return nil, 0, ctx.Err()
			}
			r.o.Logger.Info("Column copy of Parquet sources failed; reading them as rows", "files", len(part), "err", err)
			for _, x := range part {
				rest = append(rest, x.f)
			}
			continue
		}
		w.copied(res)
		rows += res.Rows
		crashPoint("file-written")
	}
	return rest, rows, nil
}

// openFit opens a source file for the column copy if it is still the planned file and fits the
// table; otherwise the row path takes it.
func (r *runner) openFit(ctx context.Context, snap *delta.Snapshot, f source.File) (storage.ReaderAt, bool) {
	info, err := r.src.Store().Stat(ctx, f.Key)
	if err != nil {
		return nil, false
	}
	if (source.File{Key: f.Key, Size: info.Size, ModTime: info.ModTime, ETag: info.ETag}).Identity() != f.Identity() {
		return nil, false
	}
	ra, err := r.src.Store().Open(ctx, f.Key)
	if err != nil {
		return nil, false
	}
	pf, err := parquetio.Open(ctx, ra)
	if err != nil || !table.CopyFits(snap, pf) {
		ra.Close()
		return nil, false
	}
	return ra, true
}

// copied records a column copy's files for the commit (and for abort).
func (w *writers) copied(res *table.CopyResult) {
	w.done = append(w.done, res.Adds...)
	w.copiedKeys = append(w.copiedKeys, res.Keys...)
}

// abortCopies deletes the column copies' files.
func (w *writers) abortCopies(ctx context.Context) error {
	keys := w.copiedKeys
	w.copiedKeys = nil
	if err := table.DeleteWritten(ctx, w.snap, keys); err != nil {
		return fmt.Errorf("delete copied files: %w", err)
	}
	return nil
}
