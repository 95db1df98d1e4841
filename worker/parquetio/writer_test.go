package parquetio

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

func writeRows(t testing.TB, schema *types.StructType, rows []types.Struct, opts WriterOptions) ([]byte, *WriteResult) {
	t.Helper()
	var buf memWriter
	w, err := NewWriter(&buf, schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	for len(rows) > 0 { // several Write calls, as callers stream
		n := min(len(rows), 777)
		if err := w.Write(rows[:n]); err != nil {
			t.Fatal(err)
		}
		rows = rows[n:]
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if int64(buf.Len()) != res.Bytes {
		t.Fatalf("WriteResult.Bytes = %d, file has %d", res.Bytes, buf.Len())
	}
	return buf.Bytes(), res
}

func openBytes(t testing.TB, b []byte) *File {
	t.Helper()
	f, err := Open(context.Background(), memReader(b))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

func TestWriter_RoundTripsEveryTypeWithNullsAndNesting(t *testing.T) {
	schema := allTypesSchema()
	cases := []struct {
		name  string
		rows  int
		nulls float64
		card  int
		opts  WriterOptions
	}{
		{"defaults", 3000, 0.2, 0, WriterOptions{}},
		{"low cardinality uses dictionaries", 3000, 0.1, 7, WriterOptions{}},
		{"tiny pages and row groups", 2500, 0.3, 0, WriterOptions{PageBytes: 300, RowGroupRows: 700, Codec: "snappy"}},
		{"dictionary fallback mid chunk", 5000, 0.1, 3000, WriterOptions{DictionaryBytes: 2000, Codec: "GZIP"}},
		{"no dictionaries uncompressed", 1000, 0.5, 0, WriterOptions{DictionaryBytes: -1, Codec: "uncompressed"}},
		{"lz4 means lz4_raw", 500, 0.2, 0, WriterOptions{Codec: "lz4"}},
		{"all null", 300, 1, 0, WriterOptions{}},
		{"no rows", 0, 0, 0, WriterOptions{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			g := newValueGen(42, tc.nulls)
			g.card = tc.card
			var rows []types.Struct
			for range tc.rows {
				rows = append(rows, g.row(schema))
			}
			data, res := writeRows(t, schema, rows, tc.opts)
			if res.NumRows != int64(tc.rows) {
				t.Fatalf("NumRows = %d, want %d", res.NumRows, tc.rows)
			}
			f := openBytes(t, data)
			got := readAll(t, f, schema, ReadOptions{BatchSize: 333})
			assertRowsEqual(t, rows, got)
			derived, err := f.Schema()
			if err != nil {
				t.Fatal(err)
			}
			if err := sameShape(schema, derived); err != nil {
				t.Fatalf("schema derived from the written file differs: %v", err)
			}
			assertStats(t, schema, rows, res)
		})
	}
}

// sameShape compares a written schema with the one derived back (variants come back as their
// struct<value,metadata> storage, which is what an unannotated file says).
func sameShape(want, got *types.StructType) error {
	if len(want.Fields) != len(got.Fields) {
		return fmt.Errorf("%d fields, want %d", len(got.Fields), len(want.Fields))
	}
	for i, w := range want.Fields {
		g := got.Fields[i]
		if w.Name != g.Name || w.Nullable != g.Nullable {
			return fmt.Errorf("field %d: %s nullable=%t, want %s nullable=%t", i, g.Name, g.Nullable, w.Name, w.Nullable)
		}
		ws := w.Type.String()
		if ws != g.Type.String() && !(ws == "variant" && g.Type.String() == "struct<value:binary,metadata:binary>") {
			if _, nested := w.Type.(*types.PrimitiveType); nested {
				return fmt.Errorf("field %s: %s, want %s", w.Name, g.Type, w.Type)
			}
		}
	}
	return nil
}

// assertStats recomputes min/max/null count of every top-level and struct-nested primitive column and
// compares with the writer's exact statistics.
func assertStats(t *testing.T, schema *types.StructType, rows []types.Struct, res *WriteResult) {
	t.Helper()
	byPath := map[string]ColumnStats{}
	for _, c := range res.Columns {
		byPath[joinPath(c.Path)] = c
	}
	var walk func(s *types.StructType, prefix []string, get func(r types.Struct) types.Struct)
	walk = func(s *types.StructType, prefix []string, get func(r types.Struct) types.Struct) {
		for i, f := range s.Fields {
			path := append(append([]string(nil), prefix...), f.Name)
			switch ft := f.Type.(type) {
			case *types.StructType:
				walk(ft, path, func(r types.Struct) types.Struct {
					p := get(r)
					if p == nil {
						return nil
					}
					v, _ := p[i].(types.Struct)
					return v
				})
			case *types.PrimitiveType:
				got, ok := byPath[joinPath(path)]
				if !ok {
					t.Fatalf("no statistics for column %v", path)
				}
				var want ColumnStats
				for _, r := range rows {
					p := get(r)
					var v types.Value
					if p != nil {
						v = p[i]
					}
					if v == nil {
						want.NullCount++
						continue
					}
					if ft.Name == types.TypeVariant {
						continue // unordered: null count only
					}
					if want.Min == nil || cmpOrFail(t, v, want.Min) < 0 {
						want.Min = v
					}
					if want.Max == nil || cmpOrFail(t, v, want.Max) > 0 {
						want.Max = v
					}
				}
				if got.NullCount != want.NullCount {
					t.Errorf("column %v: null count %d, want %d", path, got.NullCount, want.NullCount)
				}
				if !statEqual(got.Min, want.Min) || !statEqual(got.Max, want.Max) {
					t.Errorf("column %v: min/max %v/%v, want %v/%v", path, got.Min, got.Max, want.Min, want.Max)
				}
			}
		}
	}
	walk(schema, nil, func(r types.Struct) types.Struct { return r })
}

func cmpOrFail(t *testing.T, a, b types.Value) int {
	c, err := types.Compare(a, b)
	if err != nil {
		t.Fatal(err)
	}
	return c
}

// statEqual compares statistics values: equal under types.Compare (so -0 equals 0), NaN equal to NaN.
func statEqual(a, b types.Value) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	if x, ok := a.(float64); ok && math.IsNaN(x) {
		y, ok := b.(float64)
		return ok && math.IsNaN(y)
	}
	if x, ok := a.(float32); ok && x != x {
		y, ok := b.(float32)
		return ok && y != y
	}
	c, err := types.Compare(a, b)
	return err == nil && c == 0
}

func TestWriter_RejectsValuesThatDoNotFitTheColumn(t *testing.T) {
	cases := []struct {
		name string
		typ  types.DataType
		val  types.Value
		null bool
	}{
		{"null in non-nullable column", prim(types.TypeLong), nil, false},
		{"string into long", prim(types.TypeLong), "1", true},
		{"int32 overflow", prim(types.TypeInteger), int64(1 << 40), true},
		{"decimal beyond precision", types.Decimal(5, 2), types.DecimalValue{Unscaled: big.NewInt(1234567), Scale: 2}, true},
		{"decimal needing rounding", types.Decimal(5, 1), types.DecimalValue{Unscaled: big.NewInt(1234), Scale: 2}, true},
		{"struct with wrong arity", structOf(field("a", prim(types.TypeLong), true)), types.Struct{int64(1), int64(2)}, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var buf memWriter
			w, err := NewWriter(&buf, structOf(field("c", tc.typ, tc.null)), WriterOptions{})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write([]types.Struct{{tc.val}}); err == nil {
				t.Fatal("Write accepted the value")
			}
			if _, err := w.Close(); err == nil {
				t.Fatal("Close succeeded after a failed Write")
			}
		})
	}
}

func TestWriter_RescalesDecimalsExactly(t *testing.T) {
	schema := structOf(field("d", types.Decimal(10, 3), true))
	rows := []types.Struct{{types.DecimalValue{Unscaled: big.NewInt(-125), Scale: 1}}, {types.DecimalValue{Unscaled: big.NewInt(7000), Scale: 4}}}
	data, _ := writeRows(t, schema, rows, WriterOptions{})
	got := readAll(t, openBytes(t, data), schema, ReadOptions{})
	want := []types.Struct{{types.DecimalValue{Unscaled: big.NewInt(-12500), Scale: 3}}, {types.DecimalValue{Unscaled: big.NewInt(700), Scale: 3}}}
	assertRowsEqual(t, want, got)
}

func TestWriter_RejectsUnknownCodec(t *testing.T) {
	if _, err := NewWriter(&memWriter{}, structOf(field("a", prim(types.TypeLong), true)), WriterOptions{Codec: "lzo"}); err == nil {
		t.Fatal("accepted codec lzo")
	}
}
