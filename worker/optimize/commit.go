package optimize

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// committer commits batches of rewritten bins, one OPTIMIZE transaction each.
type committer struct {
	tbl    *delta.Table
	base   *delta.Snapshot // the snapshot transactions start from; advanced only after conflicts
	opts   Options
	params map[string]string
	rep    *Report
	rounds int
	// winners are the concurrent commits rebased onto so far.
	winners map[delta.Version]bool
}

func newCommitter(p *Plan, opts Options, params map[string]string, rep *Report) *committer {
	rounds := opts.MaxConflictRounds
	if rounds <= 0 {
		rounds = defaultMaxConflictRounds
	}
	return &committer{tbl: p.Snapshot.Table(), base: p.Snapshot, opts: opts, params: params, rep: rep, rounds: rounds, winners: map[delta.Version]bool{}}
}

// commit commits one batch. Winners that only appended are rebased onto by the transaction. After a
// conflicting winner it retries on the latest snapshot with the bins whose inputs are all still live
// there (Spark's rule: a compaction is only valid while every file it read is), dropping the others.
// Outputs of bins that are not committed are deleted unless the commit's outcome is unknown.
func (c *committer) commit(ctx context.Context, batch []*rewritten) error {
	cause := "a concurrent commit"
	for round := 0; ; round++ {
		// Bins planned on an older snapshot than base (after an earlier conflict) are checked too.
		batch = c.keepLive(ctx, batch, cause)
		if len(batch) == 0 {
			return nil
		}
		// Interrupted: do not start a commit whose outcome the cancellation would make unknown.
		if err := ctx.Err(); err != nil {
			abortAll(ctx, batch)
			return fmt.Errorf("compaction interrupted before committing %d bins: %w", len(batch), context.Cause(ctx))
		}
		tx, err := c.transaction(batch)
		if err != nil {
			abortAll(ctx, batch)
			return err
		}
		res, err := tx.Commit(ctx)
		if err == nil {
			c.record(res, batch)
			return nil
		}
		var unknown *delta.CommitOutcomeUnknownError
		var conflict *delta.ConflictError
		switch {
		case errors.As(err, &unknown):
			// The log may reference the outputs: keep them, and stop.
			c.rep.Unknown = true
			return fmt.Errorf("%w; the rewritten files of this batch were kept in case it landed (VACUUM removes them if not)", err)
		case !errors.As(err, &conflict):
			abortAll(ctx, batch)
			return err
		case round+1 >= c.rounds:
			abortAll(ctx, batch)
			return fmt.Errorf("giving up after %d conflicting commits: %w", round+1, err)
		}
		latest, lerr := c.tbl.LatestWith(ctx, c.base.LoadOptions())
		if lerr != nil {
			abortAll(ctx, batch)
			return errors.Join(err, lerr)
		}
		if why := delta.RewriteIncompatibility(c.base, latest); why != "" {
			abortAll(ctx, batch)
			return fmt.Errorf("%w; not retrying: %s", err, why)
		}
		c.base = latest
		cause = fmt.Sprintf("version %d (%s)", conflict.WinnerVersion, winnerOp(conflict))
	}
}

// keepLive drops the bins with an input that is not live in the base snapshot any more.
func (c *committer) keepLive(ctx context.Context, batch []*rewritten, cause string) []*rewritten {
	live := batch[:0:0]
	for _, rw := range batch {
		if gone := missingInput(c.base, rw.bin); gone != "" {
			c.drop(ctx, rw, fmt.Sprintf("input %s was removed by %s", gone, cause))
			continue
		}
		live = append(live, rw)
	}
	return live
}

// transaction builds the OPTIMIZE commit of a batch on the current base snapshot: removes carry the
// base's own file actions (same path and deletion vector as planned).
func (c *committer) transaction(batch []*rewritten) (*delta.Transaction, error) {
	// Every bin of a run is rewritten from one snapshot, so they all preserved row ids or none did;
	// incompatible refuses a base whose row tracking differs from theirs.
	preserved := true
	for _, rw := range batch {
		preserved = preserved && rw.outs.RowTrackingPreserved()
	}
	tx, err := c.base.Begin(delta.OpRewrite, delta.TxnOptions{Operation: "OPTIMIZE", OperationParameters: c.params, RowTrackingPreserved: preserved})
	if err != nil {
		return nil, err
	}
	m := newMetrics()
	for _, rw := range batch {
		for _, f := range rw.bin.Files {
			live, _ := c.base.File(f.Key())
			if n, ok := rw.bin.footerRows[f.Key()]; ok {
				live = live.WithNumRecords(n)
			}
			tx.RemoveKeepingRowCounts(false, live)
		}
		tx.Add(rw.adds...)
		m.addBin(rw)
	}
	m.apply(tx, c.rep.Batches)
	return tx, nil
}

// record accounts for a committed batch.
func (c *committer) record(res *delta.CommitResult, batch []*rewritten) {
	r := c.rep
	for _, w := range res.Winners {
		// Later batches start from the plan's snapshot, so they also rebase onto the earlier ones
		// and onto the same concurrent commits again: count each concurrent commit once.
		if !slices.Contains(r.Commits, w) && !c.winners[w] {
			c.winners[w] = true
			r.Rebased++
		}
	}
	r.Commits = append(r.Commits, res.Version)
	for _, rw := range batch {
		r.FilesRemoved += len(rw.bin.Files)
		r.BytesRemoved += rw.bin.Bytes
		r.DVsRemoved += int(rw.bin.DVFiles)
		r.FilesAdded += len(rw.adds)
		r.BytesAdded += rw.written
		r.RowsPurged += rw.purged
	}
}

func (c *committer) drop(ctx context.Context, rw *rewritten, reason string) {
	abort(ctx, rw)
	c.rep.Dropped = append(c.rep.Dropped, DroppedBin{Partition: rw.bin.Dir, Files: len(rw.bin.Files), Bytes: rw.bin.Bytes, Reason: reason})
	if c.rep.replan == nil {
		c.rep.replan = map[delta.FileKey]bool{}
	}
	for _, f := range rw.bin.Files {
		c.rep.replan[f.Key()] = true
	}
}

func abortAll(ctx context.Context, batch []*rewritten) {
	for _, rw := range batch {
		abort(ctx, rw)
	}
}

// missingInput returns the first input of the bin that is no longer live in snap (same path and
// deletion vector), or "".
func missingInput(snap *delta.Snapshot, b *Bin) string {
	for _, f := range b.Files {
		if _, ok := snap.File(f.Key()); !ok {
			return f.Path
		}
	}
	return ""
}

func winnerOp(e *delta.ConflictError) string {
	if e.WinnerOp == "" {
		return "unknown operation"
	}
	return e.WinnerOp
}
