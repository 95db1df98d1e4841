package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// layout is what a clustering rewrite reads and writes: the data-file schema (physical names, no
// partition columns, plus the materialized row-tracking columns when row ids must be preserved), the
// clustering key columns inside it, and the writer settings of the table.
type layout struct {
	snap     *delta.Snapshot
	schema   *types.StructType
	matchIDs bool
	writer   parquetio.WriterOptions
	target   int64

	// keySchema projects the top-level fields holding the key columns; keyPath[c] indexes column c's
	// value inside a row read with keySchema.
	keySchema *types.StructType
	keyPath   [][]int

	// Row tracking: rtID/rtVersion are the materialized columns' positions in schema (-1 when row ids
	// need not be preserved).
	rtID, rtVersion int
	rtColumns       *parquetio.RowTrackingColumns // their names, for parquetio (nil when not preserved)
	leafColumns     int
}

// newLayout resolves the key columns (physical paths) against the table's data-file schema.
func newLayout(snap *delta.Snapshot, keys [][]string, target int64) (*layout, error) {
	loc := snap.Table().Location()
	l := &layout{snap: snap, rtID: -1, rtVersion: -1, target: target}
	// The file schema compaction writes too: the materialized row-tracking columns are appended when
	// row ids must be preserved.
	schema, rt, err := snap.RewriteFileSchema()
	if err != nil {
		return nil, err
	}
	l.schema = schema
	if rt != nil {
		l.rtColumns = rt
		l.rtID = slices.IndexFunc(schema.Fields, func(f *types.StructField) bool { return f.Name == rt.RowID })
		l.rtVersion = slices.IndexFunc(schema.Fields, func(f *types.StructField) bool { return f.Name == rt.RowCommitVersion })
	}
	l.matchIDs = snap.ColumnMappingMode() == delta.ColumnMappingID
	l.writer = parquetio.WriterOptions{Codec: snap.Properties().CompressionCodec(), WriteFieldIDs: l.matchIDs}
	l.writer.RowGroupBytes = min(max(target/4, 64<<10), parquetio.DefaultRowGroupBytes)
	l.keySchema = &types.StructType{}
	for _, path := range keys {
		top := -1
		for i, f := range l.schema.Fields {
			if f.Name == path[0] {
				top = i
			}
		}
		if top < 0 {
			return nil, fmt.Errorf("table %s: clustering column %s is not a data column", loc, strings.Join(path, "."))
		}
		idx := slices.IndexFunc(l.keySchema.Fields, func(f *types.StructField) bool { return f.Name == path[0] })
		if idx < 0 {
			idx = len(l.keySchema.Fields)
			l.keySchema.Fields = append(l.keySchema.Fields, l.schema.Fields[top])
		}
		kp := []int{idx}
		t := l.schema.Fields[top].Type
		for _, name := range path[1:] {
			st, ok := t.(*types.StructType)
			if !ok {
				return nil, fmt.Errorf("table %s: clustering column %s is not inside a struct", loc, strings.Join(path, "."))
			}
			i := slices.IndexFunc(st.Fields, func(f *types.StructField) bool { return f.Name == name })
			if i < 0 {
				return nil, fmt.Errorf("table %s: clustering column %s not found", loc, strings.Join(path, "."))
			}
			kp = append(kp, i)
			t = st.Fields[i].Type
		}
		if _, ok := t.(*types.PrimitiveType); !ok {
			return nil, fmt.Errorf("table %s: clustering column %s is %s, not a primitive type", loc, strings.Join(path, "."), t)
		}
		l.keyPath = append(l.keyPath, kp)
	}
	l.leafColumns = countLeaves(l.schema)
	return l, nil
}

func countLeaves(t types.DataType) int {
	switch x := t.(type) {
	case *types.StructType:
		n := 0
		for _, f := range x.Fields {
			n += countLeaves(f.Type)
		}
		return n
	case *types.ArrayType:
		return countLeaves(x.ElementType)
	case *types.MapType:
		return countLeaves(x.KeyType) + countLeaves(x.ValueType)
	}
	return 1
}

// keyValue extracts column c's value from a row read with keySchema.
func (l *layout) keyValue(row types.Struct, c int) types.Value {
	var v types.Value = row
	for _, i := range l.keyPath[c] {
		s, ok := v.(types.Struct)
		if !ok || i >= len(s) {
			return nil
		}
		v = s[i]
	}
	return v
}

// input is one file being rewritten.
type input struct {
	add     *delta.AddFile
	key     string
	deleted *roaring64.Bitmap
	rows    int64 // physical rows, from the footer
	live    int64 // rows left after the deletion vector
	// memRow estimates the in-memory bytes of one decoded row; diskRow the file bytes per live row.
	memRow, diskRow float64
	// uncompressed is the size of the file's pages before compression.
	uncompressed int64
}

// openInputs loads the inputs' deletion vectors and footers (for row counts and size estimates).
func openInputs(ctx context.Context, l *layout, files []*delta.AddFile) ([]*input, error) {
	store := l.snap.Table().Store()
	ins := make([]*input, len(files))
	for i, f := range files {
		key, err := delta.ObjectKey(store.Location(), f.Path)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", f.Path, err)
		}
		in := &input{add: f, key: key}
		if f.DeletionVector != nil {
			if in.deleted, err = delta.LoadDeletionVector(ctx, store, f.DeletionVector); err != nil {
				return nil, fmt.Errorf("file %s: %w", f.Path, err)
			}
		}
		pf, r, err := in.open(ctx, store)
		if err != nil {
			return nil, err
		}
		var uncompressed int64
		for g := range pf.NumRowGroups() {
			uncompressed += pf.RowGroup(g).UncompressedBytes
		}
		rows := pf.NumRows()
		in.uncompressed = uncompressed
		r.Close()
		in.rows, in.live = rows, rows
		if in.deleted != nil {
			in.live -= int64(in.deleted.GetCardinality())
		}
		if rows > 0 {
			// A decoded row: a slice of interface values, each boxed, strings with their headers;
			// calibrated against peak RSS on the benchmark table (bench/RESULTS.md).
			in.memRow = 2*float64(uncompressed)/float64(rows) + 48*float64(l.leafColumns) + 64
		}
		if in.live > 0 {
			in.diskRow = float64(f.Size) / float64(in.live)
		}
		ins[i] = in
	}
	return ins, nil
}

func (in *input) open(ctx context.Context, store storage.Store) (*parquetio.File, storage.ReaderAt, error) {
	r, err := store.Open(ctx, in.key)
	if err != nil {
		return nil, nil, fmt.Errorf("open data file %s: %w", in.add.Path, err)
	}
	pf, err := parquetio.Open(ctx, r)
	if err != nil {
		r.Close()
		return nil, nil, fmt.Errorf("data file %s: %w", in.add.Path, err)
	}
	return pf, r, nil
}

// outputs creates the new data files of a rewrite and deletes them again when the commit does not
// happen.
type outputs struct {
	l    *layout
	pv   delta.PartitionValues
	dir  string
	now  func() time.Time
	cube *zcube

	mu   sync.Mutex
	keys []string
}

func newOutputs(l *layout, pv delta.PartitionValues, cube *zcube) (*outputs, error) {
	dir, err := l.snap.PartitionDir(pv)
	if err != nil {
		return nil, err
	}
	if dir != "" && !strings.HasSuffix(dir, "/") {
		dir += "/"
	}
	return &outputs{l: l, pv: pv, dir: dir, now: time.Now, cube: cube}, nil
}

// create starts output file seq.
func (o *outputs) create(ctx context.Context, seq int) (string, storage.Writer, error) {
	key := o.dir + delta.DataFileName(seq, o.l.writer.Codec)
	w, err := o.l.snap.Table().Store().Create(ctx, key)
	if err != nil {
		return "", nil, fmt.Errorf("create %s: %w", key, err)
	}
	o.mu.Lock()
	o.keys = append(o.keys, key)
	o.mu.Unlock()
	return key, w, nil
}

// addFile describes a finished output for the commit.
func (o *outputs) addFile(key string, res *parquetio.WriteResult) (*delta.AddFile, error) {
	stats, err := o.l.snap.BuildStats(res.NumRows, res.Columns)
	if err != nil {
		return nil, fmt.Errorf("statistics of %s: %w", key, err)
	}
	a := &delta.AddFile{
		Path: delta.EncodePath(key), PartitionValues: slices.Clone(o.pv), Size: res.Bytes,
		ModificationTime: o.now().UnixMilli(), DataChange: false, Stats: stats,
	}
	if o.cube != nil {
		o.cube.tag(a)
	}
	return a, nil
}

// abort deletes every output created: only when the commit definitely did not land.
func (o *outputs) abort(ctx context.Context) error {
	o.mu.Lock()
	keys := o.keys
	o.keys = nil
	o.mu.Unlock()
	var errs []error
	for _, k := range keys {
		if err := o.l.snap.Table().Store().Delete(ctx, k); err != nil {
			errs = append(errs, err)
		}
	}
	if len(errs) > 0 {
		return fmt.Errorf("delete %d uncommitted output files: %w", len(errs), errs[0])
	}
	return nil
}
