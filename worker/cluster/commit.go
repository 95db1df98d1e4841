package cluster

import (
	"context"
	"errors"
	"maps"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/errclass"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// maxRebases bounds how often a rewrite is re-based onto a newer snapshot after a conflict that left
// every input live.
const maxRebases = 5

// rewriteCommit is the commit of a clustering rewrite: its inputs are removed and its outputs added
// with dataChange=false, so readers and streaming consumers see no change of data.
type rewriteCommit struct {
	operation string
	params    map[string]string
	inputs    []*delta.AddFile
	adds      []*delta.AddFile
	preserved bool // row ids and commit versions were copied into the materialized columns
}

// commit commits the rewrite as the transaction and its conflict rules allow: the Transaction itself
// rebases onto compatible winners (blind appends); after a conflict, the rewrite is retried on the
// latest snapshot only while every input is still live (compaction's rule), since the outputs hold
// exactly the inputs' rows. When the commit definitely did not land, the outputs are deleted by the
// caller (abort); when its outcome is unknown they are kept, since the log may reference them.
func (c *rewriteCommit) commit(ctx context.Context, tbl *delta.Table, snap *delta.Snapshot) (delta.Version, error) {
	var inBytes, outBytes int64
	for _, f := range c.inputs {
		inBytes += f.Size
	}
	for _, f := range c.adds {
		outBytes += f.Size
	}
	for attempt := 0; ; attempt++ {
		tx, err := snap.Begin(delta.OpRewrite, delta.TxnOptions{
			Operation: c.operation, OperationParameters: maps.Clone(c.params), RowTrackingPreserved: c.preserved,
		})
		if err != nil {
			return delta.NoVersion, result.Refuse(result.ReasonUnsupportedFeature, err)
		}
		tx.Remove(false, c.inputs...)
		tx.Add(c.adds...)
		tx.SetMetric("numRemovedFiles", int64(len(c.inputs)))
		tx.SetMetric("numAddedFiles", int64(len(c.adds)))
		tx.SetMetric("numRemovedBytes", inBytes)
		tx.SetMetric("numAddedBytes", outBytes)
		res, err := tx.Commit(ctx)
		if err == nil {
			return res.Version, nil
		}
		var unknown *delta.CommitOutcomeUnknownError
		if errors.As(err, &unknown) {
			v, found, ferr := tbl.FindCommit(ctx, unknown.TxnID, snap.Version()+1)
			if ferr == nil && found {
				return v, nil
			}
			return delta.NoVersion, &outcomeUnknown{err: err}
		}
		if !errors.Is(err, delta.ErrConcurrentModification) || attempt >= maxRebases {
			if errors.Is(err, delta.ErrConcurrentModification) {
				return delta.NoVersion, result.Fail(result.ReasonConflict, err)
			}
			return delta.NoVersion, errclass.Of(err)
		}
		latest, lerr := tbl.Latest(ctx)
		if lerr != nil {
			return delta.NoVersion, result.Fail(result.ReasonUnreachable, errors.Join(err, lerr))
		}
		for _, f := range c.inputs {
			if cur, ok := latest.File(f.Key()); !ok || cur.Size != f.Size {
				return delta.NoVersion, result.Fail(result.ReasonConflict, &inputRemovedError{latest: latest, path: f.Path, err: err})
			}
		}
		snap = latest
	}
}

// outcomeUnknown marks a commit that may or may not have landed: its outputs must not be deleted.
type outcomeUnknown struct{ err error }

func (e *outcomeUnknown) Error() string { return e.err.Error() }
func (e *outcomeUnknown) Unwrap() error { return e.err }
