package parquetio

import (
	"fmt"
	"io"
	"sort"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Defaults of WriterOptions.
const (
	DefaultRowGroupBytes   = 64 << 20
	DefaultPageBytes       = 1 << 20
	DefaultPageRows        = 20_000
	DefaultDictionaryBytes = 1 << 20
)

// WriterOptions control NewWriter.
type WriterOptions struct {
	// Codec is a delta.parquet.compression.codec value: zstd (default), snappy, gzip, lz4_raw ("lz4"
	// means lz4_raw), brotli, uncompressed; case-insensitive.
	Codec string
	// CompressionLevel is the codec's level (zstd 1–22, gzip 1–9, brotli 0–11); 0 keeps the default
	// (zstd level 1, see codecFor).
	CompressionLevel int
	// WriteFieldIDs writes each field's delta.columnMapping.id as the Parquet field_id (column mapping
	// "id" mode, and icebergCompat).
	WriteFieldIDs bool
	// RowGroupBytes closes a row group once its encoded (compressed) size reaches it: the writer holds
	// one row group in memory, so this bounds its memory. Default 64 MiB.
	RowGroupBytes int64
	// RowGroupRows caps the rows of a row group; 0 means no cap.
	RowGroupRows int64
	// PageBytes is the target uncompressed size of a data page. Default 1 MiB, less for schemas of more
	// than 16 leaf columns (16 MiB shared by all columns, at least 64 KiB each).
	PageBytes int
	// PageRows caps the rows of a data page (parquet-mr's parquet.page.row.count.limit, arrow-rs's
	// data_page_row_count_limit, both 20,000): a reader skipping pages by the page index, and a
	// copy-on-write copying the pages that lose no row, work in units of pages. Default
	// DefaultPageRows; negative means no cap. Repeated columns are cut only at record boundaries.
	PageRows int
	// DictionaryBytes is the largest dictionary a column chunk keeps before falling back to PLAIN
	// (parquet-mr's parquet.dictionary.page.size). Default 1 MiB; negative disables dictionaries.
	DictionaryBytes int
	// KeyValueMetadata is stored in the footer.
	KeyValueMetadata map[string]string
	// EncodeWorkers is how many goroutines encode and compress the columns of one WriteColumns call
	// of at least minParallelEncodeRows rows at once; 0 or 1 encodes them one after another. A
	// single file written alone (a merge's new rows) uses every core so; files written side by side
	// (compaction, copy-on-write) already do.
	EncodeWorkers int
}

// config resolves the options for a schema of numLeaves leaf columns.
func (o *WriterOptions) config(numLeaves int) (*encoderConfig, error) {
	codec, id, err := codecFor(o.Codec, o.CompressionLevel)
	if err != nil {
		return nil, err
	}
	cfg := &encoderConfig{codec: codec, codecID: id, pageBytes: o.PageBytes, pageRows: int64(o.PageRows)}
	if cfg.pageRows == 0 {
		cfg.pageRows = DefaultPageRows
	}
	if cfg.pageBytes <= 0 {
		// Every column holds an open page: wide schemas get smaller pages so that the open pages
		// stay within about 16 MiB together.
		cfg.pageBytes = min(DefaultPageBytes, max(64<<10, (16<<20)/max(numLeaves, 1)))
	}
	cfg.dict = dictConfig{enabled: o.DictionaryBytes >= 0, maxBytes: o.DictionaryBytes, probeValues: 4096, maxDistinct: 0.5}
	if cfg.dict.maxBytes == 0 {
		cfg.dict.maxBytes = DefaultDictionaryBytes
	}
	return cfg, nil
}

// WriteResult describes a finished file.
type WriteResult struct {
	NumRows int64
	// Bytes is the file size.
	Bytes int64
	// Columns holds one entry per leaf primitive column, in schema order.
	Columns []ColumnStats
}

// Writer writes logical rows as one Parquet file, mapping Delta types the way Spark does (see
// buildOutputSchema), with data page v1, explicit encodings (dictionary while it pays, PLAIN
// otherwise), statistics and a page index. A Writer is not safe for concurrent use. After an error the
// file is incomplete: every later call returns the error and the caller should abort its storage write.
type Writer struct {
	fw            *fileWriter
	deltaSchema   *types.StructType
	schema        *outputSchema
	cfg           *encoderConfig
	encs          []*columnEncoder
	copiers       []*columnEncoder // CopyPages' encoders (dictionary off), made on first use
	shred         *shredder
	stats         []leafStats
	rgRows        int64
	rowGroupBytes int64
	rowGroupRows  int64
	encodeWorkers int
	err           error
	closed        bool
}

// NewWriter starts a file on w with the given Delta schema (field names as they must be stored: the
// physical names under column mapping). Close finishes the file but does not close w.
func NewWriter(w io.Writer, schema *types.StructType, opts WriterOptions) (*Writer, error) {
	out, err := buildOutputSchema(schema, opts.WriteFieldIDs)
	if err != nil {
		return nil, fmt.Errorf("parquet writer: %w", err)
	}
	cfg, err := opts.config(len(out.leaves))
	if err != nil {
		return nil, fmt.Errorf("parquet writer: %w", err)
	}
	wr := &Writer{
		fw:            newFileWriter(w, out, cfg.codecID),
		deltaSchema:   schema,
		schema:        out,
		cfg:           cfg,
		shred:         newShredder(out),
		stats:         make([]leafStats, len(out.leaves)),
		rowGroupBytes: opts.RowGroupBytes,
		rowGroupRows:  opts.RowGroupRows,
		encodeWorkers: opts.EncodeWorkers,
	}
	if wr.rowGroupBytes <= 0 {
		wr.rowGroupBytes = DefaultRowGroupBytes
	}
	for _, l := range out.leaves {
		wr.encs = append(wr.encs, newColumnEncoder(l, cfg))
	}
	wr.fw.kv = keyValues(opts.KeyValueMetadata)
	return wr, nil
}

func keyValues(m map[string]string) []format.KeyValue {
	var kv []format.KeyValue
	for k, v := range m {
		kv = append(kv, format.KeyValue{Key: k, Value: v})
	}
	sort.Slice(kv, func(i, j int) bool { return kv[i].Key < kv[j].Key })
	return kv
}

// shredBatch is how many rows are striped before the column encoders consume them.
const shredBatch = 1024

// Write appends rows; each row has one value per top-level field, in schema order.
func (w *Writer) Write(rows []types.Struct) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("parquet writer: write after Close")
	}
	for len(rows) > 0 {
		n := min(len(rows), shredBatch)
		if w.rowGroupRows > 0 {
			n = int(min(int64(n), w.rowGroupRows-w.rgRows))
		}
		for _, r := range rows[:n] {
			if err := w.shred.row(r); err != nil {
				w.err = fmt.Errorf("parquet writer: %w; the file is incomplete and must be discarded", err)
				return w.err
			}
		}
		if err := w.feed(int64(n)); err != nil {
			w.err = err
			return err
		}
		rows = rows[n:]
	}
	return nil
}

// feed hands the shredded batches to the encoders and closes the row group when it is large enough.
func (w *Writer) feed(rows int64) error {
	for i, e := range w.encs {
		if err := e.write(&w.shred.batches[i]); err != nil {
			return fmt.Errorf("parquet writer: %w", err)
		}
		w.shred.batches[i].reset()
	}
	w.rgRows += rows
	return w.closeFullRowGroup()
}

// closeFullRowGroup writes the row group once its encoded bytes or its rows reach their cap.
func (w *Writer) closeFullRowGroup() error {
	var buffered int64
	for _, e := range w.encs {
		buffered += e.bufferedBytes()
	}
	if buffered >= w.rowGroupBytes || (w.rowGroupRows > 0 && w.rgRows >= w.rowGroupRows) {
		return w.flushRowGroup()
	}
	return nil
}

func (w *Writer) flushRowGroup() error {
	if w.rgRows == 0 {
		return nil
	}
	w.fw.beginRowGroup()
	for i, e := range w.encs {
		c, err := e.finishChunk()
		if err != nil {
			return fmt.Errorf("parquet writer: %w", err)
		}
		w.stats[i].add(e.leaf.order, c)
		if err := w.fw.writeChunk(c); err != nil {
			return fmt.Errorf("parquet writer: %w", err)
		}
	}
	w.fw.endRowGroup()
	w.rgRows = 0
	return nil
}

// Close writes the last row group, the page index and the footer, and returns the file's statistics.
func (w *Writer) Close() (*WriteResult, error) {
	if w.err != nil {
		return nil, w.err
	}
	if w.closed {
		return nil, fmt.Errorf("parquet writer: already closed")
	}
	w.closed = true
	if err := w.flushRowGroup(); err != nil {
		w.err = err
		return nil, err
	}
	size, err := w.fw.close()
	if err != nil {
		w.err = fmt.Errorf("parquet writer: %w", err)
		return nil, w.err
	}
	return w.result(size), nil
}

func (w *Writer) result(size int64) *WriteResult {
	res := &WriteResult{NumRows: w.fw.numRows, Bytes: size}
	res.Columns = columnStatsOf(w.schema.leaves, w.stats)
	return res
}
