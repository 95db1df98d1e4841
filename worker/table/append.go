package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"strconv"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// AppendResult reports a blind append.
type AppendResult struct {
	Commit *delta.CommitResult
	Files  []*delta.AddFile
	Rows   int64
}

// Append writes rows (logical, table column order) as new files and commits them as one blind append
// (commitInfo.operation "WRITE", mode Append) on top of snap. When the commit certainly did not land
// the new files are deleted again; when its outcome is unknown (delta.ErrCommitOutcomeUnknown) the
// commit is looked up by transaction id, and if it cannot be found the files are left for VACUUM,
// because the log may still reference them.
func Append(ctx context.Context, snap *delta.Snapshot, rows []types.Struct, opts WriteOptions) (*AppendResult, error) {
	opts.DataChange = true
	tx, err := snap.Begin(delta.OpAppend, delta.TxnOptions{Operation: "WRITE",
		OperationParameters: map[string]string{"mode": "Append", "partitionBy": "[]"}})
	if err != nil {
		return nil, err
	}
	w, err := NewWriter(ctx, snap, opts)
	if err != nil {
		return nil, err
	}
	if err := w.Write(rows); err != nil {
		return nil, errors.Join(err, w.Abort(ctx))
	}
	adds, err := w.Close()
	if err != nil {
		return nil, errors.Join(err, w.Abort(ctx))
	}
	var bytes int64
	for _, a := range adds {
		bytes += a.Size
	}
	tx.Add(adds...)
	tx.SetMetric("numFiles", int64(len(adds)))
	tx.SetMetric("numOutputRows", int64(len(rows)))
	tx.SetMetric("numOutputBytes", bytes)
	res, err := tx.Commit(ctx)
	if errors.Is(err, delta.ErrCommitOutcomeUnknown) {
		// The commit may have landed: look for it before reporting failure, and never delete files
		// the log may reference.
		if v, found, ferr := snap.Table().FindCommit(ctx, tx.TxnID(), snap.Version()+1); ferr == nil && found {
			res, err = &delta.CommitResult{Version: v, Attempts: 1}, nil
		}
	} else if err != nil {
		err = errors.Join(err, w.Abort(ctx)) // the commit certainly did not land
	}
	if err != nil {
		return nil, fmt.Errorf("append %d rows to %s: %w", len(rows), snap.Table().Location(), err)
	}
	return &AppendResult{Commit: res, Files: adds, Rows: int64(len(rows))}, nil
}

// AssignColumnMapping returns a copy of schema with column-mapping metadata (ids and physical names
// "col-<id>"-style at every depth), as a new table in name or id mode needs, and the highest id used
// (for delta.columnMapping.maxColumnId).
func AssignColumnMapping(schema *types.StructType) (*types.StructType, int64) {
	var next int64
	out := types.MapFields(schema, func(f *types.StructField) *types.StructField {
		next++
		nf := *f
		nf.Metadata = maps.Clone(f.Metadata)
		if nf.Metadata == nil {
			nf.Metadata = map[string]json.RawMessage{}
		}
		nf.Metadata[types.MetaColumnMappingID] = json.RawMessage(strconv.FormatInt(next, 10))
		nf.Metadata[types.MetaColumnMappingPhysicalName] = json.RawMessage(strconv.Quote(fmt.Sprintf("col-%d-%s", next, sanitize(f.Name))))
		return &nf
	})
	return out.(*types.StructType), next
}

// sanitize keeps physical names plain ASCII letters and digits, so they are valid Parquet names for
// every reader whatever the logical name holds.
func sanitize(s string) string {
	b := make([]byte, 0, len(s))
	for i := 0; i < len(s) && len(b) < 16; i++ {
		c := s[i]
		if c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' || c >= '0' && c <= '9' {
			b = append(b, c)
		}
	}
	return string(b)
}
