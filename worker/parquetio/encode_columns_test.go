package parquetio

import (
	"bytes"
	"fmt"
	"math"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

func flatTestSchema() *types.StructType {
	col := func(name, typ string, nullable bool) *types.StructField {
		return &types.StructField{Name: name, Type: types.Primitive(typ), Nullable: nullable}
	}
	return &types.StructType{Fields: []*types.StructField{
		col("id", types.TypeLong, false), col("s", types.TypeString, true), col("i", types.TypeInteger, true),
		col("sh", types.TypeShort, true), col("b", types.TypeByte, true), col("d", types.TypeDouble, true),
		col("f", types.TypeFloat, true), col("ok", types.TypeBoolean, true), col("day", types.TypeDate, true),
		col("ts", types.TypeTimestamp, true), col("ntz", types.TypeTimestampNTZ, true), col("bin", types.TypeBinary, true),
	}}
}

func flatTestRows(n int) []types.Struct {
	rows := make([]types.Struct, n)
	for r := range rows {
		row := types.Struct{int64(r), fmt.Sprintf("s%03d", r%300), int32(r * 7), int16(r % 1000), int8(r % 100),
			float64(r) / 3, float32(r) / 7, r%3 == 0, types.Date(19000 + r%500), types.Timestamp(int64(r) * 1_000_003),
			types.TimestampNTZ(-int64(r) * 999), []byte{byte(r), byte(r >> 8)}}
		for c := 1; c < len(row); c++ {
			if (r+c)%(c+3) == 0 {
				row[c] = nil
			}
		}
		if r == 5 {
			row[5] = math.NaN()
		}
		rows[r] = row
	}
	return rows
}

// flatBatchOf appends rows to a new columnar batch of schema.
func flatBatchOf(t *testing.T, schema *types.StructType, rows []types.Struct) *FlatBatch {
	t.Helper()
	batch := NewFlatBatch(schema, len(rows))
	for _, row := range rows {
		for i, f := range schema.Fields {
			if err := batch.Cols[i].AppendValue(f.Type, row[i]); err != nil {
				t.Fatal(err)
			}
		}
		batch.Rows++
	}
	return batch
}

// writeFlat writes the rows sel of batch (all when nil) with one WriteColumns call into a file in
// memory and returns its bytes and result.
func writeFlat(t *testing.T, schema *types.StructType, batch *FlatBatch, opts WriterOptions, sel []int32) ([]byte, *WriteResult) {
	t.Helper()
	var buf memWriter
	w, err := NewWriter(&buf, schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteColumns(batch, sel); err != nil {
		t.Fatal(err)
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res
}

// backwards selects every step-th row from the last one back: the selection and its rows.
func backwards(rows []types.Struct, step int) ([]int32, []types.Struct) {
	var sel []int32
	var selRows []types.Struct
	for r := len(rows) - 1; r >= 0; r -= step {
		sel, selRows = append(sel, int32(r)), append(selRows, rows[r])
	}
	return sel, selRows
}

// WriteColumns writes the same file content as Write for the same rows: values, nulls and the
// exact statistics; a selection writes exactly the selected rows, in its order.
func TestWriteColumns_SameRowsAndStatsAsWrite(t *testing.T) {
	schema := flatTestSchema()
	if !FlatSchema(schema) {
		t.Fatal("the flat schema is not flat")
	}
	rows := flatTestRows(5000)
	batch := flatBatchOf(t, schema, rows)
	// Every row back as a logical value, as the row path holds it.
	for r, row := range rows {
		for i, f := range schema.Fields {
			if got := batch.Cols[i].Value(f.Type, r); fmt.Sprint(got) != fmt.Sprint(row[i]) {
				t.Fatalf("row %d column %s: Value %v, appended %v", r, f.Name, got, row[i])
			}
		}
	}
	opts := WriterOptions{RowGroupBytes: 32 << 10}
	want, wantRes := writeRows(t, schema, rows, opts)

	var buf memWriter
	w, err := NewWriter(&buf, schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	for lo := 0; lo < len(rows); lo += 777 { // the calls writeRows makes, so row groups end alike
		sel := make([]int32, 0, 777)
		for r := lo; r < min(lo+777, len(rows)); r++ {
			sel = append(sel, int32(r))
		}
		if err := w.WriteColumns(batch, sel); err != nil {
			t.Fatal(err)
		}
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(buf.Bytes(), want) {
		t.Errorf("WriteColumns wrote %d bytes that differ from Write's %d", buf.Len(), len(want))
	}
	// All rows in one call (sel nil).
	all, _ := writeFlat(t, schema, batch, opts, nil)
	if got := readAll(t, openBytes(t, all), schema, ReadOptions{}); fmt.Sprint(got) != fmt.Sprint(rows) {
		t.Fatalf("one WriteColumns call: read back %d rows that differ from the %d written", len(got), len(rows))
	}
	got := readAll(t, openBytes(t, buf.Bytes()), schema, ReadOptions{})
	if len(got) != len(rows) || fmt.Sprint(got) != fmt.Sprint(rows) {
		t.Fatalf("read back %d rows that differ from the %d written", len(got), len(rows))
	}
	assertStats(t, schema, rows, res)
	if fmt.Sprint(res.Columns) != fmt.Sprint(wantRes.Columns) {
		t.Errorf("statistics differ:\n%v\n%v", res.Columns, wantRes.Columns)
	}

	// A selection: every third row, backwards.
	sel, selRows := backwards(rows, 3)
	buf2, res2 := writeFlat(t, schema, batch, opts, sel)
	got2 := readAll(t, openBytes(t, buf2), schema, ReadOptions{})
	if fmt.Sprint(got2) != fmt.Sprint(selRows) {
		t.Fatalf("the selection read back differs (%d rows, want %d)", len(got2), len(selRows))
	}
	assertStats(t, schema, selRows, res2)
}

func TestWriteColumns_RefusesNullsInRequiredColumnsAndNestedSchemas(t *testing.T) {
	schema := flatTestSchema()
	b := NewFlatBatch(schema, 1)
	for i, f := range schema.Fields {
		if err := b.Cols[i].AppendValue(f.Type, nil); err != nil {
			t.Fatalf("append a null to %s: %v", f.Name, err)
		}
	}
	b.Rows = 1
	var buf memWriter
	w, _ := NewWriter(&buf, schema, WriterOptions{})
	if err := w.WriteColumns(b, nil); err == nil {
		t.Fatal("a null id (NOT NULL) was written")
	}
	nested := &types.StructType{Fields: []*types.StructField{{Name: "a", Type: &types.ArrayType{ElementType: types.Primitive(types.TypeLong), ContainsNull: true}, Nullable: true}}}
	if FlatSchema(nested) {
		t.Fatal("an array column counts as flat")
	}
	if FlatSchema(&types.StructType{Fields: []*types.StructField{{Name: "d", Type: types.Decimal(10, 2), Nullable: true}}}) {
		t.Fatal("a decimal column counts as flat")
	}
	w2, _ := NewWriter(&buf, nested, WriterOptions{})
	if err := w2.WriteColumns(&FlatBatch{Rows: 0, Cols: make([]FlatColumn, 1)}, nil); err == nil {
		t.Fatal("WriteColumns took a nested schema")
	}
}

// WriteColumns with its columns encoded on several goroutines (EncodeWorkers) writes the same rows
// and statistics as the serial encoder: byte for byte while a row group holds them all, and row for
// row across row groups, which then close at the same row for every column. A selection, a
// required column's null and a row-group row cap behave as in the serial path.
func TestWriteColumns_ParallelEncodingWritesTheSameFile(t *testing.T) {
	schema := flatTestSchema()
	rows := flatTestRows(3*parallelEncodeRound + 123)
	batch := flatBatchOf(t, schema, rows)
	serial, serialRes := writeFlat(t, schema, batch, WriterOptions{}, nil)
	parallel, parallelRes := writeFlat(t, schema, batch, WriterOptions{EncodeWorkers: 4}, nil)
	if !bytes.Equal(serial, parallel) {
		t.Errorf("one row group: the parallel encoder wrote %d bytes that differ from the serial one's %d", len(parallel), len(serial))
	}
	if fmt.Sprint(serialRes.Columns) != fmt.Sprint(parallelRes.Columns) {
		t.Errorf("statistics differ:\n%v\n%v", parallelRes.Columns, serialRes.Columns)
	}
	sel, selRows := backwards(rows, 2)
	for _, opts := range []WriterOptions{{EncodeWorkers: 3, RowGroupBytes: 64 << 10}, {EncodeWorkers: 2, RowGroupRows: 10_000}} {
		b, res := writeFlat(t, schema, batch, opts, sel)
		f := openBytes(t, b)
		if f.NumRowGroups() < 2 {
			t.Fatalf("%+v: %d row group: the test must cross row groups", opts, f.NumRowGroups())
		}
		if opts.RowGroupRows > 0 && f.RowGroup(0).NumRows != opts.RowGroupRows {
			t.Fatalf("%+v: the first row group holds %d rows", opts, f.RowGroup(0).NumRows)
		}
		if got := readAll(t, f, schema, ReadOptions{}); fmt.Sprint(got) != fmt.Sprint(selRows) {
			t.Fatalf("%+v: read back %d rows that differ from the %d selected", opts, len(got), len(selRows))
		}
		assertStats(t, schema, selRows, res)
	}
	// A null in the required column fails the file, as in the serial path.
	batch.Cols[0].Null = make([]bool, batch.Rows)
	batch.Cols[0].Null[len(rows)-1] = true
	w, err := NewWriter(&memWriter{}, schema, WriterOptions{EncodeWorkers: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.WriteColumns(batch, nil); err == nil || !strings.Contains(err.Error(), "not nullable") {
		t.Fatalf("err = %v: want the required column's null refused", err)
	}
	if _, err := w.Close(); err == nil {
		t.Fatal("a failed writer closed")
	}
}
