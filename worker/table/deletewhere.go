package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
)

// DeleteWhereOptions control DeleteWhere.
type DeleteWhereOptions struct {
	Write WriteOptions
	// Retry bounds the commit's retries after compatible concurrent commits.
	Retry delta.RetryPolicy
	// MaxReplans bounds how often the delete starts again on a fresh snapshot after a concurrent
	// commit removed a file it read (an OPTIMIZE, another delete); default 5.
	MaxReplans int
}

// DeleteReport is what DeleteWhere did.
type DeleteReport struct {
	// Committed is false when no live row matched: nothing was written.
	Committed                                                            bool
	Version                                                              delta.Version // committed, or the version read when nothing matched
	FilesTotal, FilesPrunedByPartition, FilesPrunedByStats, FilesScanned int
	FilesTouched, FilesRewritten, FilesRemoved, FilesAdded, DVsWritten   int
	RowsDeleted, RowsCopied, BytesWritten                                int64
	// Replans counts the fresh starts after conflicts with concurrent removals.
	Replans int
}

// DeleteWhere deletes the live rows matching where ("DELETE FROM t WHERE …") in one commit: files
// are pruned by partition values and statistics, only the predicate's columns of the rest are read to
// find matching rows, and DeleteRows removes them (deletion vectors or copy-on-write). The commit
// (operation "DELETE") declares the predicate as a read, so a concurrent commit adding a file the
// predicate could match conflicts (blind appends only under Serializable, as Spark's
// WriteSerializable default allows), and the files it touched; when a concurrent commit removed a file
// the delete read (OPTIMIZE compacting it, say), it starts again on the new snapshot, up to MaxReplans
// times. A predicate that matches no live row commits nothing.
func DeleteWhere(ctx context.Context, tbl *delta.Table, where *expr.Expr, opts DeleteWhereOptions) (*DeleteReport, error) {
	maxReplans := opts.MaxReplans
	if maxReplans <= 0 {
		maxReplans = 5
	}
	for replan := 0; ; replan++ {
		rep, err := deleteOnce(ctx, tbl, where, opts)
		if rep != nil {
			rep.Replans = replan
		}
		if err == nil {
			return rep, nil
		}
		if replan < maxReplans && (errors.Is(err, delta.ErrConcurrentDeleteRead) || errors.Is(err, delta.ErrConcurrentDeleteDelete)) {
			continue
		}
		return rep, err
	}
}

// beforeDeleteCommit, when set (tests only), runs between staging and committing a delete: where a
// concurrent writer's commit lands in a race.
var beforeDeleteCommit func(ctx context.Context) error

func deleteOnce(ctx context.Context, tbl *delta.Table, where *expr.Expr, opts DeleteWhereOptions) (*DeleteReport, error) {
	snap, err := tbl.Latest(ctx)
	if err != nil {
		return nil, err
	}
	loc := tbl.Location()
	pred, err := where.Bind(snap.Schema())
	if err != nil {
		return nil, err
	}
	predicate, _ := json.Marshal([]string{where.String()})
	tx, err := snap.Begin(delta.OpMerge, delta.TxnOptions{Operation: "DELETE",
		OperationParameters: map[string]string{"predicate": string(predicate)}, Retry: opts.Retry})
	if err != nil {
		return nil, err
	}
	rep := &DeleteReport{Version: snap.Version()}
	_, prune := PruneFiles(snap, pred)
	rep.FilesTotal, rep.FilesPrunedByPartition, rep.FilesPrunedByStats = prune.FilesTotal, prune.PrunedByPartition, prune.PrunedByStats
	// The files the predicate might match are this delete's read set, and the predicate its read
	// predicate: a concurrent commit that removes one of them, or adds (not blindly) a file the
	// predicate might match, conflicts.
	candidates := tx.ReadWhere("DELETE WHERE "+where.String(), func(f *delta.AddFile) bool { return pred.MightMatch(FileFacts(snap, f)) })
	found, fst, err := FindRows(ctx, snap, candidates, where)
	rep.FilesScanned = fst.FilesScanned
	if err != nil {
		return rep, fmt.Errorf("table %s: find the rows to delete: %w", loc, err)
	}
	if len(found) == 0 {
		return rep, nil
	}
	wopts := opts.Write
	wopts.DataChange = true
	dres, err := DeleteRows(ctx, tx, found, wopts)
	if err != nil {
		return rep, err
	}
	setDeleteMetrics(tx, rep, dres, fst)
	if beforeDeleteCommit != nil {
		if err := beforeDeleteCommit(ctx); err != nil {
			return rep, errors.Join(err, dres.Abort(context.WithoutCancel(ctx)))
		}
	}
	res, err := tx.Commit(ctx)
	if errors.Is(err, delta.ErrCommitOutcomeUnknown) {
		// The commit may have landed: look for it, and never delete files the log may reference.
		if v, ok, ferr := tbl.FindCommit(ctx, tx.TxnID(), snap.Version()+1); ferr == nil && ok {
			res, err = &delta.CommitResult{Version: v, Attempts: 1}, nil
		}
	} else if err != nil {
		err = errors.Join(err, dres.Abort(context.WithoutCancel(ctx))) // certainly not committed
	}
	if err != nil {
		return rep, fmt.Errorf("table %s: delete %d rows: %w", loc, dres.RowsDeleted, err)
	}
	rep.Committed, rep.Version = true, res.Version
	return rep, nil
}

// setDeleteMetrics records the outcome in the report and in commitInfo.operationMetrics, under
// Spark's DELETE metric names.
func setDeleteMetrics(tx *delta.Transaction, rep *DeleteReport, dres *DeleteResult, fst FindStats) {
	rep.FilesTouched, rep.FilesRewritten, rep.FilesRemoved, rep.DVsWritten = dres.FilesTouched, dres.FilesRewritten, dres.FilesRemoved, dres.DVsWritten
	rep.FilesAdded, rep.RowsDeleted, rep.RowsCopied, rep.BytesWritten = dres.FilesAdded, dres.RowsDeleted, dres.RowsCopied, dres.BytesWritten
	tx.SetMetric("numDeletedRows", dres.RowsDeleted)
	tx.SetMetric("numRemovedFiles", int64(dres.FilesRewritten+dres.FilesRemoved))
	tx.SetMetric("numAddedFiles", int64(dres.FilesAdded))
	tx.SetMetric("numCopiedRows", dres.RowsCopied)
	tx.SetMetric("numDeletionVectorsAdded", int64(dres.DVsAdded))
	tx.SetMetric("numDeletionVectorsUpdated", int64(dres.DVsUpdated))
	tx.SetMetric("numDeletionVectorsRemoved", int64(dres.DVsRemoved))
	tx.SetMetric("numAddedChangeFiles", 0)
	tx.SetMetric("numFilesBeforeSkipping", int64(rep.FilesTotal))
	tx.SetMetric("numFilesAfterSkipping", int64(fst.FilesScanned))
	tx.SetMetric("numAddedBytes", dres.BytesWritten)
	tx.SetMetric("numRemovedBytes", dres.BytesRemoved)
}
