package delta

import (
	"context"
	"errors"
	"fmt"
	"hash/maphash"
	"io"
	"sync"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// checkpointBatchSize bounds how many checkpoint rows are decoded at once: the rows are converted
// into actions and dropped batch by batch, so a million-file checkpoint never sits in memory as
// Parquet values.
const checkpointBatchSize = 4096

// parquetReadRequest says which top-level checkpoint columns to read.
type parquetReadRequest struct {
	columns []string
	// statsParsed also reads add.stats_parsed (typed by the file's own schema) and turns it into
	// stats JSON for adds whose stats column is null.
	statsParsed bool
}

// ckFile is an opened checkpoint or sidecar Parquet file.
type ckFile struct {
	key string
	r   storage.ReaderAt
	pf  *parquetio.File
	// schema is the file's own schema: it tells which columns exist and the type of
	// stats_parsed, whose shape follows the table schema at checkpoint time. Nil when it cannot be
	// derived; then the standard columns are read by name (absent ones read as null) and
	// stats_parsed is done without.
	schema *types.StructType
}

func openCheckpointFile(ctx context.Context, store storage.Store, key string) (*ckFile, error) {
	r, err := store.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("open checkpoint %s: %w", key, err)
	}
	pf, err := parquetio.Open(ctx, r)
	if err != nil {
		r.Close()
		return nil, fmt.Errorf("checkpoint %s: %w", key, err)
	}
	schema, _ := pf.Schema()
	return &ckFile{key: key, r: r, pf: pf, schema: schema}, nil
}

func (f *ckFile) Close() error { return f.r.Close() }

// hasStatsParsed reports whether add.stats_parsed is read from the file when requested (not
// when the file's schema is unknown: see readSchemas).
func (f *ckFile) hasStatsParsed() bool {
	if f.schema == nil {
		return false
	}
	add := f.schema.Field("add")
	if add == nil {
		return false
	}
	st, ok := add.Type.(*types.StructType)
	return ok && st.Field("stats_parsed") != nil
}

// ckReadSchemas are the read schemas of one request on one file.
type ckReadSchemas struct {
	// columns are the requested columns the file has, widened: what the columnar decoder reads.
	columns *types.StructType
	// statsParsed is the type of add.stats_parsed when it is requested and stored: it is read in
	// step with the columns (statsParsedRows).
	statsParsed types.DataType
}

func (f *ckFile) readSchemas(req parquetReadRequest) ckReadSchemas {
	var s ckReadSchemas
	s.columns = &types.StructType{}
	for _, name := range req.columns {
		if f.schema != nil && f.schema.Field(name) == nil {
			continue
		}
		s.columns.Fields = append(s.columns.Fields, field(name, widen(checkpointColumn(name).Type)))
		if name == "add" && req.statsParsed && f.hasStatsParsed() {
			s.statsParsed = f.schema.Field("add").Type.(*types.StructType).Field("stats_parsed").Type
		}
	}
	return s
}

// checkLayout refuses, before anything is decoded, a file whose stored layout the columnar
// decoder cannot read (a list nested in a list, an integer stored as a float, …). There is no
// second decoder to fall back to: the error names the file and the column.
func (f *ckFile) checkLayout(ctx context.Context, s ckReadSchemas) error {
	if err := f.checkRequiredFields(s.columns); err != nil {
		return err
	}
	cr, err := f.pf.Columns(ctx, s.columns, parquetio.ColumnOptions{RowGroups: []int{}})
	if err != nil {
		return fmt.Errorf("checkpoint %s: %w; deltakeeper cannot load a table from a checkpoint stored this way: "+
			"report the writer that produced it, and write a new checkpoint with Spark or delta-rs meanwhile", f.key, err)
	}
	return cr.Close()
}

// requiredFields are, per action, the fields the protocol requires of it in a checkpoint and
// without which the decoder would go wrong quietly rather than fail: an absent column reads as
// null, so a file without add.path would hold no adds at all, and one without
// add.partitionValues would put every file in the null partition.
var requiredFields = map[string][]string{
	"add":                {"path", "partitionValues", "size", "modificationTime", "dataChange"},
	"remove":             {"path"},
	"metaData":           {"id", "schemaString"},
	"protocol":           {"minReaderVersion", "minWriterVersion"},
	"txn":                {"appId", "version"},
	"domainMetadata":     {"domain"},
	"checkpointMetadata": {"version"},
	"sidecar":            {"path", "sizeInBytes"},
}

// checkRequiredFields refuses a file that stores an action column without one of its required
// fields (when the file's schema is known).
func (f *ckFile) checkRequiredFields(columns *types.StructType) error {
	if f.schema == nil {
		return nil
	}
	for _, c := range columns.Fields {
		stored, ok := f.schema.Field(c.Name).Type.(*types.StructType)
		if !ok {
			return fmt.Errorf("checkpoint %s: column %s is not a struct; the checkpoint is corrupt or not a Delta checkpoint", f.key, c.Name)
		}
		for _, name := range requiredFields[c.Name] {
			if stored.Field(name) == nil {
				return fmt.Errorf("checkpoint %s: column %s.%s is missing, which the Delta protocol requires; "+
					"deltakeeper refuses to load a table from this checkpoint: write a new checkpoint with Spark or delta-rs", f.key, c.Name, name)
			}
		}
	}
	return nil
}

// keyLeaves are, per checkpoint column, the leaf columns of which at least one must be non-null
// for a row to hold that action: a row group where all of them are null holds none.
var keyLeaves = map[string][][]string{
	"add":                {{"add", "path"}},
	"remove":             {{"remove", "path"}},
	"metaData":           {{"metaData", "id"}, {"metaData", "schemaString"}},
	"protocol":           {{"protocol", "minReaderVersion"}},
	"txn":                {{"txn", "appId"}},
	"domainMetadata":     {{"domainMetadata", "domain"}},
	"checkpointMetadata": {{"checkpointMetadata", "version"}},
	"sidecar":            {{"sidecar", "path"}},
}

// rowGroupColumns narrows a read schema to the columns that can hold actions in row group rg,
// by the chunk statistics; nil when none can.
func (f *ckFile) rowGroupColumns(schema *types.StructType, rg int) *types.StructType {
	out := &types.StructType{}
	for _, sf := range schema.Fields {
		empty := true
		for _, leaf := range keyLeaves[sf.Name] {
			empty = empty && f.pf.ColumnAllNull(rg, leaf...)
		}
		if !empty || keyLeaves[sf.Name] == nil {
			out.Fields = append(out.Fields, sf)
		}
	}
	if len(out.Fields) == 0 {
		return nil
	}
	return out
}

// ckRange is a part of a checkpoint file: rows [first, first+n) of row group rg (n 0: to its
// end), or the whole file when whole is set.
type ckRange struct {
	whole    bool
	rg       int
	first, n int64
}

var wholeFile = ckRange{whole: true}

// read decodes the actions of a range of f and hands them to emit batch by batch, in row order;
// emit may keep the slice. Every checkpoint and sidecar goes through the columnar decoder
// (ckDecoder); a layout it cannot read is refused (checkLayout). Errors name the file.
func (f *ckFile) read(ctx context.Context, req parquetReadRequest, r ckRange, d *ckDecoder, emit func([]ckItem) error) error {
	s := f.readSchemas(req)
	if len(s.columns.Fields) == 0 {
		return nil
	}
	if err := f.checkLayout(ctx, s); err != nil {
		return err
	}
	err := f.readColumns(ctx, s, r, d, emit)
	if err != nil && ctx.Err() == nil {
		return fmt.Errorf("checkpoint %s: %w", f.key, err)
	}
	return err
}

func (f *ckFile) readColumns(ctx context.Context, s ckReadSchemas, r ckRange, d *ckDecoder, emit func([]ckItem) error) error {
	var sp *statsParsedRows
	if s.statsParsed != nil {
		// stats_parsed has the table's types (dates, decimals, timestamps, nested structs),
		// which the columnar reader does not decode: the logical reader reads just that column of
		// every row, in step with the columns, and the add decoder turns it into stats JSON.
		if !r.whole {
			return fmt.Errorf("internal error: stats_parsed read for part of a file")
		}
		schema := &types.StructType{Fields: []*types.StructField{field("add", &types.StructType{Fields: []*types.StructField{
			{Name: "stats_parsed", Type: s.statsParsed, Nullable: true}}})}}
		rows, err := f.pf.Rows(ctx, schema, parquetio.ReadOptions{BatchSize: checkpointBatchSize})
		if err != nil {
			return err
		}
		defer rows.Close()
		sp = &statsParsedRows{rows: rows, t: s.statsParsed}
	}
	parts := []ckRange{r}
	if r.whole {
		parts = parts[:0]
		for rg := range f.pf.NumRowGroups() {
			parts = append(parts, ckRange{rg: rg})
		}
	}
	for _, p := range parts {
		schema := s.columns
		if sp == nil {
			// Without stats_parsed in step, row groups and columns that hold no action are skipped.
			if schema = f.rowGroupColumns(s.columns, p.rg); schema == nil {
				continue
			}
		}
		if err := f.readRowGroup(ctx, schema, p, sp, d, emit); err != nil {
			return err
		}
	}
	return nil
}

func (f *ckFile) readRowGroup(ctx context.Context, schema *types.StructType, r ckRange, sp *statsParsedRows, d *ckDecoder, emit func([]ckItem) error) error {
	cr, err := f.pf.Columns(ctx, schema, parquetio.ColumnOptions{BatchSize: checkpointBatchSize, RowGroups: []int{r.rg}, FirstRow: r.first, NumRows: r.n})
	if err != nil {
		return err
	}
	defer cr.Close()
	for {
		b, err := cr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		items, err := d.decode(b, schema, sp, getItems())
		if err != nil {
			return err
		}
		if len(items) == 0 {
			putItems(items)
			continue
		}
		if err := emit(items); err != nil {
			return err
		}
	}
}

// itemBatches recycles the action slices of batches: the consumer of a batch hands its slice
// back (putItems) once the actions are applied.
var itemBatches = sync.Pool{New: func() any { s := make([]ckItem, 0, checkpointBatchSize); return &s }}

func getItems() []ckItem { return (*itemBatches.Get().(*[]ckItem))[:0] }

func putItems(items []ckItem) {
	if cap(items) == checkpointBatchSize {
		clear(items)
		items = items[:0]
		itemBatches.Put(&items)
	}
}

// statsParsedRows reads add.stats_parsed row by row next to the columnar decoder.
type statsParsedRows struct {
	rows    *parquetio.RowReader
	t       types.DataType
	buf     []types.Struct
	current types.Value // the current row's add.stats_parsed
}

func (s *statsParsedRows) next() error {
	for len(s.buf) == 0 {
		b, err := s.rows.Next()
		if errors.Is(err, io.EOF) {
			return fmt.Errorf("add.stats_parsed has fewer rows than the other columns; the file is corrupt")
		}
		if err != nil {
			return fmt.Errorf("add.stats_parsed: %w", err)
		}
		s.buf = b.Rows
	}
	s.current = nil
	if add, ok := s.buf[0][0].(types.Struct); ok {
		s.current = add[0]
	}
	s.buf = s.buf[1:]
	return nil
}

// readParquetActions streams the actions of one checkpoint or sidecar Parquet file.
func readParquetActions(ctx context.Context, store storage.Store, key string, req parquetReadRequest, in *interner, fn func(*Action) error) error {
	f, err := openCheckpointFile(ctx, store, key)
	if err != nil {
		return err
	}
	defer f.Close()
	d := newCkDecoder(maphash.MakeSeed())
	if in != nil {
		d.in = in
	}
	return f.read(ctx, req, wholeFile, d, func(items []ckItem) error {
		for _, it := range items {
			a := it.act
			if it.add != nil {
				a = &Action{Add: it.add}
			}
			if err := fn(a); err != nil {
				return err
			}
		}
		putItems(items)
		return nil
	})
}
