package merge

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"runtime"
	"slices"
	"strings"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// staged is one attempt's staged transaction and the files it wrote.
type staged struct {
	tx          *delta.Transaction
	snap, wsnap *delta.Snapshot
	p           *prepared
	width       int // columns of the write schema; source rows may carry source-only ones after them
	del         *table.DeleteResult
	aborts      []func(context.Context) error
	inserts     *insertCache // the attempt's inserted files (kept for a re-plan when unchanged)
}

func (st *staged) abortKeepInserts(ctx context.Context) {
	for _, a := range st.aborts {
		_ = a(ctx)
	}
	if st.del != nil && st.del.Abort != nil {
		_ = st.del.Abort(ctx)
	}
	st.aborts, st.del = nil, nil
}

func (st *staged) abort(ctx context.Context) {
	st.abortKeepInserts(ctx)
	if st.inserts != nil {
		st.inserts.abort(ctx)
	}
}

// insertCache holds the files of inserted rows of an attempt, reused by the next attempt when it
// inserts exactly the same rows into the same schema (a re-plan after an OPTIMIZE, say).
type insertCache struct {
	fingerprint uint64
	schema      string
	asIs        bool // every written row of the batch (stageUpsertAsIs), not only the inserted ones
	copied      bool // written by copying the batch files' pages (copyBatchPages)
	adds        []*delta.AddFile
	abortFn     func(context.Context) error
}

// reusable reports whether the cached files hold exactly the rows of fingerprint fp, in schema,
// written by the same path (asIs: every written batch row, not only the inserted ones).
func (c *insertCache) reusable(fp uint64, schema string, asIs bool) bool {
	return c != nil && c.abortFn != nil && c.asIs == asIs && c.fingerprint == fp && c.schema == schema
}

func (c *insertCache) abort(ctx context.Context) {
	if c != nil && c.abortFn != nil {
		_ = c.abortFn(ctx)
		c.abortFn = nil
	}
}

func fingerprint(rows []int32) uint64 {
	h := fnv.New64a()
	var b [4]byte
	for _, r := range rows {
		b[0], b[1], b[2], b[3] = byte(r), byte(r>>8), byte(r>>16), byte(r>>24)
		h.Write(b[:])
	}
	return h.Sum64()
}

func (m *merger) writeOptions() table.WriteOptions {
	w := m.o.Write
	w.DataChange = true
	if w.EncodeWorkers == 0 {
		// A merge writes its new rows into one file at a time: its columns encode on every core.
		w.EncodeWorkers = runtime.GOMAXPROCS(0)
	}
	return w
}

// stage builds the attempt's transaction for the mode and fills the report.
func (m *merger) stage(ctx context.Context, st *staged) error {
	p := st.p
	rep := m.rep
	*rep = result.Merge{Mode: rep.Mode, Version: -1, Attempts: rep.Attempts, SourceRows: rep.SourceRows,
		SourceRowsDeduplicated: rep.SourceRowsDeduplicated, SchemaChanges: rep.SchemaChanges}
	rep.FilesTotal = len(st.snap.Files())
	asIs := m.upsertsBatchAsIs(st)
	if !asIs {
		// Every other path reads all columns from here on; the as-is upsert's writer waits itself.
		if err := p.src.await(); err != nil {
			return batchError(err)
		}
	}
	var inserts []int32
	insertable := func(n int) bool { return p.live[n] && !p.deleted[n] }
	switch {
	case m.o.Mode == Append:
		for n := range p.src.len() {
			if insertable(n) {
				inserts = append(inserts, int32(n))
			}
		}
	case m.o.Mode == TruncateInsert || (m.o.Mode == Overwrite && m.o.OverwriteScope == ScopeTable):
		files := st.tx.ReadWholeTable()
		m.removeWhole(st, files)
		for n := range p.src.len() {
			if insertable(n) {
				inserts = append(inserts, int32(n))
			}
		}
	case m.o.Mode == Overwrite:
		if err := m.overwritePartitions(st); err != nil {
			return err
		}
		for n := range p.src.len() {
			if insertable(n) {
				inserts = append(inserts, int32(n))
			}
		}
	case asIs:
		if err := m.stageUpsertAsIs(ctx, st); err != nil {
			return err
		}
		m.setMetrics(st)
		return nil
	default:
		var err error
		if inserts, err = m.stageKeyed(ctx, st); err != nil {
			return err
		}
	}
	if err := m.stageInserts(ctx, st, inserts); err != nil {
		return err
	}
	rep.RowsInserted = int64(len(inserts))
	m.setMetrics(st)
	return nil
}

// setMetrics records the report's counts as the commit's operation metrics.
func (m *merger) setMetrics(st *staged) {
	rep := m.rep
	st.tx.SetMetric("numSourceRows", rep.SourceRows)
	st.tx.SetMetric("numTargetRowsInserted", rep.RowsInserted)
	st.tx.SetMetric("numTargetRowsUpdated", rep.RowsUpdated)
	st.tx.SetMetric("numTargetRowsDeleted", rep.RowsDeleted)
	st.tx.SetMetric("numTargetFilesAdded", int64(rep.FilesAdded))
	st.tx.SetMetric("numTargetFilesRemoved", int64(rep.FilesRemoved))
}

// removeWhole removes every given file, counting their live rows as deleted.
func (m *merger) removeWhole(st *staged, files []*delta.AddFile) {
	st.tx.Remove(true, files...)
	m.rep.FilesRemoved += len(files)
	for _, f := range files {
		if n, ok := delta.NumRecords(f.Stats); ok {
			m.rep.RowsDeleted += n
			if f.DeletionVector != nil {
				m.rep.RowsDeleted -= f.DeletionVector.Cardinality
			}
		}
	}
}

// overwritePartitions removes the files of the partitions the batch has rows in (dynamic
// partition overwrite).
func (m *merger) overwritePartitions(st *staged) error {
	parts := st.wsnap.Metadata().PartitionColumns
	if len(parts) == 0 {
		return result.Refuse(result.ReasonBadArgument, fmt.Errorf("table %s is not partitioned: --overwrite-scope partitions needs partition columns; use --overwrite-scope table", m.tbl.Location()))
	}
	schema := st.wsnap.Schema()
	idx := make([]int, len(parts))
	for j, c := range parts {
		idx[j] = schema.FieldIndex(c)
	}
	present := map[string]bool{}
	var names []string
	for n := range st.p.src.len() {
		if !st.p.live[n] {
			continue
		}
		var b []byte
		for _, i := range idx {
			b = append(b, valueKey(st.p.src.value(n, i))...)
		}
		if !present[string(b)] {
			present[string(b)] = true
			if len(names) < 5 {
				names = append(names, describeKey(st.p.src.row(n), idx, schema))
			}
		}
	}
	var matchErr error
	match := func(f *delta.AddFile) bool {
		var b []byte
		for _, c := range parts {
			v, err := st.snap.PartitionValue(f, c)
			if err != nil {
				matchErr = err
				return true
			}
			b = append(b, valueKey(v)...)
		}
		return present[string(b)]
	}
	files := st.tx.ReadWhere("partitions "+strings.Join(names, "; "), match)
	if matchErr != nil {
		return fmt.Errorf("table %s: partition values: %w", m.tbl.Location(), matchErr)
	}
	m.removeWhole(st, files)
	return nil
}

// update is a touched file's rows that a source row updates (not deletes): their positions and
// the source row of each.
type update struct {
	fm  *fileMatch
	pos []int64
	src []int32
}

// matchAndRemove prunes, matches and removes the matched rows through table.DeleteRows (deletion
// vectors or copy-on-write), filling the report's file and row counts. It returns the plan and
// the rows that source rows update.
func (m *merger) matchAndRemove(ctx context.Context, st *staged) (*plan, []update, error) {
	p, rep := st.p, m.rep
	pr, err := newPruner(st.snap, p, m.o)
	if err != nil {
		return nil, nil, err
	}
	pl, err := planMatches(ctx, st.snap, p, pr)
	if err != nil {
		return nil, nil, err
	}
	// The read set: every file that might hold a key (the scanned ones), and the key predicate,
	// which a concurrent append of a possibly matching file violates even when blind.
	st.tx.ReadKeysWhere(fmt.Sprintf("the %d distinct keys (%s) of the batch", pr.sorted.count(), strings.Join(m.o.Keys, ", ")), pl.readPredicate(pr))
	rep.FilesPrunedByPartition, rep.FilesPrunedByStats, rep.FilesScanned = pl.prunedPartition, pl.prunedStats, len(pl.scanned)
	rep.FilesTouched, rep.RowsMatched = len(pl.touched), pl.rowsMatched
	var deletes []table.FileDeletes
	var updates []update
	for _, fm := range pl.touched {
		// Positions arrive in file order: one AddMany builds the bitmap's containers in one pass.
		positions := make([]uint64, len(fm.pos))
		for n, pos := range fm.pos {
			positions[n] = uint64(pos)
		}
		bm := roaring64.New()
		bm.AddMany(positions)
		u := update{fm: fm}
		if m.o.Mode != Delete {
			u.pos, u.src = make([]int64, 0, len(fm.pos)), make([]int32, 0, len(fm.pos))
		}
		for n, pos := range fm.pos {
			s := fm.src[n]
			if m.o.Mode == Delete || p.deleted[s] {
				rep.RowsDeleted++
				continue
			}
			u.pos, u.src = append(u.pos, pos), append(u.src, s)
		}
		deletes = append(deletes, table.FileDeletes{File: fm.file, Positions: bm})
		if len(u.pos) > 0 {
			updates = append(updates, u)
		}
	}
	if len(deletes) > 0 {
		res, err := table.DeleteRows(ctx, st.tx, deletes, m.writeOptions())
		if err != nil {
			return nil, nil, err
		}
		st.del = res
		rep.FilesRewritten, rep.DVsWritten = res.FilesRewritten, res.DVsWritten
		rep.FilesRemoved += res.FilesRemoved + res.FilesRewritten
		rep.FilesAdded += res.FilesAdded
		rep.BytesWritten += res.BytesWritten
	}
	return pl, updates, nil
}

// stageKeyed plans the keyed modes (upsert, update, delete): prunes, matches, removes the matched
// rows through table.DeleteRows and writes the updated rows. It returns the rows to insert.
func (m *merger) stageKeyed(ctx context.Context, st *staged) ([]int32, error) {
	p, rep := st.p, m.rep
	pl, updates, err := m.matchAndRemove(ctx, st)
	if err != nil {
		return nil, err
	}
	if len(updates) > 0 {
		track, err := st.wsnap.RowTracking()
		if err != nil {
			return nil, err
		}
		rtCols, err := track.PreservedColumns()
		if err != nil {
			return nil, result.Refuse(result.ReasonUnsupportedFeature, fmt.Errorf("table %s: %w", m.tbl.Location(), err))
		}
		rtColumn := ""
		if rtCols != nil {
			rtColumn = rtCols.RowID
		}
		updatedRows := 0
		for _, u := range updates {
			updatedRows += len(u.pos)
		}
		var ids []int64
		if rtColumn != "" {
			ids = make([]int64, 0, updatedRows)
		}
		// Full target rows, only of the touched files whose updated rows need them (a source file
		// lacking a column, or row ids to keep), read scanParallelism files at a time.
		targets := make([]map[int64]targetRow, len(updates))
		errs := make([]error, len(updates))
		var wg sync.WaitGroup
		sem := make(chan struct{}, scanParallelism)
		for n, u := range updates {
			needTarget := rtColumn != ""
			for _, s := range u.src {
				if slices.Contains(p.src.present[p.src.fileOf[s]][:st.width], false) {
					needTarget = true
				}
			}
			if !needTarget {
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				order := slices.Clone(u.pos)
				slices.Sort(order)
				targets[n], errs[n] = readTargetRows(ctx, st.snap, st.wsnap, u.fm.file, order, rtColumn)
			}()
		}
		wg.Wait()
		if err := errors.Join(errs...); err != nil {
			return nil, err
		}
		// The updated rows: source rows, with the target's values of the columns their file lacks.
		sel := make([]int32, 0, updatedRows)
		var from []types.Struct
		var missing [][]bool
		for un, u := range updates {
			targets := targets[un]
			for n, pos := range u.pos {
				s := u.src[n]
				sel = append(sel, s)
				if tr, ok := targets[pos]; ok {
					if from == nil {
						from, missing = make([]types.Struct, len(sel)-1, updatedRows), make([][]bool, len(sel)-1, updatedRows)
					}
					var lacks []bool
					if present := p.src.present[p.src.fileOf[s]]; slices.Contains(present[:st.width], false) {
						lacks = make([]bool, st.width)
						for i := range lacks {
							lacks[i] = !present[i]
						}
					}
					from, missing = append(from, tr.row), append(missing, lacks)
					ids = append(ids, tr.rowID)
				} else if from != nil {
					from, missing = append(from, nil), append(missing, nil)
				}
			}
		}
		rep.RowsUpdated = int64(len(sel))
		if rtColumn == "" && columnarWrite(p.src, st.wsnap) {
			adds, abort, err := m.writeColumns(ctx, st, sel, from, missing, "write updated rows")
			if err != nil {
				return nil, err
			}
			st.aborts = append(st.aborts, abort)
			m.addFiles(st, adds)
		} else {
			rows := make([]types.Struct, len(sel))
			for k, s := range sel {
				row := p.src.row(int(s))[:st.width]
				if from != nil && missing[k] != nil {
					row = slices.Clone(row)
					for i := range row {
						if missing[k][i] {
							row[i] = from[k][i]
						}
					}
				}
				rows[k] = row
			}
			if err := m.writeUpdated(ctx, st, rows, ids, rtColumn != ""); err != nil {
				return nil, err
			}
		}
	}
	var inserts []int32
	if m.o.Mode == Upsert {
		for n := range p.src.len() {
			if p.live[n] && !p.deleted[n] && !pl.matched[n] {
				inserts = append(inserts, int32(n))
			}
		}
	}
	return inserts, nil
}

// stageInserts writes the inserted rows into new files, or reuses the previous attempt's when it
// inserted the same rows in the same schema.
func (m *merger) stageInserts(ctx context.Context, st *staged, inserts []int32) error {
	if len(inserts) == 0 {
		if m.inserts != nil {
			m.inserts.abort(ctx)
			m.inserts = nil
		}
		return nil
	}
	fp := fingerprint(inserts)
	schema := st.wsnap.Metadata().SchemaString
	if m.inserts.reusable(fp, schema, false) {
		st.inserts = m.inserts
	} else {
		m.inserts.abort(ctx)
		m.inserts = nil
		var adds []*delta.AddFile
		var abort func(context.Context) error
		if columnarWrite(st.p.src, st.wsnap) {
			var err error
			if adds, abort, err = m.writeColumns(ctx, st, inserts, nil, nil, "insert rows"); err != nil {
				return err
			}
		} else {
			w, err := table.NewWriter(ctx, st.wsnap, m.writeOptions())
			if err != nil {
				return err
			}
			rows := make([]types.Struct, len(inserts))
			for i, n := range inserts {
				rows[i] = st.p.src.row(int(n))[:st.width]
			}
			if err := w.Write(rows); err != nil {
				_ = w.Abort(ctx)
				return result.Refuse(result.ReasonBadFile, fmt.Errorf("insert rows: %w", err))
			}
			if adds, err = w.Close(); err != nil {
				_ = w.Abort(ctx)
				return err
			}
			abort = w.Abort
		}
		st.inserts = &insertCache{fingerprint: fp, schema: schema, adds: adds, abortFn: abort}
		m.inserts = st.inserts
	}
	m.addFiles(st, st.inserts.adds)
	return nil
}
