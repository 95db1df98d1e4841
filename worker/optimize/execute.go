package optimize

import (
	"context"
	"fmt"
	"sync"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	wprogress "github.com/deltakeeper/deltakeeper/worker/progress"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// rewritten is a bin whose outputs are written and not yet committed.
type rewritten struct {
	bin     *Bin
	outs    *table.RewriteOutputs
	adds    []*delta.AddFile
	rows    int64 // rows written
	purged  int64 // rows the deletion vectors dropped
	written int64 // bytes of the outputs
}

// execute rewrites the plan's bins in parallel and commits them in batches as they complete.
// Rewriting continues while a batch commits. On any failure the outputs of every bin not committed
// are deleted, except those of a commit whose outcome is unknown.
func execute(ctx context.Context, p *Plan, opts Options, params map[string]string, rep *Report, progress func(string)) error {
	par := parallelism(opts.Parallelism)
	workers := min(par, len(p.Bins))
	perBin := max(1, par/workers)

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	bins := make(chan *Bin)
	// done carries every bin's outcome to the committer (this goroutine), errors included, so that
	// after a failure nothing more is committed.
	done := make(chan binOutcome, workers)
	var wg sync.WaitGroup
	for range workers {
		wg.Go(func() {
			for b := range bins {
				rw, err := rewriteBin(ctx, p, b, perBin)
				done <- binOutcome{rw, err}
				if err != nil {
					cancel()
					return
				}
			}
		})
	}
	go func() {
		defer close(bins)
		for _, b := range p.Bins {
			select {
			case bins <- b:
			case <-ctx.Done():
				return
			}
		}
	}()
	go func() { wg.Wait(); close(done) }()

	var files, bytes int64
	for _, b := range p.Bins {
		files, bytes = files+int64(len(b.Files)), bytes+b.Bytes
	}
	wprogress.Start(ctx, "optimize", files, bytes)
	c := newCommitter(p, opts, params, rep)
	batch := opts.BatchSize
	if batch <= 0 {
		batch = len(p.Bins)
	}
	var pending []*rewritten
	var runErr error
	finished, total := 0, len(p.Bins)
	for o := range done {
		switch {
		case o.err != nil:
			// The first failure is the cause; the other workers then fail with the cancellation.
			if runErr == nil {
				runErr = o.err
			}
			cancel()
			continue
		case runErr != nil:
			abort(ctx, o.rw)
			continue
		}
		finished++
		pending = append(pending, o.rw)
		wprogress.Advance(ctx, int64(len(o.rw.bin.Files)), o.rw.bin.Bytes)
		progress(fmt.Sprintf("rewrote %d/%d bins, committed %d files", finished, total, rep.FilesRemoved))
		if len(pending) < batch && finished < total {
			continue
		}
		if err := c.commit(ctx, pending); err != nil {
			runErr = err
			cancel()
		}
		pending = nil
	}
	for _, rw := range pending {
		abort(ctx, rw)
	}
	if runErr == nil && finished < total {
		// Interrupted between bins: the parent context was cancelled.
		runErr = fmt.Errorf("compaction interrupted after %d of %d bins: %w", finished, total, context.Cause(ctx))
	}
	return runErr
}

type binOutcome struct {
	rw  *rewritten
	err error
}

// rewriteBin streams one bin's files, deletion vectors applied, into new files of the table.
func rewriteBin(ctx context.Context, p *Plan, b *Bin, par int) (*rewritten, error) {
	snap := p.Snapshot
	store := snap.Table().Store()
	loc := snap.Table().Location()
	outs, err := table.NewRewriteOutputs(ctx, snap, b.PartitionValues, table.WriteOptions{TargetFileSize: p.Target})
	if err != nil {
		return nil, fmt.Errorf("table %s: prepare outputs of partition %s: %w", loc, b.Partition, err)
	}
	inputs := make([]parquetio.RewriteInput, 0, len(b.Files))
	defer func() {
		for _, in := range inputs {
			in.File.Close()
		}
	}()
	for _, f := range b.Files {
		in, err := openInput(ctx, store, loc, f)
		if err != nil {
			return nil, err
		}
		inputs = append(inputs, in)
	}
	ropts := outs.Options()
	ropts.Parallelism = par
	res, err := parquetio.Rewrite(ctx, inputs, outs.Create, ropts)
	rw := &rewritten{bin: b, outs: outs}
	if err != nil {
		abort(ctx, rw)
		return nil, fmt.Errorf("table %s: rewrite %d files of partition %s: %w", loc, len(b.Files), b.Partition, err)
	}
	rw.rows, rw.purged = res.Rows, res.Deleted
	// The transaction checks the row count against the statistics too; checking here names the bin
	// and stops before anything else is written.
	if res.Deleted != b.DVRows || b.RowsKnown && res.Rows != b.LiveRows {
		abort(ctx, rw)
		return nil, fmt.Errorf("table %s: rewriting partition %s produced %d rows (%d deleted by deletion vectors), the log says %d live rows (%d deleted): refusing to commit; the statistics or deletion vectors of these files do not match their data: %w",
			loc, b.Partition, res.Rows, res.Deleted, b.LiveRows, b.DVRows, delta.ErrCorruptTable)
	}
	if rw.adds, err = outs.AddFiles(res); err != nil {
		abort(ctx, rw)
		return nil, fmt.Errorf("table %s: describe outputs of partition %s: %w", loc, b.Partition, err)
	}
	for _, a := range rw.adds {
		rw.written += a.Size
	}
	return rw, nil
}

// openInput opens a data file and loads its deletion vector.
func openInput(ctx context.Context, store storage.Store, loc string, f *delta.AddFile) (parquetio.RewriteInput, error) {
	key, err := delta.ObjectKey(loc, f.Path)
	if err != nil {
		return parquetio.RewriteInput{}, fmt.Errorf("table %s: %w", loc, err)
	}
	// The base values are only read when the rewrite preserves row ids (RewriteOutputs.Options).
	in := parquetio.RewriteInput{RowTracking: f.RowTrackingBase()}
	if f.DeletionVector != nil {
		bm, err := delta.LoadDeletionVector(ctx, store, f.DeletionVector)
		if err != nil {
			return in, fmt.Errorf("table %s: deletion vector of %s: %w", loc, f.Path, err)
		}
		in.Deleted = bm
	}
	r, err := store.Open(ctx, key)
	if err != nil {
		return in, fmt.Errorf("table %s: open %s: %w", loc, key, err)
	}
	in.File = r
	return in, nil
}

// abort deletes a bin's outputs. It runs even when ctx is cancelled (an interrupted run must not
// leave orphans it knows about), bounded by its own timeout.
func abort(ctx context.Context, rw *rewritten) {
	ctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), 2*time.Minute)
	defer cancel()
	// A failed delete leaves an orphan for VACUUM; nothing references it.
	_ = rw.outs.Abort(ctx)
}
