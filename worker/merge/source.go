package merge

import (
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Batch is the source of one merge: files of one store, read in order.
type Batch struct {
	Store storage.Store
	Files []source.File
}

// ListBatch lists a source given as one file or a prefix (directory): a URI naming an object is
// that file; otherwise every data file under it (hidden names skipped), in key order.
func ListBatch(ctx context.Context, uri string, cfg storage.Config) (Batch, error) {
	if b, ok := singleFile(ctx, uri, cfg); ok {
		return b, nil
	}
	store, err := storage.Open(ctx, uri, cfg)
	if err != nil {
		return Batch{}, fmt.Errorf("source %s: %w", uri, err)
	}
	var files []source.File
	for f, err := range source.New(store).List(ctx, "") {
		if err != nil {
			return Batch{}, err
		}
		files = append(files, f)
	}
	if len(files) == 0 {
		return Batch{}, fmt.Errorf("source %s holds no data files", uri)
	}
	return Batch{Store: store, Files: files}, nil
}

// singleFile opens uri's parent and takes uri as one object when it is one.
func singleFile(ctx context.Context, uri string, cfg storage.Config) (Batch, bool) {
	if strings.HasSuffix(uri, "/") {
		return Batch{}, false
	}
	i := strings.LastIndexByte(uri, '/')
	dir, name := ".", uri
	if i >= 0 {
		dir, name = uri[:i], uri[i+1:]
		if dir == "" || strings.HasSuffix(dir, ":/") {
			dir += "/"
		}
	}
	if name == "" {
		return Batch{}, false
	}
	ds, err := storage.Open(ctx, dir, cfg)
	if err != nil {
		return Batch{}, false
	}
	info, err := ds.Stat(ctx, name)
	if err != nil {
		return Batch{}, false
	}
	return Batch{Store: ds, Files: []source.File{{Key: name, Size: info.Size, ModTime: info.ModTime, ETag: info.ETag}}}, true
}

// srcRows is the batch read into the write schema: rows (boxed, or as columns: see
// source_columns.go), and for each row which table columns its file had (a target column the file
// lacks keeps the target's value on update).
type srcRows struct {
	rows []types.Struct
	// cols holds the batch instead of rows on the columnar path, colTypes its columns' types.
	cols     *parquetio.FlatBatch
	colTypes []types.DataType
	colNames []string
	fileOf   []int32  // file index of each row
	present  [][]bool // per file, per schema column
	files    []string // URIs, for messages
	// rest, when set, is the columns still being read (readBatchColumns' first): the others are
	// complete, and every column once await returns.
	rest *restColumns
}

// await waits until every column is read, and returns the read's error.
func (s *srcRows) await() error {
	if s.rest == nil {
		return nil
	}
	<-s.rest.done
	return s.rest.err
}

// len is the number of rows.
func (s *srcRows) len() int {
	if s.cols != nil {
		return s.cols.Rows
	}
	return len(s.rows)
}

// value is column i of row n as a logical value (nil when null).
func (s *srcRows) value(n, i int) types.Value {
	if s.cols != nil {
		return s.cols.Cols[i].Value(s.colTypes[i], n)
	}
	return s.rows[n][i]
}

// ordinal is column i of row n as an int64 when it is an integral, date or timestamp value
// (false for null), as ordinal does for a boxed value, without boxing on the columnar path.
func (s *srcRows) ordinal(n, i int) (int64, bool) {
	if s.cols == nil {
		return ordinal(s.rows[n][i])
	}
	c := &s.cols.Cols[i]
	if c.IsNull(n) {
		return 0, false
	}
	switch k, _ := parquetio.FlatKindOf(s.colTypes[i]); k {
	case parquetio.FlatI32:
		return int64(c.I32[n]), true
	case parquetio.FlatI64:
		return c.I64[n], true
	}
	return ordinal(s.value(n, i))
}

// colName names column i for messages.
func (s *srcRows) colName(i int) string { return s.colNames[i] }

// keyOf is keyOf of row n's columns idx.
func (s *srcRows) keyOf(n int, idx []int) (string, bool) {
	if s.cols == nil {
		return keyOf(s.rows[n], idx)
	}
	var b []byte
	for _, i := range idx {
		v := s.value(n, i)
		if v == nil {
			return "", false
		}
		b = appendValue(b, v)
	}
	return string(b), true
}

// row is row n as a boxed row (a copy on the columnar path).
func (s *srcRows) row(n int) types.Struct {
	if s.cols == nil {
		return s.rows[n]
	}
	_ = s.await() // a failed read is reported by the path that needs the columns
	r := make(types.Struct, len(s.cols.Cols))
	for i := range r {
		r[i] = s.value(n, i)
	}
	return r
}

// readBatch reads every row of the batch into schema: as columns when the schema is flat and every
// file can be read so, otherwise as rows. New columns come back as *format.NewColumnsError (the
// caller evolves and reads again, or refuses).
//
// first, when not nil, names the columns (schema indices) the merge plans with: a Parquet batch read
// as columns returns once they are read, and the others follow (srcRows.await).
func readBatch(ctx context.Context, b Batch, schema *types.StructType, fo *format.Options, rowsOnly bool, first []int) (*srcRows, error) {
	if !rowsOnly && columnarRead(schema, fo) {
		out, err := readBatchColumns(ctx, b, schema, fo, first)
		if !errors.Is(err, errNotColumnar) {
			return out, err
		}
	}
	return readBatchRows(ctx, b, schema, fo)
}

// readBatchRows reads every row of the batch into schema as boxed rows.
func readBatchRows(ctx context.Context, b Batch, schema *types.StructType, fo *format.Options) (*srcRows, error) {
	out := &srcRows{}
	// The reader's chunks are kept and joined once at the end: appending a million rows one by one
	// copies the growing slice of row pointers again and again.
	var chunks [][]types.Struct
	var chunkFile []int32
	total := 0
	for fi, f := range b.Files {
		uri := storage.URI(b.Store, f.Key)
		out.files = append(out.files, uri)
		present, err := columnsPresent(ctx, b.Store, f, uri, schema, fo)
		if err != nil {
			return nil, err
		}
		out.present = append(out.present, present)
		rd, err := format.Open(ctx, b.Store, f, uri, schema, fo)
		if err != nil {
			return nil, err
		}
		for {
			rows, err := rd.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				rd.Close()
				return nil, err
			}
			chunks, chunkFile = append(chunks, rows), append(chunkFile, int32(fi))
			total += len(rows)
		}
		if err := rd.Close(); err != nil {
			return nil, fmt.Errorf("close source file %s: %w", uri, err)
		}
	}
	out.rows, out.fileOf = make([]types.Struct, 0, total), make([]int32, 0, total)
	for c, rows := range chunks {
		out.rows = append(out.rows, rows...)
		for range rows {
			out.fileOf = append(out.fileOf, chunkFile[c])
		}
	}
	return out, nil
}

// columnsPresent says which schema columns a source file carries: its own schema for Parquet, the
// header or the sampled keys for CSV and JSON. Positional CSV (no header) carries them all.
func columnsPresent(ctx context.Context, store storage.Store, f source.File, uri string, schema *types.StructType, fo *format.Options) ([]bool, error) {
	present := make([]bool, len(schema.Fields))
	if fo.Format == format.CSV && !fo.Header {
		for i := range present {
			present[i] = true
		}
		return present, nil
	}
	inferred, err := format.Infer(ctx, store, []source.File{f}, func(string) string { return uri }, fo)
	if err != nil {
		var bad *format.Error
		if errors.As(err, &bad) && strings.Contains(bad.Err.Error(), "no columns found") {
			return present, nil // an empty file: no rows, nothing to keep
		}
		return nil, err
	}
	for i, c := range schema.Fields {
		for _, s := range inferred.Fields {
			if strings.EqualFold(s.Name, c.Name) {
				present[i] = true
			}
		}
	}
	return present, nil
}

// columnIndex finds a top-level column case-insensitively (-1 when absent).
func columnIndex(schema *types.StructType, name string) int {
	if i := schema.FieldIndex(name); i >= 0 {
		return i
	}
	for i, f := range schema.Fields {
		if strings.EqualFold(f.Name, name) {
			return i
		}
	}
	return -1
}

func columnNames(schema *types.StructType) string {
	names := make([]string, len(schema.Fields))
	for i, f := range schema.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
