package table

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// ScanOptions select what a Scan returns.
type ScanOptions struct {
	// Columns are logical top-level column names, in output order; nil returns every column in table
	// order.
	Columns []string
	// Where filters rows exactly and skips files whose partition values or statistics rule it out.
	Where *expr.Expr
	// BatchSize is the number of rows read per Parquet batch (parquetio.DefaultBatchSize when 0).
	BatchSize int
	// Storage opens data files whose absolute paths lie outside the table root.
	Storage storage.Config
	// Parallelism is the number of files decoded concurrently (DefaultScanParallelism when 0). Rows
	// are delivered in file order whatever it is.
	Parallelism int
}

// ScanStats count what a scan did.
type ScanStats struct {
	FilesRead, FilesSkipped int
	BytesRead               int64 // bytes read from the data files (footers and the pages decoded), counted at the reader
	Rows                    int64 // rows returned
	RowsDeleted             int64 // rows dropped by deletion vectors in the files read
}

// Scan reads the rows of a snapshot as logical values.
type Scan struct {
	snap    *delta.Snapshot
	out     *types.StructType // output schema (logical)
	read    []int             // table field index of each read column (output ∪ predicate columns)
	project []int             // position in the read row of each output column
	pred    *expr.Predicate   // bound to the read schema
	files   []*delta.AddFile
	skipped int
	opts    ScanOptions
}

// NewScan plans a scan: checks that deltakeeper can read the table (the features gate), resolves the
// projection, binds the predicate and skips files. Files are read in the snapshot's order (the log's,
// deterministic for a version), so two scans of one snapshot return rows in the same order.
func NewScan(snap *delta.Snapshot, opts ScanOptions) (*Scan, error) {
	if err := snap.CheckOperation(delta.OpRead); err != nil {
		return nil, err
	}
	schema := snap.Schema()
	s := &Scan{snap: snap, opts: opts}
	var outIdx []int
	if opts.Columns == nil {
		for i := range schema.Fields {
			outIdx = append(outIdx, i)
		}
	} else {
		for _, name := range opts.Columns {
			i := fieldIndexFold(schema, name)
			if i < 0 {
				return nil, fmt.Errorf("table %s has no column %q; columns: %s", snap.Table().Location(), name, columnNames(schema))
			}
			if slices.Contains(outIdx, i) {
				return nil, fmt.Errorf("column %q is listed twice", name)
			}
			outIdx = append(outIdx, i)
		}
	}
	need := slices.Clone(outIdx)
	if opts.Where != nil {
		for _, path := range opts.Where.Columns() {
			if i := fieldIndexFold(schema, path[0]); i >= 0 && !slices.Contains(need, i) {
				need = append(need, i)
			}
		}
	}
	slices.Sort(need)
	s.read = need
	readSchema := &types.StructType{}
	for _, i := range need {
		readSchema.Fields = append(readSchema.Fields, schema.Fields[i])
	}
	s.out = &types.StructType{}
	for _, i := range outIdx {
		s.out.Fields = append(s.out.Fields, schema.Fields[i])
		s.project = append(s.project, slices.Index(need, i))
	}
	if opts.Where != nil {
		// Bind once against the table (for error messages naming every column), then against the
		// read schema the rows will have.
		if _, err := opts.Where.Bind(schema); err != nil {
			return nil, err
		}
		p, err := opts.Where.Bind(readSchema)
		if err != nil {
			return nil, err
		}
		s.pred = p
	}
	for _, f := range snap.Files() {
		if s.pred != nil && !s.pred.MightMatch(FileFacts(snap, f)) {
			s.skipped++
			continue
		}
		s.files = append(s.files, f)
	}
	return s, nil
}

func fieldIndexFold(st *types.StructType, name string) int {
	if i := st.FieldIndex(name); i >= 0 {
		return i
	}
	for i, f := range st.Fields {
		if equalFold(f.Name, name) {
			return i
		}
	}
	return -1
}

// Schema is the logical schema of the returned rows.
func (s *Scan) Schema() *types.StructType { return s.out }

// Files are the live files the scan reads (after skipping), in read order.
func (s *Scan) Files() []*delta.AddFile { return s.files }

// Run streams the rows to fn, one batch at a time (at most BatchSize rows). fn may keep the rows.
// Memory is bounded by one Parquet batch plus the file's open row group, whatever the table size.
func (s *Scan) Run(ctx context.Context, fn func(rows []types.Struct) error) (ScanStats, error) {
	return s.Each(ctx, func(_ *delta.AddFile, rows []types.Struct) error { return fn(rows) })
}

// DefaultScanParallelism is the number of files a scan reads ahead concurrently when
// ScanOptions.Parallelism is 0: enough to overlap object-store latency with decoding, while memory
// stays at a few files' batches and row groups.
const DefaultScanParallelism = 2

// scanItem is one batch of a file, or (done) the end of the file with its counts or error.
type scanItem struct {
	rows                []types.Struct
	done                bool
	fileRows, fileDeled int64
	fileBytes           int64
	err                 error
}

// Each is Run with the file each batch comes from (for per-file checks and progress). Files are
// decoded up to Parallelism at a time, but batches are delivered in file order, one at a time.
func (s *Scan) Each(ctx context.Context, fn func(f *delta.AddFile, rows []types.Struct) error) (ScanStats, error) {
	st := ScanStats{FilesSkipped: s.skipped}
	if err := ctx.Err(); err != nil {
		return st, err
	}
	loc := newLocator(s.snap.Table(), s.opts.Storage)
	par := s.opts.Parallelism
	if par <= 0 {
		par = DefaultScanParallelism
	}
	ctx, cancel := context.WithCancel(ctx)
	var wg sync.WaitGroup
	defer func() { cancel(); wg.Wait() }()
	// order carries each file's batch channel in read order; its capacity bounds how far the
	// readers run ahead of fn.
	order := make(chan chan scanItem, par)
	sem := make(chan struct{}, par)
	wg.Add(1)
	go func() {
		defer wg.Done()
		defer close(order)
		for _, f := range s.files {
			select {
			case sem <- struct{}{}:
			case <-ctx.Done():
				return
			}
			ch := make(chan scanItem, 4)
			wg.Add(1)
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				send := func(it scanItem) error {
					select {
					case ch <- it:
						return nil
					case <-ctx.Done():
						return ctx.Err()
					}
				}
				var read int64
				rows, deleted, err := s.readFile(ctx, loc, f, &read, func(b []types.Struct) error { return send(scanItem{rows: b}) })
				_ = send(scanItem{done: true, fileRows: rows, fileDeled: deleted, fileBytes: read, err: err}) // fails only once the scan stopped
			}()
			select {
			case order <- ch:
			case <-ctx.Done():
				return
			}
		}
	}()
	i := 0
	for ch := range order {
		f := s.files[i]
		i++
	file:
		for {
			var it scanItem
			select {
			case it = <-ch:
			case <-ctx.Done():
				return st, ctx.Err()
			}
			if it.done {
				if it.err != nil {
					return st, it.err
				}
				st.FilesRead++
				st.BytesRead += it.fileBytes
				st.Rows += it.fileRows
				st.RowsDeleted += it.fileDeled
				break file
			}
			// The receive above may win against a cancellation that happened in the previous callback
			// (select picks at random among ready cases): never hand a batch to a consumer that cancelled.
			if err := ctx.Err(); err != nil {
				return st, err
			}
			if err := fn(f, it.rows); err != nil {
				return st, err
			}
		}
	}
	if i != len(s.files) {
		return st, ctx.Err()
	}
	return st, nil
}

// readFile reads one live file: its DV, then its rows with partition values filled in, filtered
// and projected, handed to fn batch by batch. It returns the rows delivered and the rows its deletion
// vector dropped, and sets *read to the bytes read from the data file.
func (s *Scan) readFile(ctx context.Context, loc *locator, f *delta.AddFile, read *int64, fn func([]types.Struct) error) (int64, int64, error) {
	schema := s.snap.Schema()
	physical := s.snap.PhysicalSchema()
	var deleted *roaring64.Bitmap
	var nDeleted int64
	if f.DeletionVector != nil {
		bm, err := delta.LoadDeletionVector(ctx, s.snap.Table().Store(), f.DeletionVector)
		if err != nil {
			return 0, 0, fmt.Errorf("file %s: %w", f.Path, err)
		}
		deleted, nDeleted = bm, int64(bm.GetCardinality())
	}
	// Each read column is either a partition column (one value for the whole file, from the log) or
	// a data column read from the file under its physical name.
	consts := make([]types.Value, len(s.read))
	fileSchema := &types.StructType{}
	var fromFile []int // read position of each file column
	for j, i := range s.read {
		if s.isPartition(schema.Fields[i].Name) {
			v, err := s.snap.PartitionValue(f, schema.Fields[i].Name)
			if err != nil {
				return 0, 0, fmt.Errorf("file %s: partition value of %s: %w", f.Path, schema.Fields[i].Name, err)
			}
			consts[j] = v
			continue
		}
		fileSchema.Fields = append(fileSchema.Fields, physical.Fields[i])
		fromFile = append(fromFile, j)
	}
	opened, err := loc.open(ctx, f.Path)
	if err != nil {
		return 0, 0, err
	}
	r := &countingReader{ReaderAt: opened}
	defer func() { *read = r.n.Load(); r.Close() }()
	pf, err := parquetio.Open(ctx, r)
	if err != nil {
		return 0, 0, fmt.Errorf("data file %s: %w", f.Path, err)
	}
	var delivered int64
	emit := func(n int, fileRows []types.Struct) error {
		out := make([]types.Struct, 0, n)
		for k := 0; k < n; k++ {
			row := make(types.Struct, len(s.read))
			copy(row, consts)
			if fileRows != nil {
				for c, j := range fromFile {
					row[j] = fileRows[k][c]
				}
			}
			if s.pred != nil && !s.pred.Eval(row) {
				continue
			}
			if !isIdentity(s.project, len(s.read)) {
				p := make(types.Struct, len(s.project))
				for c, j := range s.project {
					p[c] = row[j]
				}
				row = p
			}
			out = append(out, row)
		}
		if len(out) == 0 {
			return nil
		}
		delivered += int64(len(out))
		return fn(out)
	}
	if len(fileSchema.Fields) == 0 {
		// Only partition columns are wanted: the row count is all the file contributes.
		n := pf.NumRows() - nDeleted
		batch := s.opts.BatchSize
		if batch <= 0 {
			batch = parquetio.DefaultBatchSize
		}
		for n > 0 {
			k := min(n, int64(batch))
			if err := emit(int(k), nil); err != nil {
				return delivered, nDeleted, err
			}
			n -= k
		}
		return delivered, nDeleted, nil
	}
	rows, err := pf.Rows(ctx, fileSchema, parquetio.ReadOptions{
		MatchFieldIDs: s.snap.ColumnMappingMode() == delta.ColumnMappingID,
		Deleted:       deleted,
		BatchSize:     s.opts.BatchSize,
	})
	if err != nil {
		return 0, 0, fmt.Errorf("data file %s: %w", f.Path, err)
	}
	defer rows.Close()
	for {
		b, err := rows.Next()
		if errors.Is(err, io.EOF) {
			return delivered, nDeleted, nil
		}
		if err != nil {
			return delivered, nDeleted, fmt.Errorf("data file %s: %w", f.Path, err)
		}
		if err := emit(len(b.Rows), b.Rows); err != nil {
			return delivered, nDeleted, err
		}
		if err := ctx.Err(); err != nil {
			return delivered, nDeleted, err
		}
	}
}

// isPartition reports whether a logical column is a partition column (Spark resolves the
// partitionColumns names case-insensitively against the schema).
func (s *Scan) isPartition(name string) bool {
	return slices.ContainsFunc(s.snap.Metadata().PartitionColumns, func(p string) bool { return equalFold(p, name) })
}

func isIdentity(project []int, n int) bool {
	if len(project) != n {
		return false
	}
	for i, j := range project {
		if i != j {
			return false
		}
	}
	return true
}
