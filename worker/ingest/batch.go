package ingest

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/ingest/state"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// maxConflictRetries bounds how often a batch is retried after losing its commit to a concurrent
// writer that did not commit the batch itself.
const maxConflictRetries = 10

// attempt is one try at writing and committing a batch; a bad file under onBadFile=skip, new columns
// under addNewColumns and a lost commit race end it and start another with the same plan.
type attempt struct {
	skipped  []state.SkippedFile
	newCols  []format.NewColumn
	conflict int
}

// execute writes and commits a batch's plan, or finds it committed.
func (r *runner) execute(ctx context.Context, off *state.Offsets) (*BatchReport, error) {
	a := &attempt{}
	created := false
	for {
		snap, err := latest(ctx, r.tbl)
		if err != nil {
			return nil, err
		}
		if snap == nil {
			if err := r.create(ctx, off, a); err != nil {
				return nil, err
			}
			created = true
			continue
		}
		if err := checkTable(snap); err != nil {
			return nil, err
		}
		br := &BatchReport{BatchID: off.BatchID, Files: len(off.Files), Bytes: off.Bytes(), Created: created}
		if txn, ok := snap.Txn(r.appID); ok && txn.Version >= off.BatchID {
			// The commit landed (this run's earlier attempt, a crashed run, or a concurrent process).
			br.AlreadyCommitted, br.Version = true, int64(snap.Version())
			if c, ok, err := r.st.ReadCommit(ctx, off.BatchID); err == nil && ok {
				br.Version, br.Rows, br.Skipped = c.Version, c.Rows, c.Skipped
			} else if v, ok := r.findBatch(ctx, snap, off.BatchID); ok {
				br.Version = v
			}
			return br, nil
		}
		var done bool
		if r.o.merging() {
			done, err = r.commitMerge(ctx, off, a, br)
		} else {
			done, err = r.commit(ctx, snap, off, a, br)
		}
		if err != nil {
			return nil, err
		}
		if done {
			if br.commit != nil {
				r.autoCompact(ctx, snap, br)
			}
			return br, nil
		}
	}
}

// findBatch looks for the version whose txn for this stream is the batch (scanning back a little),
// for the report of a batch found committed without its marker.
func (r *runner) findBatch(ctx context.Context, snap *delta.Snapshot, batch int64) (int64, bool) {
	for v := snap.Version(); v >= 0 && v > snap.Version()-100; v-- {
		s, err := r.tbl.At(ctx, v)
		if err != nil {
			return 0, false
		}
		if t, ok := s.Txn(r.appID); !ok || t.Version < batch {
			return int64(v + 1), true
		}
	}
	return 0, false
}

func (r *runner) uri(key string) string { return storage.URI(r.src.Store(), key) }

// commit runs one attempt. done=false asks for another attempt (the attempt state says why).
func (r *runner) commit(ctx context.Context, snap *delta.Snapshot, off *state.Offsets, a *attempt, br *BatchReport) (bool, error) {
	tx, err := snap.Begin(delta.OpAppend, delta.TxnOptions{Operation: "STREAMING UPDATE", OperationParameters: map[string]string{
		"outputMode": "Append", "queryId": r.appID, "epochId": fmt.Sprint(off.BatchID)}})
	if err != nil {
		return false, result.Refuse(result.ReasonUnsupportedFeature, err)
	}
	if t, ok := tx.ReadTxn(r.appID); ok && t.Version >= off.BatchID {
		return false, nil // the loop finds it committed
	}
	schema := snap.Schema()
	wsnap := snap
	if evolved, changed, err := r.evolve(snap, a); err != nil {
		return false, err
	} else if changed {
		if wsnap, err = tx.EvolveSchema(evolved); err != nil {
			return false, result.Refuse(result.ReasonBadArgument, err)
		}
		schema = wsnap.Schema()
		br.SchemaChange = addedColumns(snap.Schema(), schema)
	}
	w := r.newWriters(ctx, wsnap)
	columnar := table.ColumnarSchema(wsnap)
	var rows, rescued int64
	var files []source.File
	for _, f := range off.Files {
		if !slices.ContainsFunc(a.skipped, func(s state.SkippedFile) bool { return s.Key == f.Key }) {
			files = append(files, f)
		}
	}
	files, rows, err = r.copyParquet(ctx, wsnap, files, w)
	if err != nil {
		w.abort(ctx)
		return false, err
	}
	rctx, cancel := context.WithCancel(ctx)
	defer cancel()
	for i, pf := range r.prefetch(rctx, files, schema, columnar) {
		f := files[i]
		var err error
		for chunk := range pf.chunks {
			if err = w.write(chunk); err != nil {
				err = fmt.Errorf("write rows of %s: %w", r.uri(f.Key), err)
				break
			}
		}
		if err == nil {
			<-pf.done
			err = pf.err
		}
		if err != nil {
			cancel()
			w.abort(ctx)
			var nce *format.NewColumnsError
			var bad *format.Error
			switch {
			case errors.As(err, &nce):
				return r.onNewColumns(nce, a)
			case errors.As(err, &bad) && r.o.OnBadFile == BadFileSkip:
				r.o.Logger.Warn("Skipping bad source file", "file", bad.File, "err", bad.Err)
				a.skipped = append(a.skipped, state.SkippedFile{Key: f.Key, Reason: err.Error()})
				return false, nil
			case errors.As(err, &bad):
				return false, result.Refuse(ReasonBadFile, fmt.Errorf("batch %d: %w; nothing was committed: fix or remove the file, or set onBadFile to skip", off.BatchID, err))
			}
			return false, err
		}
		rows += pf.rows
		rescued += pf.rescued
		if err := w.endFile(); err != nil {
			w.abort(ctx)
			return false, err
		}
		crashPoint("file-written")
	}
	adds, err := w.close()
	if err != nil {
		w.abort(ctx)
		return false, err
	}
	tx.SetTxn(r.appID, off.BatchID)
	tx.Add(adds...)
	tx.SetMetric("numFiles", int64(len(adds)))
	tx.SetMetric("numOutputRows", rows)
	crashPoint("before-commit")
	res, err := tx.Commit(ctx)
	var conflict *delta.ConflictError
	switch {
	case err == nil:
	case errors.As(err, &conflict) || errors.Is(err, delta.ErrCommitRetriesExhausted):
		// Lost to a concurrent writer: the next attempt reads the table again and either finds this
		// batch committed (another process of the stream) or retries on top of the winner.
		w.abort(ctx)
		if a.conflict++; a.conflict > maxConflictRetries {
			return false, result.Fail(result.ReasonConflict, fmt.Errorf("batch %d: %w", off.BatchID, err))
		}
		r.o.Logger.Info("Ingest commit lost a race; retrying on the new table version", "batch", off.BatchID, "reason", err)
		return false, nil
	case errors.Is(err, delta.ErrCommitOutcomeUnknown):
		// The files may be referenced by a commit that landed: keep them; the next attempt (or the
		// next run) finds the txn if it did.
		return false, fmt.Errorf("batch %d: %w", off.BatchID, err)
	default:
		w.abort(ctx)
		return false, fmt.Errorf("batch %d: %w", off.BatchID, err)
	}
	br.Version, br.Rows, br.Rescued, br.Skipped = int64(res.Version), rows, rescued, a.skipped
	br.FilesWritten = map[string]int{}
	for _, add := range adds {
		key, _ := delta.ObjectKey(r.tbl.Location(), add.Path)
		dir := ""
		if i := strings.LastIndexByte(key, '/'); i >= 0 {
			dir = key[:i]
		}
		br.FilesWritten[dir]++
		br.BytesWritten += add.Size
	}
	br.adds, br.commit = adds, res
	return true, nil
}

// ReasonBadFile is the result reason of a batch stopped by a bad input file.
const ReasonBadFile = result.ReasonBadFile

// ReasonSchemaChange is the result reason of a batch stopped by new columns under failOnNewColumns.
const ReasonSchemaChange = result.ReasonSchemaChange

// onNewColumns records new columns for the next attempt (addNewColumns) or stops the stream.
func (r *runner) onNewColumns(e *format.NewColumnsError, a *attempt) (bool, error) {
	if r.o.Format.Evolution != format.AddNewColumns {
		names := make([]string, len(e.Columns))
		for i, c := range e.Columns {
			names[i] = strings.Join(c.Path, ".")
		}
		return false, result.Refuse(ReasonSchemaChange, fmt.Errorf("%w; nothing was committed: set schemaEvolution to addNewColumns to add %s to the table, rescue to keep them in %s, or none to drop them",
			e, strings.Join(names, ", "), format.RescuedColumn))
	}
	for _, c := range e.Columns {
		if !slices.ContainsFunc(a.newCols, func(x format.NewColumn) bool { return slices.EqualFunc(x.Path, c.Path, strings.EqualFold) }) {
			a.newCols = append(a.newCols, c)
		}
	}
	if len(a.newCols) > 1000 {
		return false, result.Refuse(ReasonSchemaChange, fmt.Errorf("%w; more than 1000 new columns in one batch: refusing to grow the schema further", e))
	}
	return false, nil
}

// chunk is a run of rows of one source file: logical rows (the row path) or column vectors (the
// columnar path, for tables whose columns are all flat).
type chunk struct {
	rows []types.Struct
	cols *parquetio.FlatBatch
}

func (c chunk) len() int {
	if c.cols != nil {
		return c.cols.Rows
	}
	return len(c.rows)
}

// prefetched is one source file being read ahead of the writer: its row chunks in order, then (once
// done is closed) its row counts and error.
type prefetched struct {
	chunks        chan chunk
	done          chan struct{}
	rows, rescued int64
	err           error
}

// prefetch reads the batch's files ahead of the writer on up to GOMAXPROCS goroutines, in plan
// order: parsing (the costly part of JSON and CSV) overlaps with encoding, and memory stays bounded
// by the files in flight times two chunks each. The sequence yields one entry per file, in order.
func (r *runner) prefetch(ctx context.Context, files []source.File, schema *types.StructType, columnar bool) func(yield func(int, *prefetched) bool) {
	return func(yield func(int, *prefetched) bool) {
		slots := make(chan struct{}, max(runtime.GOMAXPROCS(0), 1))
		out := make([]*prefetched, len(files))
		for i := range out {
			out[i] = &prefetched{chunks: make(chan chunk, 2), done: make(chan struct{})}
		}
		go func() {
			for i, f := range files {
				select {
				case slots <- struct{}{}:
				case <-ctx.Done():
					for _, p := range out[i:] {
						p.err = ctx.Err()
						close(p.chunks)
						close(p.done)
					}
					return
				}
				go func(p *prefetched) {
					defer func() { <-slots }()
					p.rows, p.rescued, p.err = r.readFile(ctx, f, schema, columnar, p.chunks)
					close(p.chunks)
					close(p.done)
				}(out[i])
			}
		}()
		for i, p := range out {
			if !yield(i, p) {
				return
			}
		}
	}
}

// readFile streams one source file's rows into chunks, after checking that it is still the file
// the plan names. With columnar set (a table of flat columns), readers that can hand over column
// vectors do.
func (r *runner) readFile(ctx context.Context, f source.File, schema *types.StructType, columnar bool, chunks chan<- chunk) (rows, rescued int64, err error) {
	uri := r.uri(f.Key)
	info, err := r.src.Store().Stat(ctx, f.Key)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, 0, &format.Error{File: uri, Err: errors.New("the file was deleted after it was listed")}
	}
	if err != nil {
		return 0, 0, fmt.Errorf("stat source file %s: %w", uri, err)
	}
	now := source.File{Key: f.Key, Size: info.Size, ModTime: info.ModTime, ETag: info.ETag}
	if now.Identity() != f.Identity() {
		return 0, 0, &format.Error{File: uri, Err: fmt.Errorf("the file changed after it was planned (size %d → %d), so the version the batch's plan names can no longer be read: set onBadFile to skip to move past it (with allowOverwrites, a later batch takes the new version)", f.Size, info.Size)}
	}
	rd, err := format.Open(ctx, r.src.Store(), f, uri, schema, &r.o.Format)
	if err != nil {
		return 0, 0, err
	}
	defer rd.Close()
	next := func() (chunk, error) {
		rs, err := rd.Next()
		return chunk{rows: rs}, err
	}
	if cr, ok := rd.(format.ColumnReader); ok && columnar && cr.Columnar() {
		next = func() (chunk, error) {
			b, err := cr.NextColumns()
			return chunk{cols: b}, err
		}
	}
	for {
		c, err := next()
		if errors.Is(err, io.EOF) {
			return rows, rd.Rescued(), nil
		}
		if err != nil {
			return 0, 0, err
		}
		select {
		case chunks <- c:
		case <-ctx.Done():
			return 0, 0, ctx.Err()
		}
		rows += int64(c.len())
	}
}
