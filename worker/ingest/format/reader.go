package format

import (
	"bufio"
	"compress/gzip"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/klauspost/compress/zstd"

	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// ChunkRows is the most rows one Next returns: memory per reader is bounded by it (and, for Parquet,
// by the file's row-group pages), never by the file's size.
const ChunkRows = 4096

// Reader yields a source file's rows in the table's schema (one value per table column, in order).
type Reader interface {
	// Next returns the next rows, or io.EOF after the last. Errors are *Error or *NewColumnsError
	// (or a storage error).
	Next() ([]types.Struct, error)
	// Rescued counts the rows whose _rescued_data was set.
	Rescued() int64
	Close() error
}

// Open starts reading file (whose URI is uri, for messages) from store into schema.
func Open(ctx context.Context, store storage.Store, file source.File, uri string, schema *types.StructType, o *Options) (Reader, error) {
	ra, err := store.Open(ctx, file.Key)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return nil, &Error{File: uri, Err: fmt.Errorf("the file was deleted after it was listed: %w", err)}
		}
		return nil, fmt.Errorf("open source file %s: %w", uri, err)
	}
	if ra.Size() == 0 {
		ra.Close()
		return nil, &Error{File: uri, Err: errors.New("the file is empty (0 bytes): remove it, or set onBadFile to skip")}
	}
	p := newProjector(uri, schema, o)
	if o.Format == Parquet {
		return openParquet(ctx, ra, p)
	}
	body, err := decompress(io.NewSectionReader(ra, 0, ra.Size()), file.Key, uri, ra.Size())
	if err != nil {
		ra.Close()
		return nil, err
	}
	closer := func() error { return errors.Join(body.Close(), ra.Close()) }
	switch o.Format {
	case JSON:
		rd, err := newJSONReader(body, closer, p)
		if err != nil {
			return nil, err
		}
		return newJSONColumnReader(rd.(*jsonReader)), nil
	case CSV:
		rd, err := newCSVReader(body, closer, p)
		if err != nil {
			return nil, err
		}
		return &csvColumnReader{csvReader: rd.(*csvReader), c: newColumnar(p)}, nil
	}
	closer()
	return nil, fmt.Errorf("format %q: use parquet, json or csv", o.Format)
}

// decompress wraps a gzip or zstd body by the file's extension.
func decompress(r io.Reader, key, uri string, size int64) (io.ReadCloser, error) {
	switch source.CompressionOf(key) {
	case source.Gzip:
		zr, err := gzip.NewReader(bufio.NewReaderSize(r, bufferSize(size)))
		if err != nil {
			return nil, &Error{File: uri, Err: fmt.Errorf("not a gzip file, though named .gz: %w", err)}
		}
		return &textBody{Reader: zr, close: zr.Close, uri: uri, codec: "gzip", buffer: 256 << 10}, nil
	case source.Zstd:
		zr, err := zstd.NewReader(r, zstd.WithDecoderConcurrency(1), zstd.WithDecoderLowmem(true))
		if err != nil {
			return nil, &Error{File: uri, Err: fmt.Errorf("not a zstd file, though named .zst: %w", err)}
		}
		return &textBody{Reader: zr, close: func() error { zr.Close(); return nil }, uri: uri, codec: "zstd", buffer: 256 << 10}, nil
	}
	return &textBody{Reader: r, close: func() error { return nil }, uri: uri, buffer: bufferSize(size)}, nil
}

// readBuffer is the line buffer size for a body from decompress.
func readBuffer(body io.Reader) int {
	if t, ok := body.(*textBody); ok && t.buffer > 0 {
		return t.buffer
	}
	return 256 << 10
}

// bufferSize is a read buffer for a file of size bytes: small files (most of a stream of events)
// need no 256 KiB buffer each.
func bufferSize(size int64) int {
	return int(min(max(size+16, 4<<10), 256<<10))
}

// textBody names decompression failures (a truncated .gz) as bad input of the file.
type textBody struct {
	io.Reader
	close  func() error
	uri    string
	codec  string
	buffer int
}

func (t *textBody) Read(p []byte) (int, error) {
	n, err := t.Reader.Read(p)
	if err != nil && err != io.EOF && t.codec != "" {
		if errors.Is(err, io.ErrUnexpectedEOF) {
			err = fmt.Errorf("the %s stream is truncated: %w", t.codec, err)
		} else {
			err = fmt.Errorf("the %s stream is corrupt: %w", t.codec, err)
		}
		return n, &Error{File: t.uri, Err: err}
	}
	return n, err
}

func (t *textBody) Close() error { return t.close() }

// projector maps source fields onto the table schema: case-insensitive names, new columns, rescue.
type projector struct {
	uri     string
	schema  *types.StructType
	o       *Options
	rescue  int // index of _rescued_data in schema, -1 without one
	lookups map[*types.StructType]map[string]int
	rescued int64
}

func newProjector(uri string, schema *types.StructType, o *Options) *projector {
	p := &projector{uri: uri, schema: schema, o: o, rescue: -1, lookups: map[*types.StructType]map[string]int{}}
	if o.Evolution == Rescue {
		for i, f := range schema.Fields {
			if strings.EqualFold(f.Name, RescuedColumn) {
				p.rescue = i
			}
		}
	}
	return p
}

// field finds a source name in st: an exact match first, else the case-insensitive one (Spark's
// default spark.sql.caseSensitive=false). The rescued-data column never matches source data.
func (p *projector) field(st *types.StructType, name string) int {
	m, ok := p.lookups[st]
	if !ok {
		m = make(map[string]int, 2*len(st.Fields))
		for i, f := range st.Fields {
			if st == p.schema && i == p.rescue {
				continue
			}
			if _, dup := m[strings.ToLower(f.Name)]; !dup {
				m[strings.ToLower(f.Name)] = i
			}
		}
		for i, f := range st.Fields {
			if st == p.schema && i == p.rescue {
				continue
			}
			m[f.Name] = i
		}
		p.lookups[st] = m
	}
	if i, ok := m[name]; ok {
		return i
	}
	if i, ok := m[strings.ToLower(name)]; ok {
		return i
	}
	return -1
}

// row is the per-row context of a conversion.
type row struct {
	num, line int64
	rescued   map[string]any
}

func (p *projector) fail(r *row, column string, err error) error {
	var ce *convertError
	if errors.As(err, &ce) || r != nil {
		e := &Error{File: p.uri, Column: column, Err: err}
		if r != nil {
			e.Row, e.Line = r.num, r.line
		}
		return e
	}
	return err
}

// rescueValue records a value that has no column, or could not be converted, in rescue mode.
func (r *row) rescueValue(path string, v any) {
	if r.rescued == nil {
		r.rescued = map[string]any{}
	}
	r.rescued[path] = v
}

// finish fills the rescued-data column and checks NOT NULL columns.
func (p *projector) finish(r *row, out types.Struct) error {
	if p.rescue >= 0 && len(r.rescued) > 0 {
		r.rescued["_file_path"] = p.uri
		b, err := json.Marshal(r.rescued)
		if err != nil {
			return p.fail(r, RescuedColumn, err)
		}
		out[p.rescue] = string(b)
		p.rescued++
		r.rescued = nil
	}
	for i, f := range p.schema.Fields {
		if out[i] == nil && !f.Nullable {
			return p.fail(r, f.Name, errors.New("the column is NOT NULL but the row has no value for it"))
		}
	}
	return nil
}
