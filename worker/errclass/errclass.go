// Package errclass gives the errors of reading or changing a table the outcome and reason the
// worker's result reports, and so the process exit code (worker/result.ExitCodes): refusals for
// what only a person can fix (unsupported features, bad arguments, a corrupt or missing table),
// failures for what may pass on retry (storage, lost conflicts). It is the one place that decides;
// the table commands and the maintenance packages all call it.
package errclass

import (
	"context"
	"errors"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Of returns err as a *result.Error with its outcome and reason; one that already is keeps
// its own. Corruption is checked before everything that may pass on retry: a corrupt table does
// not heal, whatever else went wrong on the way.
func Of(err error) error {
	if err == nil {
		return nil
	}
	var re *result.Error
	var vnf *delta.VersionNotFoundError
	var tsr *delta.TimestampOutOfRangeError
	var syn *expr.SyntaxError
	var conflict *delta.ConflictError
	switch {
	case errors.As(err, &re):
		return err
	case errors.As(err, &syn):
		return result.Refuse(result.ReasonBadArgument, err)
	case errors.Is(err, delta.ErrUnsupportedTable):
		return result.Refuse(result.ReasonUnsupportedFeature, err)
	case errors.As(err, &vnf) && vnf.Latest == delta.NoVersion:
		return result.Refuse(result.ReasonTableNotFound, err)
	case errors.As(err, &vnf) && vnf.Earliest == delta.NoVersion:
		// Not even the latest version can be built: the log itself is broken.
		return result.Refuse(result.ReasonCorruptTable, err)
	case errors.As(err, &vnf), errors.As(err, &tsr):
		return result.Refuse(result.ReasonBadArgument, err)
	case IsCorrupt(err):
		return result.Refuse(result.ReasonCorruptTable, err)
	case errors.As(err, &conflict), errors.Is(err, delta.ErrCommitRetriesExhausted), errors.Is(err, delta.ErrConcurrentModification):
		return result.Fail(result.ReasonConflict, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return result.Fail(result.ReasonInternal, err)
	}
	return result.Fail(result.ReasonUnreachable, err)
}

// IsCorrupt reports whether err means the table violates the protocol or does not decode: a
// commit, checkpoint, data file or deletion vector that is broken, a gap in the log, or a file
// the log references that is gone (the table is broken, or was vacuumed too early), or a key no
// object can have (which only a broken log names).
func IsCorrupt(err error) bool {
	return errors.Is(err, delta.ErrCorruptTable) || errors.Is(err, parquetio.ErrCorruptFile) ||
		errors.Is(err, delta.ErrIncompleteLog) || errors.Is(err, delta.ErrLogGap) || errors.Is(err, storage.ErrNotFound) ||
		errors.Is(err, storage.ErrInvalidKey)
}
