package parquetio

import (
	"errors"
	"io"
	"testing"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// TestEncoder_CutsPagesOnlyWhereARecordStarts feeds a repeated column in batches that split a record,
// with pages small enough to be cut after every batch: every page must still begin a record (readers
// and the offset index rely on it) and the values must read back whole.
func TestEncoder_CutsPagesOnlyWhereARecordStarts(t *testing.T) {
	elems := []format.SchemaElement{annotated(elem("f", format.Optional, 1), deprecated.List), elem("list", format.Repeated, 1), leafElem("element", format.Optional, format.Int64)}
	path := []string{"f", "list", "element"}
	batches := []rawColumn{
		{path: path, phys: format.Int64, maxDef: 3, maxRep: 1, defs: []byte{3, 3, 3}, reps: []byte{0, 1, 1}, i64: []int64{1, 2, 3}},
		{path: path, phys: format.Int64, maxDef: 3, maxRep: 1, defs: []byte{3, 3}, reps: []byte{1, 1}, i64: []int64{4, 5}},
		{path: path, phys: format.Int64, maxDef: 3, maxRep: 1, defs: []byte{3, 3}, reps: []byte{0, 1}, i64: []int64{6, 7}},
		{path: path, phys: format.Int64, maxDef: 3, maxRep: 1, defs: []byte{3, 0}, reps: []byte{1, 0}, i64: []int64{8}},
		{path: path, phys: format.Int64, maxDef: 3, maxRep: 1, defs: []byte{1}, reps: []byte{0}},
	}
	data := writeRawBatches(t, elems, batches, 1)
	f := openBytes(t, data)
	want := []types.Struct{{types.Array{int64(1), int64(2), int64(3), int64(4), int64(5)}}, {types.Array{int64(6), int64(7), int64(8)}}, {nil}, {types.Array{}}}
	schema := structOf(field("f", &types.ArrayType{ElementType: prim(types.TypeLong), ContainsNull: true}, true))
	assertRowsEqual(t, want, readAll(t, f, schema, ReadOptions{}))

	cr, err := f.openChunk(0, f.leaves[0], newReadBuffers(4096))
	if err != nil {
		t.Fatal(err)
	}
	pages := 0
	for {
		var p rawPage
		err := cr.next(&p)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		pages++
		if p.reps[0] != 0 {
			t.Fatalf("page %d starts inside a record (repetition level %d)", pages, p.reps[0])
		}
	}
	if pages != 3 {
		t.Fatalf("want 3 pages (cut before batches 3 and 5, where records start), got %d", pages)
	}
}

// writeRawBatches writes one leaf column from several batches into one row group.
func writeRawBatches(t *testing.T, elems []format.SchemaElement, batches []rawColumn, pageBytes int) []byte {
	t.Helper()
	var out []byte
	cols := []rawColumn{batches[0]}
	cols[0].defs, cols[0].reps, cols[0].i64 = nil, nil, nil
	for _, b := range batches {
		cols[0].defs = append(cols[0].defs, b.defs...)
		cols[0].reps = append(cols[0].reps, b.reps...)
		cols[0].i64 = append(cols[0].i64, b.i64...)
	}
	writeRawWith(t, elems, cols, WriterOptions{PageBytes: pageBytes}, func(e *columnEncoder, c rawColumn) {
		for _, b := range batches {
			batch := columnBatch{n: len(b.defs), defs: b.defs, reps: b.reps}
			batch.i64 = b.i64
			if err := e.write(&batch); err != nil {
				t.Fatal(err)
			}
		}
	}, &out)
	return out
}
