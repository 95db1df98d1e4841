package ingest

import (
	"context"
	"errors"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// PropOptimizeWrite enables optimized writes for a table.
const PropOptimizeWrite = "delta.autoOptimize.optimizeWrite"

// optimizedOpenFiles bounds the partitions an optimized write keeps a file open for at once.
const optimizedOpenFiles = 64

// writers writes a batch's rows as data files. With optimized writes one table.Writer takes the whole
// batch: rows are grouped by partition values and files roll at the target size, so a batch of many
// small source files becomes few large data files. Without, each source file gets its own writer
// (one file per source file and partition, as a plain Spark append writes).
type writers struct {
	ctx       context.Context
	snap      *delta.Snapshot
	opts      table.WriteOptions
	optimized bool
	cur       *table.Writer
	done      []*delta.AddFile
	aborted   []*table.Writer
	// copiedKeys are the files the Parquet column copy wrote (copy.go).
	copiedKeys []string
}

func (r *runner) newWriters(ctx context.Context, snap *delta.Snapshot) *writers {
	opts := table.WriteOptions{DataChange: true, Now: r.o.Now}
	if _, ok, _ := snap.Properties().TargetFileSize(); !ok {
		opts.TargetFileSize = DefaultTargetFileSize
	}
	optimized := r.o.OptimizeWrite != nil && *r.o.OptimizeWrite
	if r.o.OptimizeWrite == nil {
		optimized = strings.EqualFold(strings.TrimSpace(snap.Properties()[PropOptimizeWrite]), "true")
	}
	if optimized {
		opts.MaxOpenFiles = optimizedOpenFiles
	}
	if cols, ok, _ := snap.ClusteringColumnsLogical(); ok && len(cols) > 0 {
		opts.ClusteringProvider = table.LiquidProvider
	}
	return &writers{ctx: ctx, snap: snap, opts: opts, optimized: optimized}
}

func (w *writers) write(c chunk) error {
	if w.cur == nil {
		tw, err := table.NewWriter(w.ctx, w.snap, w.opts)
		if err != nil {
			return err
		}
		w.cur = tw
	}
	if c.cols != nil {
		return w.cur.WriteColumns(c.cols)
	}
	return w.cur.Write(c.rows)
}

// endFile closes the current source file's writer unless the write is optimized.
func (w *writers) endFile() error {
	if w.optimized || w.cur == nil {
		return nil
	}
	return w.finish()
}

func (w *writers) finish() error {
	adds, err := w.cur.Close()
	w.aborted = append(w.aborted, w.cur) // Abort deletes its files if the commit does not happen
	w.cur = nil
	if err != nil {
		return err
	}
	w.done = append(w.done, adds...)
	return nil
}

func (w *writers) close() ([]*delta.AddFile, error) {
	if w.cur != nil {
		if err := w.finish(); err != nil {
			return nil, err
		}
	}
	return w.done, nil
}

// abort deletes every file written: the commit certainly did not happen.
func (w *writers) abort(ctx context.Context) {
	var errs []error
	if w.cur != nil {
		errs = append(errs, w.cur.Abort(ctx))
		w.cur = nil
	}
	for _, tw := range w.aborted {
		errs = append(errs, tw.Abort(ctx))
	}
	errs = append(errs, w.abortCopies(ctx))
	w.aborted, w.done = nil, nil
	_ = errors.Join(errs...) // leftovers are orphans for VACUUM, never referenced
}

// autoCompact runs auto compaction after a committed batch when the table or the stream enables it;
// its outcome is reported and never fails the batch.
func (r *runner) autoCompact(ctx context.Context, snap *delta.Snapshot, br *BatchReport) {
	if r.o.AutoCompact != nil && !*r.o.AutoCompact {
		return
	}
	rep, err := optimize.AutoCompact(ctx, r.tbl, br.commit, br.adds, optimize.AutoCompactOptions{
		Force: r.o.AutoCompact != nil && *r.o.AutoCompact, Logger: r.o.Logger, MaxFileSize: r.o.AutoCompactTarget,
	})
	br.AutoCompaction, br.AutoCompactionErr = rep, err
	if err != nil {
		r.o.Logger.Warn("Auto compaction failed; the batch is committed", "table", r.tbl.Location(), "batch", br.BatchID, "err", err)
	}
}
