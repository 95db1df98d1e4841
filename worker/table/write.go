package table

import (
	"context"
	"errors"
	"fmt"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Writer writes logical rows as new data files of a table: routed to Hive-style partition
// directories, in the physical schema, with the table's codec, rolled over at the target size.
// Nothing is committed: Close returns the AddFiles for the caller's transaction, and Abort deletes
// every file written when the commit does not happen. Not safe for concurrent use.
type Writer struct {
	l       *layout
	ctx     context.Context
	open    map[string]*openFile
	clock   int64 // use counter for least-recently-written eviction
	seq     int
	done    []*delta.AddFile
	written []string // keys of completed files
	err     error
}

type openFile struct {
	key     string
	pv      delta.PartitionValues
	sw      storage.Writer
	pw      *parquetio.Writer
	counter *countingWriter
	used    int64
}

// NewWriter starts writing new files for the table of snap (the snapshot the commit will be based
// on). ctx bounds the storage uploads of the whole write.
func NewWriter(ctx context.Context, snap *delta.Snapshot, opts WriteOptions) (*Writer, error) {
	l, err := newLayout(snap, opts)
	if err != nil {
		return nil, err
	}
	if opts.MaxOpenFiles <= 0 {
		l.opts.MaxOpenFiles = 8
	}
	return &Writer{l: l, ctx: ctx, open: map[string]*openFile{}}, nil
}

// Write adds rows, each with one value per table column in logical schema order.
func (w *Writer) Write(rows []types.Struct) error {
	if w.err != nil {
		return w.err
	}
	schema := w.l.snap.Schema()
	groups := map[string][]types.Struct{}
	var order []string
	pvs := map[string]delta.PartitionValues{}
	for n, row := range rows {
		if len(row) != len(schema.Fields) {
			return w.fail(fmt.Errorf("row %d has %d values, the table has %d columns", n, len(row), len(schema.Fields)))
		}
		for i, f := range schema.Fields {
			if row[i] == nil && !f.Nullable {
				return w.fail(fmt.Errorf("row %d: column %s is NOT NULL but the value is null", n, f.Name))
			}
		}
		pv, err := w.partitionValues(row)
		if err != nil {
			return w.fail(err)
		}
		dir, err := w.l.dir(pv)
		if err != nil {
			return w.fail(err)
		}
		if _, ok := groups[dir]; !ok {
			order = append(order, dir)
			pvs[dir] = pv
		}
		data := make(types.Struct, len(w.l.dataIdx))
		for j, i := range w.l.dataIdx {
			data[j] = row[i]
		}
		groups[dir] = append(groups[dir], data)
	}
	for _, dir := range order {
		if err := w.writeTo(dir, pvs[dir], groups[dir]); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

func (w *Writer) partitionValues(row types.Struct) (delta.PartitionValues, error) {
	if len(w.l.partIdx) == 0 {
		return nil, nil
	}
	schema := w.l.snap.Schema()
	m := map[string]*string{}
	for _, i := range w.l.partIdx {
		name := delta.PhysicalName(schema.Fields[i], w.l.snap.ColumnMappingMode())
		pv, err := delta.FormatPartitionValue(name, row[i])
		if err != nil {
			return nil, err
		}
		if pv.Null {
			m[name] = nil
		} else {
			v := pv.Value
			m[name] = &v
		}
	}
	return delta.NewPartitionValues(m), nil
}

func (w *Writer) writeTo(dir string, pv delta.PartitionValues, rows []types.Struct) error {
	f, ok := w.open[dir]
	if !ok {
		if len(w.open) >= w.l.opts.MaxOpenFiles {
			if err := w.evict(); err != nil {
				return err
			}
		}
		var err error
		if f, err = w.start(dir, pv); err != nil {
			return err
		}
		w.open[dir] = f
	}
	w.clock++
	f.used = w.clock
	// Feed the Parquet writer in chunks so that row groups close (and the size check below sees
	// them) within one large Write, not only between calls.
	const chunk = 256
	for len(rows) > 0 {
		n := min(chunk, len(rows))
		if err := f.pw.Write(rows[:n]); err != nil {
			return fmt.Errorf("write %s: %w", f.key, err)
		}
		rows = rows[n:]
		if f.counter.n >= w.l.target {
			delete(w.open, dir)
			if err := w.finish(f); err != nil {
				return err
			}
			if len(rows) == 0 {
				return nil
			}
			return w.writeTo(dir, pv, rows)
		}
	}
	return nil
}

func (w *Writer) start(dir string, pv delta.PartitionValues) (*openFile, error) {
	key, sw, err := w.l.create(w.ctx, dir, w.seq)
	if err != nil {
		return nil, err
	}
	w.seq++
	cw := &countingWriter{w: sw}
	pw, err := parquetio.NewWriter(cw, w.l.fileSchema, w.l.writer)
	if err != nil {
		sw.Abort()
		return nil, err
	}
	return &openFile{key: key, pv: pv, sw: sw, pw: pw, counter: cw}, nil
}

// evict finishes the least recently written open file.
func (w *Writer) evict() error {
	var lru string
	for dir, f := range w.open {
		if lru == "" || f.used < w.open[lru].used {
			lru = dir
		}
	}
	f := w.open[lru]
	delete(w.open, lru)
	return w.finish(f)
}

func (w *Writer) finish(f *openFile) error {
	res, err := f.pw.Close()
	if err != nil {
		f.sw.Abort()
		return fmt.Errorf("finish %s: %w", f.key, err)
	}
	if err := f.sw.Close(); err != nil {
		f.sw.Abort()
		return fmt.Errorf("upload %s: %w", f.key, err)
	}
	w.written = append(w.written, f.key)
	add, err := w.l.addFile(f.key, f.pv, res)
	if err != nil {
		return err
	}
	w.done = append(w.done, add)
	return nil
}

func (w *Writer) fail(err error) error {
	if w.err == nil {
		w.err = err
	}
	return err
}

// Close finishes every open file and returns the AddFiles of all files written, in creation order
// of completion. After an error, call Abort.
func (w *Writer) Close() ([]*delta.AddFile, error) {
	if w.err != nil {
		return nil, w.err
	}
	dirs := make([]string, 0, len(w.open))
	for dir := range w.open {
		dirs = append(dirs, dir)
	}
	slices.Sort(dirs) // deterministic completion order
	for _, dir := range dirs {
		f := w.open[dir]
		delete(w.open, dir)
		if err := w.finish(f); err != nil {
			return nil, w.fail(err)
		}
	}
	return w.done, nil
}

// Abort discards the open files and deletes every completed one: call it when the commit that would
// have referenced them does not happen. Files a failed commit may still reference must not be
// deleted — only abort when the commit definitely did not land.
func (w *Writer) Abort(ctx context.Context) error {
	var errs []error
	for dir, f := range w.open {
		errs = append(errs, f.sw.Abort())
		delete(w.open, dir)
	}
	errs = append(errs, deleteKeys(ctx, w.l.snap.Table().Store(), w.written))
	w.written, w.done = nil, nil
	w.fail(errors.New("writer aborted"))
	return errors.Join(errs...)
}

// countingWriter counts the bytes that reached storage: the size of the file so far, not counting
// the row group being built.
type countingWriter struct {
	w storage.Writer
	n int64
}

func (c *countingWriter) Write(p []byte) (int, error) {
	n, err := c.w.Write(p)
	c.n += int64(n)
	return n, err
}
