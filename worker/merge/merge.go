// Package merge is deltakeeper's MERGE: a batch of keyed source rows applied to a Delta table by an
// update method (append, upsert, update, delete, overwrite, truncateinsert) with Spark's MERGE
// semantics, dynamic file pruning (partition values, then each file's key ranges against the sorted
// distinct source keys, then only the key columns of the surviving files), row removal through
// table.DeleteRows (deletion vectors or copy-on-write) and new files for updated and inserted rows.
//
// The commit declares what the merge read — the scanned files and a key predicate that a concurrent
// append of a possibly matching file violates even when blind (delta.Transaction.ReadKeysWhere) — so
// a racing append or OPTIMIZE makes the merge plan again on the new snapshot instead of losing or
// duplicating a row. With an application id and batch id the merge is exactly once (a txn action).
package merge

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Run applies the batch to the table (which must exist) and commits once. The report is filled
// even when an error stops the merge (Version -1 then).
func Run(ctx context.Context, tbl *delta.Table, b Batch, opts Options) (*result.Merge, error) {
	o := opts
	if err := o.check(); err != nil {
		return nil, result.Refuse(result.ReasonBadArgument, err)
	}
	m := &merger{tbl: tbl, batch: b, o: &o, rep: &result.Merge{Mode: string(o.Mode), Version: -1}}
	return m.rep, m.run(ctx)
}

type merger struct {
	tbl   *delta.Table
	batch Batch
	o     *Options
	rep   *result.Merge

	newCols []format.NewColumn
	src     *srcRows
	srcFor  string // schema string src was read with
	inserts *insertCache
	extra   []*types.StructField // source-only columns read (readSchema)
}

func (m *merger) run(ctx context.Context) error {
	for attempt := 1; ; attempt++ {
		m.rep.Attempts = attempt
		done, err := m.attempt(ctx, attempt)
		if err != nil || done {
			if err != nil && m.inserts != nil {
				m.inserts.abort(ctx)
			}
			return err
		}
		if attempt > m.o.MaxReplans {
			if m.inserts != nil {
				m.inserts.abort(ctx)
			}
			return result.Fail(result.ReasonConflict, fmt.Errorf("table %s: merge lost its plan to concurrent commits %d times; run it again", m.tbl.Location(), attempt))
		}
	}
}

// attempt plans and commits on the latest snapshot. done=false asks for another attempt: new
// columns were found (addNewColumns) or a concurrent commit invalidated the plan.
func (m *merger) attempt(ctx context.Context, attempt int) (bool, error) {
	snap := m.o.Snapshot
	if attempt > 1 || snap == nil {
		var err error
		if snap, err = m.tbl.Latest(ctx); err != nil {
			return false, err
		}
	}
	kind := delta.OpMerge
	if m.o.Mode == Append {
		kind = delta.OpAppend
	}
	opName := m.o.Operation
	if opName == "" {
		opName = "MERGE"
		if !m.o.Mode.keyed() {
			opName = "WRITE"
		}
	}
	params := maps.Clone(m.o.OperationParameters)
	if params == nil {
		params = map[string]string{}
	}
	params["mode"] = string(m.o.Mode)
	if len(m.o.Keys) > 0 {
		params["keys"] = strings.Join(m.o.Keys, ",")
	}
	tx, err := snap.Begin(kind, delta.TxnOptions{Operation: opName, OperationParameters: params, NoAutoCheckpoint: false})
	if err != nil {
		return false, result.Refuse(result.ReasonUnsupportedFeature, err)
	}
	if m.o.AppID != "" {
		if t, ok := tx.ReadTxn(m.o.AppID); ok && t.Version >= m.o.BatchID {
			m.rep.AlreadyCommitted, m.rep.Version = true, int64(snap.Version())
			return true, nil
		}
		tx.SetTxn(m.o.AppID, m.o.BatchID)
	}
	wsnap, err := m.evolve(tx, snap)
	if err != nil {
		return false, err
	}
	readSchema, err := m.readSchema(ctx, wsnap.Schema())
	if err != nil {
		return false, err
	}
	if m.src == nil || m.srcFor != wsnap.Metadata().SchemaString {
		src, err := readBatch(ctx, m.batch, readSchema, &m.o.Format, m.o.rowsOnly, m.planColumns(readSchema, wsnap))
		var nce *format.NewColumnsError
		if errors.As(err, &nce) {
			return false, m.onNewColumns(nce)
		}
		if err != nil {
			return false, batchError(err)
		}
		m.src, m.srcFor = src, wsnap.Metadata().SchemaString
		if m.o.batchRead != nil {
			m.o.batchRead(src.cols != nil)
		}
		if m.inserts != nil {
			m.inserts.abort(ctx) // written in an older schema
			m.inserts = nil
		}
	}
	p, err := prepare(m.src, readSchema, len(wsnap.Schema().Fields), m.o, m.tbl.Location())
	if err != nil {
		return false, err
	}
	m.rep.SourceRows, m.rep.SourceRowsDeduplicated = int64(m.src.len())-p.deduped, p.deduped
	st := &staged{tx: tx, snap: snap, wsnap: wsnap, p: p, width: len(wsnap.Schema().Fields)}
	if err := m.stage(ctx, st); err != nil {
		st.abort(ctx)
		return false, err
	}
	if m.o.AppID == "" && m.rep.FilesAdded == 0 && m.rep.FilesRemoved == 0 && m.rep.DVsWritten == 0 && len(m.rep.SchemaChanges) == 0 {
		// Nothing matched and nothing to insert: no commit (a merge with a txn still commits, to
		// record the batch).
		return true, nil
	}
	if m.o.beforeCommit != nil {
		var paths []string
		if st.inserts != nil {
			for _, a := range st.inserts.adds {
				paths = append(paths, a.Path)
			}
		}
		m.o.beforeCommit(attempt, paths)
	}
	res, err := tx.Commit(ctx)
	var conflict *delta.ConflictError
	switch {
	case err == nil:
	case errors.Is(err, delta.ErrCommitOutcomeUnknown):
		// The files may be referenced by a commit that landed: keep them.
		m.inserts = nil
		return false, err
	case errors.As(err, &conflict) && (errors.Is(err, delta.ErrMetadataChanged) || errors.Is(err, delta.ErrProtocolChanged)):
		st.abort(ctx)
		return false, result.Fail(result.ReasonConflict, fmt.Errorf("%w; the merge was not applied: run it again on the new table definition", err))
	case errors.As(err, &conflict) && errors.Is(err, delta.ErrConcurrentTransaction) && m.o.AppID != "":
		// Another writer committed for this application: the next attempt finds the batch done
		// (or plans again on top of it).
		st.abortKeepInserts(ctx)
		m.o.Logger.Info("Merge lost its txn to a concurrent writer; checking the table again", "reason", err)
		return false, nil
	case errors.As(err, &conflict) || errors.Is(err, delta.ErrCommitRetriesExhausted):
		st.abortKeepInserts(ctx)
		m.o.Logger.Info("Merge plan invalidated by a concurrent commit; planning again on the new version", "attempt", attempt, "reason", err)
		return false, nil
	default:
		st.abort(ctx)
		return false, err
	}
	m.rep.Version = int64(res.Version)
	m.inserts = nil
	return true, nil
}

// batchError is a failed batch read as the merge reports it.
func batchError(err error) error {
	var bad *format.Error
	if errors.As(err, &bad) {
		return result.Refuse(result.ReasonBadFile, fmt.Errorf("%w; nothing was committed", err))
	}
	return err
}

// planColumns are the batch columns that planning reads — keys, the delete marker, the ordering
// column, partition columns — which the batch read returns with before the others (readBatch's
// first); nil when one is not in the read schema (then everything is read first).
func (m *merger) planColumns(schema *types.StructType, wsnap *delta.Snapshot) []int {
	if len(m.o.Keys) == 0 {
		return nil // no plan to start on: every column is needed at once
	}
	names := slices.Concat(m.o.Keys, wsnap.Metadata().PartitionColumns)
	if m.o.DeleteColumn != "" {
		names = append(names, m.o.DeleteColumn)
	}
	if m.o.OrderBy != "" {
		names = append(names, m.o.OrderBy)
	}
	var idx []int
	for _, n := range names {
		i := columnIndex(schema, n)
		if i < 0 {
			return nil
		}
		if !slices.Contains(idx, i) {
			idx = append(idx, i)
		}
	}
	return idx
}

// evolve adds the new columns found so far (addNewColumns) to the write schema.
func (m *merger) evolve(tx *delta.Transaction, snap *delta.Snapshot) (*delta.Snapshot, error) {
	if len(m.newCols) == 0 {
		return snap, nil
	}
	next := &types.StructType{Fields: append([]*types.StructField(nil), snap.Schema().Fields...)}
	var added []string
	for _, c := range m.newCols {
		if len(c.Path) != 1 || columnIndex(next, c.Path[0]) >= 0 {
			continue // nested additions are out of scope; existing columns stay as they are
		}
		f := *c.Field
		f.Nullable = true
		next.Fields = append(next.Fields, &f)
		added = append(added, c.Path[0])
	}
	if len(added) == 0 {
		return snap, nil
	}
	wsnap, err := tx.EvolveSchema(next)
	if err != nil {
		return nil, result.Refuse(result.ReasonBadArgument, err)
	}
	m.rep.SchemaChanges = added
	return wsnap, nil
}

func (m *merger) onNewColumns(e *format.NewColumnsError) error {
	if m.o.Format.Evolution != format.AddNewColumns {
		names := make([]string, len(e.Columns))
		for i, c := range e.Columns {
			names[i] = strings.Join(c.Path, ".")
		}
		return result.Refuse(result.ReasonSchemaChange, fmt.Errorf("%w; nothing was committed: give --schema-evolution addNewColumns to add %s to the table, or none to drop them", e, strings.Join(names, ", ")))
	}
	for _, c := range e.Columns {
		if len(c.Path) != 1 {
			return result.Refuse(result.ReasonSchemaChange, fmt.Errorf("%w; merge adds top-level columns only, not %s", e, strings.Join(c.Path, ".")))
		}
		m.newCols = append(m.newCols, c)
	}
	if len(m.newCols) > 1000 {
		return result.Refuse(result.ReasonSchemaChange, fmt.Errorf("%w; more than 1000 new columns: refusing to grow the schema further", e))
	}
	return nil
}

// readSchema is the write schema plus the source-only columns the merge needs but never writes:
// the delete marker and the order-by column when the table lacks them (a CDC export's operation
// column, say), typed from the source.
//
// Top-level columns read as nullable: a source file may lack a NOT NULL column that matched rows
// keep from the target; the writer enforces NOT NULL on the rows it writes.
func (m *merger) readSchema(ctx context.Context, schema *types.StructType) (*types.StructType, error) {
	relaxed := &types.StructType{Fields: make([]*types.StructField, len(schema.Fields))}
	for i, f := range schema.Fields {
		c := *f
		c.Nullable = true
		relaxed.Fields[i] = &c
	}
	schema = relaxed
	var extra []string
	for _, c := range []string{m.o.DeleteColumn, m.o.OrderBy} {
		if c != "" && columnIndex(schema, c) < 0 && !slices.ContainsFunc(extra, func(e string) bool { return strings.EqualFold(e, c) }) {
			extra = append(extra, c)
		}
	}
	if len(extra) == 0 {
		return schema, nil
	}
	if m.extra == nil {
		if len(m.batch.Files) == 0 {
			return nil, result.Refuse(result.ReasonBadArgument, errors.New("the source holds no files"))
		}
		inferred, err := format.Infer(ctx, m.batch.Store, m.batch.Files, func(k string) string { return storage.URI(m.batch.Store, k) }, &m.o.Format)
		if err != nil {
			return nil, result.Refuse(result.ReasonBadFile, err)
		}
		for _, c := range extra {
			i := columnIndex(inferred, c)
			if i < 0 && strings.EqualFold(c, m.o.DeleteColumn) {
				// A batch without markers deletes nothing: the column reads null.
				m.extra = append(m.extra, &types.StructField{Name: c, Type: types.Primitive(types.TypeBoolean), Nullable: true})
				continue
			}
			if i < 0 {
				return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("column %q is neither in table %s nor in the source (source columns: %s)", c, m.tbl.Location(), columnNames(inferred)))
			}
			f := *inferred.Fields[i]
			f.Nullable = true
			if strings.EqualFold(c, m.o.DeleteColumn) {
				f.Type = types.Primitive(types.TypeBoolean)
			}
			m.extra = append(m.extra, &f)
		}
	}
	return &types.StructType{Fields: append(slices.Clone(schema.Fields), m.extra...)}, nil
}
