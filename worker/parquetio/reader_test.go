package parquetio

import (
	"encoding/json"
	"math/big"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

func withID(f *types.StructField, id int) *types.StructField {
	f.Metadata = map[string]json.RawMessage{types.MetaColumnMappingID: json.RawMessage(itoa(id))}
	return f
}

func itoa(i int) string { b, _ := json.Marshal(i); return string(b) }

func TestRows_DropsDeletedRowsAndReportsPhysicalIndexes(t *testing.T) {
	schema := structOf(field("id", prim(types.TypeLong), false), field("s", &types.ArrayType{ElementType: prim(types.TypeString), ContainsNull: true}, true))
	var rows []types.Struct
	for i := range 10_000 {
		var arr types.Value
		if i%3 != 0 {
			arr = types.Array{itoa(i), nil}
		}
		rows = append(rows, types.Struct{int64(i), arr})
	}
	data, _ := writeRows(t, schema, rows, WriterOptions{RowGroupRows: 1000, PageBytes: 2000})
	f := openBytes(t, data)
	if f.NumRowGroups() != 10 {
		t.Fatalf("want 10 row groups, got %d", f.NumRowGroups())
	}
	cases := []struct {
		name    string
		deleted *roaring64.Bitmap
	}{
		{"no deletion vector", nil},
		{"scattered rows", roaring64.BitmapOf(0, 1, 999, 1000, 5001, 9999)},
		{"whole row groups and ranges", func() *roaring64.Bitmap {
			b := roaring64.New()
			b.AddRange(2000, 4000) // row groups 2 and 3 entirely
			b.AddRange(4500, 4600)
			b.Add(20_000) // beyond the file: ignored
			return b
		}()},
		{"everything", func() *roaring64.Bitmap { b := roaring64.New(); b.AddRange(0, 10_000); return b }()},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, idx := readAllWithIndex(t, f, schema, ReadOptions{Deleted: tc.deleted, WithRowIndex: true, BatchSize: 700})
			var want []types.Struct
			var wantIdx []int64
			for i, r := range rows {
				if tc.deleted == nil || !tc.deleted.Contains(uint64(i)) {
					want = append(want, r)
					wantIdx = append(wantIdx, int64(i))
				}
			}
			assertRowsEqual(t, want, got)
			if len(idx) != len(wantIdx) {
				t.Fatalf("%d row indexes, want %d", len(idx), len(wantIdx))
			}
			for i := range idx {
				if idx[i] != wantIdx[i] {
					t.Fatalf("row index %d = %d, want %d", i, idx[i], wantIdx[i])
				}
			}
		})
	}
}

func TestRows_ResolvesColumnsByFieldIDInIDMode(t *testing.T) {
	written := structOf(
		withID(field("col-1", prim(types.TypeLong), true), 1),
		withID(field("col-2", structOf(withID(field("col-3", prim(types.TypeString), true), 3)), true), 2),
	)
	rows := []types.Struct{{int64(7), types.Struct{"x"}}, {nil, nil}}
	data, _ := writeRows(t, written, rows, WriterOptions{WriteFieldIDs: true})
	f := openBytes(t, data)
	derived, err := f.Schema()
	if err != nil {
		t.Fatal(err)
	}
	if id, ok := derived.Fields[1].Type.(*types.StructType).Fields[0].FieldID(); !ok || id != 3 {
		t.Fatalf("derived schema lost the nested field id: %v %v", id, ok)
	}
	// Renamed fields (ids kept), a field whose id the file does not have, and reordering.
	read := structOf(
		withID(field("renamed-2", structOf(withID(field("renamed-3", prim(types.TypeString), true), 3)), true), 2),
		withID(field("col-1", prim(types.TypeString), true), 99),
		withID(field("renamed-1", prim(types.TypeLong), true), 1),
	)
	got := readAll(t, f, read, ReadOptions{MatchFieldIDs: true})
	assertRowsEqual(t, []types.Struct{{types.Struct{"x"}, nil, int64(7)}, {nil, nil, nil}}, got)
	// Without MatchFieldIDs the same schema resolves by name: only "col-1" matches, and as a string
	// it is incompatible with the stored long.
	if _, err := f.Rows(t.Context(), read, ReadOptions{}); err == nil || !strings.Contains(err.Error(), `"col-1"`) {
		t.Fatalf("want an incompatible-type error naming col-1, got %v", err)
	}
}

func TestRows_WidensNarrowStoredTypes(t *testing.T) {
	stored := structOf(
		field("b", prim(types.TypeByte), true), field("s", prim(types.TypeShort), true), field("i", prim(types.TypeInteger), true),
		field("f", prim(types.TypeFloat), true), field("d", prim(types.TypeDate), true), field("dec", types.Decimal(5, 2), true),
		field("i2", prim(types.TypeInteger), true), field("bd", prim(types.TypeByte), true),
	)
	rows := []types.Struct{{int8(-3), int16(300), int32(-70000), float32(1.5), types.Date(-1), types.DecimalValue{Unscaled: big.NewInt(-12345), Scale: 2}, int32(42), int8(-7)}}
	data, _ := writeRows(t, stored, rows, WriterOptions{})
	wide := structOf(
		field("b", prim(types.TypeShort), true), field("s", prim(types.TypeInteger), true), field("i", prim(types.TypeLong), true),
		field("f", prim(types.TypeDouble), true), field("d", prim(types.TypeTimestampNTZ), true), field("dec", types.Decimal(10, 4), true),
		field("i2", prim(types.TypeDouble), true), field("bd", types.Decimal(4, 1), true),
	)
	got := readAll(t, openBytes(t, data), wide, ReadOptions{})
	want := []types.Struct{{int16(-3), int32(300), int64(-70000), float64(1.5), types.TimestampNTZ(-86_400_000_000), types.DecimalValue{Unscaled: big.NewInt(-1234500), Scale: 4}, float64(42), types.DecimalValue{Unscaled: big.NewInt(-70), Scale: 1}}}
	assertRowsEqual(t, want, got)
}

func TestRows_RejectsIncompatibleStoredTypesNamingTheColumn(t *testing.T) {
	stored := structOf(field("a", prim(types.TypeString), true), field("n", types.Decimal(10, 2), true), field("l", &types.ArrayType{ElementType: prim(types.TypeLong)}, true))
	data, _ := writeRows(t, stored, []types.Struct{{"x", nil, nil}}, WriterOptions{})
	f := openBytes(t, data)
	cases := []struct {
		name string
		read *types.StructType
		want string
	}{
		{"string as long", structOf(field("a", prim(types.TypeLong), true)), `"a"`},
		{"decimal narrowed", structOf(field("n", types.Decimal(9, 2), true)), `"n"`},
		{"decimal losing scale", structOf(field("n", types.Decimal(20, 1), true)), `"n"`},
		{"list as struct", structOf(field("l", structOf(field("x", prim(types.TypeLong), true)), true)), `"l"`},
		{"primitive as list", structOf(field("a", &types.ArrayType{ElementType: prim(types.TypeString)}, true)), `"a"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			_, err := f.Rows(t.Context(), tc.read, ReadOptions{})
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("want an error naming %s, got %v", tc.want, err)
			}
		})
	}
}

func TestRows_ProjectsReordersAndNullsMissingColumns(t *testing.T) {
	stored := structOf(
		field("a", prim(types.TypeLong), true),
		field("s", structOf(field("x", prim(types.TypeInteger), true), field("y", prim(types.TypeString), true)), true),
		field("c", prim(types.TypeString), true),
	)
	rows := []types.Struct{{int64(1), types.Struct{int32(2), "y"}, "c1"}, {int64(3), nil, nil}, {nil, types.Struct{nil, nil}, "c3"}}
	data, _ := writeRows(t, stored, rows, WriterOptions{})
	f := openBytes(t, data)
	read := structOf(
		field("c", prim(types.TypeString), true),
		field("added", prim(types.TypeDouble), true),
		// a stored struct of which only an added field is requested: still null where the struct is
		field("s", structOf(field("new", prim(types.TypeLong), true)), true),
		field("a", prim(types.TypeLong), true),
	)
	got := readAll(t, f, read, ReadOptions{})
	want := []types.Struct{{"c1", nil, types.Struct{nil}, int64(1)}, {nil, nil, nil, int64(3)}, {"c3", nil, types.Struct{nil}, nil}}
	assertRowsEqual(t, want, got)
	// No stored column at all: rows still count.
	got = readAll(t, f, structOf(field("zzz", prim(types.TypeLong), true)), ReadOptions{})
	assertRowsEqual(t, []types.Struct{{nil}, {nil}, {nil}}, got)
}
