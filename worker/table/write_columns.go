package table

import (
	"fmt"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// ColumnarSchema reports whether WriteColumns can take the table of snap: every column flat
// (parquetio.FlatSchema). Other tables are written with Write.
func ColumnarSchema(snap *delta.Snapshot) bool {
	return parquetio.FlatSchema(snap.PhysicalSchema())
}

// WriteColumns adds the rows of a columnar batch with one vector per table column, in logical
// schema order, routed by partition values like Write. Only the partition columns' values are
// looked at one by one; the data columns go to the Parquet encoder as vectors.
func (w *Writer) WriteColumns(b *parquetio.FlatBatch) error {
	if w.err != nil {
		return w.err
	}
	schema := w.l.snap.Schema()
	if len(b.Cols) != len(schema.Fields) {
		return w.fail(fmt.Errorf("the batch has %d columns, the table has %d", len(b.Cols), len(schema.Fields)))
	}
	if err := notNull(schema, b, 0, b.Rows); err != nil {
		return w.fail(err)
	}
	data := &parquetio.FlatBatch{Rows: b.Rows, Cols: make([]parquetio.FlatColumn, len(w.l.dataIdx))}
	for j, i := range w.l.dataIdx {
		data.Cols[j] = b.Cols[i]
	}
	if len(w.l.partIdx) == 0 {
		return w.writeColumnsTo("", nil, data, nil)
	}
	// Group the rows by partition directory, keeping the order in which partitions first appear.
	rows := map[string][]int32{}
	pvs := map[string]delta.PartitionValues{}
	var order []string
	part := make(types.Struct, len(schema.Fields))
	for r := range b.Rows {
		for _, i := range w.l.partIdx {
			part[i] = b.Cols[i].Value(schema.Fields[i].Type, r)
		}
		pv, err := w.partitionValues(part)
		if err != nil {
			return w.fail(err)
		}
		dir, err := w.l.dir(pv)
		if err != nil {
			return w.fail(err)
		}
		if _, ok := rows[dir]; !ok {
			order = append(order, dir)
			pvs[dir] = pv
		}
		rows[dir] = append(rows[dir], int32(r))
	}
	for _, dir := range order {
		if err := w.writeColumnsTo(dir, pvs[dir], data, rows[dir]); err != nil {
			return w.fail(err)
		}
	}
	return nil
}

// notNull checks the NOT NULL columns of schema in rows [from, to) of b.
func notNull(schema *types.StructType, b *parquetio.FlatBatch, from, to int) error {
	for i, f := range schema.Fields {
		if f.Nullable {
			continue
		}
		for r := from; r < to; r++ {
			if b.Cols[i].IsNull(r) {
				return fmt.Errorf("row %d: column %s is NOT NULL but the value is null", r, f.Name)
			}
		}
	}
	return nil
}

// writeColumnsTo is writeTo for a columnar batch: the rows in sel (all when nil) go to the open
// file of dir, which rolls over at the target size.
func (w *Writer) writeColumnsTo(dir string, pv delta.PartitionValues, b *parquetio.FlatBatch, sel []int32) error {
	if sel == nil {
		sel = make([]int32, b.Rows)
		for k := range sel {
			sel[k] = int32(k)
		}
	}
	total := len(sel)
	// Feed the Parquet writer in chunks so that row groups close, and the size check sees them,
	// within one large batch: about a thousandth of a row group's bytes in rows, so that a file
	// overshoots its target by less than a row group for rows under 1 KiB, and large enough at
	// the usual targets (16 MiB row groups: 16,384 rows) for its columns to encode in parallel.
	chunk := int(min(max(w.l.writer.RowGroupBytes>>10, 256), 16<<10))
	for pos := 0; pos < total; {
		f, err := w.openFor(dir, pv)
		if err != nil {
			return err
		}
		n := min(chunk, total-pos)
		if err := f.pw.WriteColumns(b, sel[pos:pos+n]); err != nil {
			return fmt.Errorf("write %s: %w", f.key, err)
		}
		pos += n
		if f.counter.n >= w.l.target {
			delete(w.open, dir)
			if err := w.finish(f); err != nil {
				return err
			}
		}
	}
	return nil
}

// openFor returns the open file of dir, starting one (and evicting the least recently written
// file when too many are open) if there is none.
func (w *Writer) openFor(dir string, pv delta.PartitionValues) (*openFile, error) {
	f, ok := w.open[dir]
	if !ok {
		if len(w.open) >= w.l.opts.MaxOpenFiles {
			if err := w.evict(); err != nil {
				return nil, err
			}
		}
		var err error
		if f, err = w.start(dir, pv); err != nil {
			return nil, err
		}
		w.open[dir] = f
	}
	w.clock++
	f.used = w.clock
	return f, nil
}
