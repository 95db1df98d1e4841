package cli

import (
	"context"
	"errors"
	"fmt"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/bytesize"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// tableError gives errors from reading or changing a table the outcome and reason the result
// reports: refusals for what only a person can fix (unsupported features, bad arguments, a corrupt
// table, a missing table), failures for what may pass on retry (storage, conflicts).
func tableError(err error) error {
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
	case errors.As(err, &vnf), errors.As(err, &tsr):
		return result.Refuse(result.ReasonBadArgument, err)
	case errors.Is(err, delta.ErrIncompleteLog), errors.Is(err, delta.ErrLogGap),
		errors.Is(err, delta.ErrCorruptTable), errors.Is(err, parquetio.ErrCorruptFile):
		return result.Refuse(result.ReasonCorruptTable, err)
	case errors.As(err, &conflict), errors.Is(err, delta.ErrCommitRetriesExhausted):
		return result.Fail(result.ReasonConflict, err)
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		return result.Fail(result.ReasonInternal, err)
	case errors.Is(err, storage.ErrNotFound):
		// A file the log references is missing: the table is broken (or was vacuumed too early).
		return result.Refuse(result.ReasonCorruptTable, err)
	}
	return result.Fail(result.ReasonUnreachable, err)
}

// badArg is a refusal for an invalid flag.
func badArg(format string, args ...any) error {
	return result.Refuse(result.ReasonBadArgument, fmt.Errorf(format, args...))
}

// splitList splits a comma-separated flag value, dropping blanks.
func splitList(s string) []string {
	var out []string
	for _, p := range strings.Split(s, ",") {
		if p = strings.TrimSpace(p); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// humanBytes renders a size in binary units ("64.0 MiB"), which the size flags read back.
func humanBytes(n int64) string { return bytesize.Format(n) }

// schemaTree writes a schema as an indented tree.
func schemaTree(b *strings.Builder, st *types.StructType, indent string) {
	for _, f := range st.Fields {
		null := ""
		if !f.Nullable {
			null = " NOT NULL"
		}
		switch t := f.Type.(type) {
		case *types.StructType:
			fmt.Fprintf(b, "%s%s: struct%s\n", indent, f.Name, null)
			schemaTree(b, t, indent+"  ")
		default:
			fmt.Fprintf(b, "%s%s: %s%s\n", indent, f.Name, f.Type, null)
		}
	}
}
