package merge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"

	"golang.org/x/sync/errgroup"

	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// The columnar path: a batch whose read schema is flat (every column a FlatKind: no struct, list,
// map, decimal or variant) is read into one parquetio.FlatBatch — Parquet files through
// parquetio's columnar reader, CSV and JSON through the format package's column readers — and its
// updated and inserted rows are written by table.Writer.WriteColumns, gathered by index. Boxed rows
// (one types.Value per cell) cost more than the rest of a clustered merge: reading, encoding and
// collecting them. Anything else reads rows (readBatch): the route follows the schema.

// errNotColumnar makes readBatch fall back to rows: a file whose stored layout the columnar reader
// refuses (parquetio.ErrColumnsUnsupported), or a text file its column reader cannot take.
var errNotColumnar = errors.New("the batch cannot be read as columns")

// columnarRead reports whether the batch is read as columns into schema.
func columnarRead(schema *types.StructType, fo *format.Options) bool {
	return fo.Evolution != format.Rescue && parquetio.FlatSchema(schema)
}

// readBatchColumns reads every row of the batch into one columnar batch of schema, with the same
// errors as readBatch; errNotColumnar when a file cannot be read so (nothing is kept then). With
// first (schema indices), a Parquet batch has only those columns read when it returns; the others
// are read on a goroutine while the merge plans on the first ones (srcRows.await).
func readBatchColumns(ctx context.Context, b Batch, schema *types.StructType, fo *format.Options, first []int) (*srcRows, error) {
	out := &srcRows{cols: parquetio.NewFlatBatch(schema, 0)}
	for _, f := range schema.Fields {
		out.colTypes, out.colNames = append(out.colTypes, f.Type), append(out.colNames, f.Name)
	}
	var rest []int
	if first != nil && fo.Format == format.Parquet {
		for i := range schema.Fields {
			if !slices.Contains(first, i) {
				rest = append(rest, i)
			}
		}
	}
	var later []*parquetColumns
	defer func() {
		for _, pc := range later {
			pc.close()
		}
	}()
	for fi, f := range b.Files {
		uri := storage.URI(b.Store, f.Key)
		out.files = append(out.files, uri)
		present, err := columnsPresent(ctx, b.Store, f, uri, schema, fo)
		if err != nil {
			return nil, err
		}
		out.present = append(out.present, present)
		before := out.cols.Rows
		switch {
		case fo.Format != format.Parquet:
			err = readTextColumns(ctx, b.Store, f, uri, schema, fo, out.cols)
		case rest != nil:
			var pc *parquetColumns
			if pc, err = openParquetColumns(ctx, b.Store, f, uri, schema, fo); err == nil {
				later = append(later, pc)
				if err = pc.readable(ctx, rest); err == nil {
					err = pc.read(ctx, first, out.cols)
				}
			}
		default:
			err = readParquetColumns(ctx, b.Store, f, uri, schema, fo, out.cols)
		}
		if err != nil {
			return nil, err
		}
		out.fileOf = slices.Grow(out.fileOf, out.cols.Rows-before)
		for range out.cols.Rows - before {
			out.fileOf = append(out.fileOf, int32(fi))
		}
	}
	if rest != nil {
		out.rest = readLater(ctx, later, rest, out.cols)
		later = nil // closed by readLater
	}
	return out, nil
}

// restColumns are the batch columns read after readBatchColumns returned.
type restColumns struct {
	done chan struct{}
	err  error
}

// readLater reads columns idx of every file (their rows already counted in dst.Rows) on a
// goroutine, and closes the files.
func readLater(ctx context.Context, files []*parquetColumns, idx []int, dst *parquetio.FlatBatch) *restColumns {
	rc := &restColumns{done: make(chan struct{})}
	go func() {
		defer close(rc.done)
		for _, pc := range files {
			if rc.err == nil {
				rc.err = pc.read(ctx, idx, dst)
			}
			pc.close()
		}
	}()
	return rc
}

// readTextColumns appends a CSV or JSON file's rows through its column reader.
func readTextColumns(ctx context.Context, store storage.Store, f source.File, uri string, schema *types.StructType, fo *format.Options, dst *parquetio.FlatBatch) error {
	rd, err := format.Open(ctx, store, f, uri, schema, fo)
	if err != nil {
		return err
	}
	defer rd.Close()
	cr, ok := rd.(format.ColumnReader)
	if !ok || !cr.Columnar() {
		return errNotColumnar
	}
	for {
		b, err := cr.NextColumns()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return err
		}
		appendFlatBatch(dst, b)
	}
	if err := rd.Close(); err != nil {
		return fmt.Errorf("close source file %s: %w", uri, err)
	}
	return nil
}

// appendFlatBatch appends the rows of b to dst (same schema).
func appendFlatBatch(dst, b *parquetio.FlatBatch) {
	for i := range dst.Cols {
		d, s := &dst.Cols[i], &b.Cols[i]
		if len(s.Null) == 0 {
			for range b.Rows {
				d.Null = append(d.Null, false)
			}
		} else {
			d.Null = append(d.Null, s.Null[:b.Rows]...)
		}
		d.I32, d.I64 = append(d.I32, s.I32...), append(d.I64, s.I64...)
		d.F32, d.F64 = append(d.F32, s.F32...), append(d.F64, s.F64...)
		d.Bool = append(d.Bool, s.Bool...)
		if len(s.Off) > 0 {
			if len(d.Off) == 0 {
				d.Off = append(d.Off, 0)
			}
			base := uint32(len(d.Bin))
			d.Bin = append(d.Bin, s.Bin...)
			for _, o := range s.Off[1:] {
				d.Off = append(d.Off, o+base)
			}
		}
	}
	dst.Rows += b.Rows
}

// readParquetColumns appends a Parquet file's rows read by parquetio's columnar reader, projected
// as format's Parquet reader projects them (openParquet): table columns matched to stored ones by
// exact name, else case-insensitively (each stored column taken once), absent ones null, stored
// columns the table lacks reported as new columns unless the evolution mode drops them.
func readParquetColumns(ctx context.Context, store storage.Store, sf source.File, uri string, schema *types.StructType, fo *format.Options, dst *parquetio.FlatBatch) error {
	pc, err := openParquetColumns(ctx, store, sf, uri, schema, fo)
	if err != nil {
		return err
	}
	defer pc.close()
	return pc.read(ctx, identity(len(schema.Fields)), dst)
}

// parquetColumns is one open Parquet batch file, projected on the schema.
type parquetColumns struct {
	ra     storage.ReaderAt
	f      *parquetio.File
	uri    string
	schema *types.StructType
	proj   *types.StructType // schema's fields under the names the file stores them
	rows   int64             // rows read by the first read (-1 before it)
}

// openParquetColumns opens a batch file and projects the schema on its columns, with
// readParquetColumns' errors.
func openParquetColumns(ctx context.Context, store storage.Store, sf source.File, uri string, schema *types.StructType, fo *format.Options) (*parquetColumns, error) {
	ra, err := store.Open(ctx, sf.Key)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, &format.Error{File: uri, Err: fmt.Errorf("the file was deleted after it was listed: %w", err)}
		}
		return nil, fmt.Errorf("open source file %s: %w", uri, err)
	}
	pc := &parquetColumns{ra: ra, uri: uri, schema: schema, rows: -1}
	if err := pc.project(ctx, fo); err != nil {
		pc.close()
		return nil, err
	}
	return pc, nil
}

func (pc *parquetColumns) project(ctx context.Context, fo *format.Options) error {
	if pc.ra.Size() == 0 {
		return &format.Error{File: pc.uri, Err: errors.New("the file is empty (0 bytes): remove it, or set onBadFile to skip")}
	}
	f, err := parquetio.Open(ctx, pc.ra)
	if err != nil {
		return &format.Error{File: pc.uri, Err: err}
	}
	pc.f = f
	fileSchema, err := f.Schema()
	if err != nil {
		return &format.Error{File: pc.uri, Err: err}
	}
	pc.proj = &types.StructType{}
	matched := make([]bool, len(fileSchema.Fields))
	for _, tf := range pc.schema.Fields {
		name := tf.Name
		if j := storedField(fileSchema, tf.Name); j >= 0 && !matched[j] {
			matched[j], name = true, fileSchema.Fields[j].Name
		}
		pc.proj.Fields = append(pc.proj.Fields, &types.StructField{Name: name, Type: tf.Type, Nullable: true})
	}
	var unknown []format.NewColumn
	for j, c := range fileSchema.Fields {
		if !matched[j] && (fo.Evolution == format.AddNewColumns || fo.Evolution == format.FailOnNewColumns) {
			unknown = append(unknown, format.NewColumn{Path: []string{c.Name}, Field: &types.StructField{Name: c.Name, Type: c.Type, Nullable: true}})
		}
	}
	if len(unknown) > 0 {
		return &format.NewColumnsError{File: pc.uri, Columns: unknown}
	}
	return nil
}

func (pc *parquetColumns) close() { _ = pc.ra.Close() }

// readable reports errNotColumnar now, rather than when they are read, if columns idx cannot be
// read as columns.
func (pc *parquetColumns) readable(ctx context.Context, idx []int) error {
	for _, i := range idx {
		cr, err := pc.f.Columns(ctx, pc.sub([]int{i}), parquetio.ColumnOptions{BatchSize: format.ChunkRows})
		if errors.Is(err, parquetio.ErrColumnsUnsupported) {
			return errNotColumnar
		}
		if err != nil {
			return &format.Error{File: pc.uri, Err: fmt.Errorf("the file's columns do not fit the table's schema: %w", err)}
		}
		cr.Close()
	}
	return nil
}

// sub is the projection of the schema fields idx.
func (pc *parquetColumns) sub(idx []int) *types.StructType {
	if len(idx) == len(pc.proj.Fields) {
		return pc.proj
	}
	sub := &types.StructType{}
	for _, i := range idx {
		sub.Fields = append(sub.Fields, pc.proj.Fields[i])
	}
	return sub
}

// read appends the file's rows of the schema fields idx to dst: on every core, one reader per
// column. The first read adds the rows to dst.Rows; a later one (other columns) checks it read as
// many.
func (pc *parquetColumns) read(ctx context.Context, idx []int, dst *parquetio.FlatBatch) error {
	f, schema := pc.f, pc.schema
	growFlat(dst, schema, idx, int(min(f.NumRows(), 1<<26)))
	counts := make([]int64, len(idx))
	if runtime.GOMAXPROCS(0) < 2 || len(idx) < 2 || f.NumRows() < minParallelRows {
		for k, i := range idx {
			var err error
			if counts[k], err = readFileColumns(ctx, f, pc.uri, schema, pc.proj, []int{i}, dst.Cols[i:i+1]); err != nil {
				return err
			}
		}
	} else {
		// One reader per column, on every core: zstd and page decoding are most of a batch read, and
		// columns decode apart (a row range would not: a reader skipping into a page decodes it).
		g, gctx := errgroup.WithContext(ctx)
		g.SetLimit(runtime.GOMAXPROCS(0))
		for k, i := range idx {
			g.Go(func() error {
				var err error
				counts[k], err = readFileColumns(gctx, f, pc.uri, schema, pc.proj, []int{i}, dst.Cols[i:i+1])
				return err
			})
		}
		if err := g.Wait(); err != nil {
			return err
		}
	}
	rows := counts[0]
	for k, n := range counts {
		if n != rows {
			return &format.Error{File: pc.uri, Column: schema.Fields[idx[k]].Name, Err: fmt.Errorf("the column holds %d rows, column %s %d", n, schema.Fields[idx[0]].Name, rows)}
		}
	}
	if pc.rows >= 0 {
		if rows != pc.rows {
			return &format.Error{File: pc.uri, Column: schema.Fields[idx[0]].Name, Err: fmt.Errorf("the column holds %d rows, the file's other columns %d", rows, pc.rows)}
		}
		return nil
	}
	pc.rows = rows
	dst.Rows += int(rows)
	if rows == 0 {
		return &format.Error{File: pc.uri, Err: errors.New("the file has no rows: remove it, or set onBadFile to skip")}
	}
	return nil
}

// minParallelRows is the smallest file read on several cores: below it the readers' set-up
// outweighs the decoding.
const minParallelRows = 16 << 10

// readFileColumns appends the file's rows of the schema fields idx (read as read's fields) to cols
// (one per index) and returns how many rows it read.
func readFileColumns(ctx context.Context, f *parquetio.File, uri string, schema, read *types.StructType, idx []int, cols []parquetio.FlatColumn) (int64, error) {
	sub := read
	if len(idx) < len(read.Fields) {
		sub = &types.StructType{}
		for _, i := range idx {
			sub.Fields = append(sub.Fields, read.Fields[i])
		}
	}
	cr, err := f.Columns(ctx, sub, parquetio.ColumnOptions{BatchSize: format.ChunkRows})
	if errors.Is(err, parquetio.ErrColumnsUnsupported) {
		return 0, errNotColumnar
	}
	if err != nil {
		return 0, &format.Error{File: uri, Err: fmt.Errorf("the file's columns do not fit the table's schema: %w", err)}
	}
	defer cr.Close()
	var rows int64
	for {
		b, err := cr.Next()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return rows, &format.Error{File: uri, Row: rows + 1, Err: err}
		}
		for k, i := range idx {
			tf := schema.Fields[i]
			c := &cols[k]
			before := len(c.Bin)
			if err := b.Column(k).AppendFlat(c, tf.Type); err != nil {
				return rows, &format.Error{File: uri, Row: rows + 1, Column: tf.Name, Err: err}
			}
			if rows == 0 && b.Len() > 0 && len(c.Bin) > before {
				// Strings: room for the file's other rows at the first chunk's bytes per row.
				left := int(f.NumRows()) - b.Len()
				c.Bin = slices.Grow(c.Bin, int(min(int64(len(c.Bin)-before)*int64(max(left, 0))/int64(b.Len())*9/8, 1<<31)))
			}
		}
		rows += int64(b.Len())
	}
}

// growFlat makes room for n more rows in the columns idx of dst, so that a batch of many chunks is
// not copied again each time its vectors outgrow their capacity.
func growFlat(dst *parquetio.FlatBatch, schema *types.StructType, idx []int, n int) {
	for _, i := range idx {
		f := schema.Fields[i]
		c := &dst.Cols[i]
		c.Null = slices.Grow(c.Null, n)
		switch k, _ := parquetio.FlatKindOf(f.Type); k {
		case parquetio.FlatI32:
			c.I32 = slices.Grow(c.I32, n)
		case parquetio.FlatI64:
			c.I64 = slices.Grow(c.I64, n)
		case parquetio.FlatF32:
			c.F32 = slices.Grow(c.F32, n)
		case parquetio.FlatF64:
			c.F64 = slices.Grow(c.F64, n)
		case parquetio.FlatBool:
			c.Bool = slices.Grow(c.Bool, n)
		case parquetio.FlatBytes:
			c.Off = slices.Grow(c.Off, n)
		}
	}
}

// storedField finds a table column's stored field as format's projector does: the exact name,
// else the first field equal to it case-insensitively (-1 when none).
func storedField(st *types.StructType, name string) int {
	for i, f := range st.Fields {
		if f.Name == name {
			return i
		}
	}
	for i, f := range st.Fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}
