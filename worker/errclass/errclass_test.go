package errclass

import (
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestOf_CorruptionIsRefusedWhateverElseWentWrong(t *testing.T) {
	netErr := errors.New("dial tcp: connection refused")
	for _, c := range []struct {
		name    string
		err     error
		outcome result.Outcome
		reason  string
	}{
		{"corrupt log", fmt.Errorf("commit 3: %w", delta.ErrCorruptTable), result.Refused, result.ReasonCorruptTable},
		{"corrupt Parquet", fmt.Errorf("data file x: %w", parquetio.ErrCorruptFile), result.Refused, result.ReasonCorruptTable},
		{"a gap", fmt.Errorf("commit 4 is missing: %w", delta.ErrLogGap), result.Refused, result.ReasonCorruptTable},
		{"a missing data file", fmt.Errorf("open x: %w", storage.ErrNotFound), result.Refused, result.ReasonCorruptTable},
		{"corruption found while retrying a conflict", errors.Join(delta.ErrConcurrentModification, delta.ErrCorruptTable), result.Refused, result.ReasonCorruptTable},
		{"corruption reported through a cancelled context", errors.Join(context.Canceled, parquetio.ErrCorruptFile), result.Refused, result.ReasonCorruptTable},
		{"nothing reconstructable", &delta.VersionNotFoundError{Table: "t", Requested: delta.NoVersion, Earliest: delta.NoVersion, Latest: 5}, result.Refused, result.ReasonCorruptTable},
		{"no table", &delta.VersionNotFoundError{Table: "t", Requested: delta.NoVersion, Earliest: delta.NoVersion, Latest: delta.NoVersion}, result.Refused, result.ReasonTableNotFound},
		{"a version cleaned up", &delta.VersionNotFoundError{Table: "t", Requested: 1, Earliest: 4, Latest: 9}, result.Refused, result.ReasonBadArgument},
		{"unsupported", fmt.Errorf("x: %w", delta.ErrUnsupportedTable), result.Refused, result.ReasonUnsupportedFeature},
		{"lost conflict", fmt.Errorf("x: %w", delta.ErrCommitRetriesExhausted), result.Failed, result.ReasonConflict},
		{"storage", fmt.Errorf("read x: %w", netErr), result.Failed, result.ReasonUnreachable},
		{"interrupted", fmt.Errorf("x: %w", context.Canceled), result.Failed, result.ReasonInternal},
		{"already classified", result.Refuse(result.ReasonBadArgument, netErr), result.Refused, result.ReasonBadArgument},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, r := result.Classify(Of(c.err))
			if o != c.outcome || r != c.reason {
				t.Fatalf("%v: %s %s, want %s %s", c.err, o, r, c.outcome, c.reason)
			}
			if o.ExitCode() == result.ExitFailed && IsCorrupt(c.err) {
				t.Fatalf("corruption exits %d", result.ExitFailed)
			}
		})
	}
	if Of(nil) != nil {
		t.Fatal("Of(nil) is not nil")
	}
}
