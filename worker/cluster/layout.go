package cluster

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// layout is what a clustering rewrite reads: the data-file schema the table's output path writes
// (table.RewriteOutputs: physical names, no partition columns, plus the materialized row-tracking
// columns when row ids must be preserved) and the clustering key columns inside it.
type layout struct {
	snap     *delta.Snapshot
	schema   *types.StructType
	matchIDs bool

	// keySchema projects the top-level fields holding the key columns; keyPath[c] indexes column c's
	// value inside a row read with keySchema.
	keySchema *types.StructType
	keyPath   [][]int

	// Row tracking: rtID/rtVersion are the materialized columns' positions in schema (-1 when row ids
	// need not be preserved).
	rtID, rtVersion int
	leafColumns     int
}

// newLayout resolves the key columns (physical paths) against the schema of the outputs.
func newLayout(snap *delta.Snapshot, out *table.RewriteOutputs, keys [][]string) (*layout, error) {
	loc := snap.Table().Location()
	opts := out.Options()
	l := &layout{snap: snap, schema: opts.Schema, matchIDs: opts.MatchFieldIDs, rtID: -1, rtVersion: -1}
	if rt := opts.RowTracking; rt != nil {
		l.rtID = slices.IndexFunc(l.schema.Fields, func(f *types.StructField) bool { return f.Name == rt.RowID })
		l.rtVersion = slices.IndexFunc(l.schema.Fields, func(f *types.StructField) bool { return f.Name == rt.RowCommitVersion })
	}
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
	// permuteBytes estimates the file's live rows decoded for parquetio.Permute (File.PermuteBytes).
	permuteBytes float64
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
		permuteBytes := pf.PermuteBytes()
		r.Close()
		in.rows, in.live = rows, rows
		if in.deleted != nil {
			in.live -= int64(in.deleted.GetCardinality())
		}
		if rows > 0 {
			in.permuteBytes = float64(permuteBytes) * float64(in.live) / float64(rows)
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
