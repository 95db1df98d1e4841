package parquetio

import (
	"context"
	"fmt"
	"io"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// DefaultBatchSize is the number of rows per Batch when ReadOptions.BatchSize is 0.
const DefaultBatchSize = 1024

// ReadOptions control Rows.
type ReadOptions struct {
	// MatchFieldIDs resolves columns by Parquet field_id = the read schema's delta.columnMapping.id
	// (column mapping "id" mode) instead of by name. Fields without an id are matched by name.
	MatchFieldIDs bool
	// Deleted holds physical row indexes (0-based over the whole file) to drop: a deletion vector.
	Deleted *roaring64.Bitmap
	// BatchSize is the number of rows per batch (DefaultBatchSize when 0).
	BatchSize int
	// WithRowIndex also returns each row's physical row index.
	WithRowIndex bool
}

// Batch is a run of rows in file order.
type Batch struct {
	Rows []types.Struct
	// RowIndexes holds each row's physical index when ReadOptions.WithRowIndex is set.
	RowIndexes []int64
}

// RowReader streams the rows of a file as logical values.
type RowReader struct {
	ctx     context.Context
	f       *File
	plan    *readPlan
	opts    ReadOptions
	asm     assembler
	rg      int   // current row group; -1 before the first
	rgLeft  int64 // rows left in the current row group
	row     int64 // physical index of the next row
	closed  bool
	noLeafs bool // no requested column is stored: rows are counted from the footer
}

// Rows reads the columns of schema (field names as stored in the file) from every row group. Columns
// absent from the file read as null; stored types narrower than requested are widened. Only requested
// columns are decoded.
func (f *File) Rows(ctx context.Context, schema *types.StructType, opts ReadOptions) (*RowReader, error) {
	if schema == nil {
		return nil, fmt.Errorf("read parquet rows: nil schema")
	}
	plan, err := planRead(f, schema, opts.MatchFieldIDs)
	if err != nil {
		return nil, fmt.Errorf("read parquet rows: %w", err)
	}
	if opts.BatchSize <= 0 {
		opts.BatchSize = DefaultBatchSize
	}
	r := &RowReader{ctx: ctx, f: f, plan: plan, opts: opts, rg: -1, noLeafs: len(plan.columns) == 0}
	for _, leaf := range plan.columns {
		r.asm.cursors = append(r.asm.cursors, newCursor(f, leaf))
	}
	return r, nil
}

func (r *RowReader) deleted(row int64) bool {
	return r.opts.Deleted != nil && r.opts.Deleted.Contains(uint64(row))
}

// allDeleted reports whether every row of [first, first+n) is deleted, so the group can be skipped
// without decoding.
func (r *RowReader) allDeleted(first, n int64) bool {
	if r.opts.Deleted == nil || n == 0 {
		return n == 0
	}
	rb := roaring64.New()
	rb.AddRange(uint64(first), uint64(first+n))
	return r.opts.Deleted.AndCardinality(rb) == uint64(n)
}

// advance moves to the next row group that has live rows; false at the end of the file.
func (r *RowReader) advance() bool {
	for r.rg+1 < r.f.NumRowGroups() {
		r.rg++
		info := r.f.RowGroup(r.rg)
		r.row = info.FirstRow
		if r.allDeleted(info.FirstRow, info.NumRows) {
			continue
		}
		r.rgLeft = info.NumRows
		if !r.noLeafs {
			for _, c := range r.asm.cursors {
				c.open(r.rg)
			}
		}
		return true
	}
	return false
}

// Next returns the next batch of live rows, or io.EOF after the last.
func (r *RowReader) Next() (Batch, error) {
	if r.closed {
		return Batch{}, fmt.Errorf("read parquet rows: reader is closed")
	}
	if err := r.ctx.Err(); err != nil {
		return Batch{}, err
	}
	b := Batch{Rows: make([]types.Struct, 0, r.opts.BatchSize)}
	for len(b.Rows) < r.opts.BatchSize {
		if r.rgLeft == 0 {
			if err := r.checkRowGroupEnd(); err != nil {
				return Batch{}, err
			}
			if err := r.ctx.Err(); err != nil {
				return Batch{}, err
			}
			if !r.advance() {
				break
			}
		}
		row := r.row
		r.row++
		r.rgLeft--
		if r.deleted(row) {
			if !r.noLeafs {
				r.asm.skipRow()
			}
			continue
		}
		var s types.Struct
		if r.noLeafs {
			s = make(types.Struct, len(r.plan.root.children))
		} else {
			s = r.asm.readRow(r.plan.root)
		}
		if err := r.cursorErr(); err != nil {
			return Batch{}, fmt.Errorf("row %d: %w", row, err)
		}
		b.Rows = append(b.Rows, s)
		if r.opts.WithRowIndex {
			b.RowIndexes = append(b.RowIndexes, row)
		}
	}
	if len(b.Rows) == 0 {
		return Batch{}, io.EOF
	}
	return b, nil
}

func (r *RowReader) cursorErr() error {
	for _, c := range r.asm.cursors {
		if c.err != nil {
			return c.err
		}
	}
	return nil
}

// checkRowGroupEnd verifies that every cursor consumed exactly its row group: more values than rows
// means the levels and the footer disagree.
func (r *RowReader) checkRowGroupEnd() error {
	if r.rg < 0 || r.noLeafs {
		return nil
	}
	for _, c := range r.asm.cursors {
		if c.cr == nil {
			continue
		}
		if !c.exhausted() {
			return fmt.Errorf("read parquet rows: column %q has more values than row group %d has rows (%d); the file is corrupt: %w", c.leaf.pathString(), r.rg, r.f.RowGroup(r.rg).NumRows, ErrCorruptFile)
		}
		if c.err != nil {
			return c.err
		}
		c.close()
	}
	return nil
}

// Close releases the page buffers. It does not close the file's storage.ReaderAt.
func (r *RowReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	for _, c := range r.asm.cursors {
		c.close()
	}
	return nil
}
