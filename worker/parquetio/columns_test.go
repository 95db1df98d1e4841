package parquetio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// columnsAsRows reads a file with Columns and turns the vectors back into the logical rows File.Rows
// returns, so that both readers can be compared value for value.
func columnsAsRows(t testing.TB, f *File, schema *types.StructType, opts ColumnOptions) ([]types.Struct, error) {
	t.Helper()
	cr, err := f.Columns(context.Background(), schema, opts)
	if err != nil {
		return nil, err
	}
	defer cr.Close()
	var rows []types.Struct
	for {
		b, err := cr.Next()
		if errors.Is(err, io.EOF) {
			return rows, nil
		}
		if err != nil {
			return nil, err
		}
		for i := range b.Len() {
			row := make(types.Struct, len(schema.Fields))
			for j, sf := range schema.Fields {
				row[j] = vectorValue(b.Column(j), sf.Type, i)
			}
			rows = append(rows, row)
		}
	}
}

func vectorValue(v *Vector, t types.DataType, i int) types.Value {
	if v.IsNull(i) {
		return nil
	}
	switch v.Kind() {
	case VecLong:
		return longValue(t, v.Long(i))
	case VecFloat:
		return v.Float(i)
	case VecDouble:
		return v.Double(i)
	case VecBool:
		return v.Bool(i)
	case VecString:
		if t.(*types.PrimitiveType).Name == types.TypeBinary {
			return append([]byte{}, v.Bytes(i)...)
		}
		return string(v.Bytes(i))
	case VecStruct:
		st := t.(*types.StructType)
		s := make(types.Struct, len(st.Fields))
		for j, f := range st.Fields {
			s[j] = vectorValue(v.Field(j), f.Type, i)
		}
		return s
	case VecList:
		at := t.(*types.ArrayType)
		arr := types.Array{}
		start, end := v.Entries(i)
		for k := start; k < end; k++ {
			arr = append(arr, vectorValue(v.Elem(), at.ElementType, k))
		}
		return arr
	case VecMap:
		mt := t.(*types.MapType)
		m := types.Map{}
		start, end := v.Entries(i)
		for k := start; k < end; k++ {
			m = append(m, types.MapEntry{Key: vectorValue(v.Key(), mt.KeyType, k), Value: vectorValue(v.Value(), mt.ValueType, k)})
		}
		return m
	}
	panic(fmt.Sprintf("vector kind %d", v.Kind()))
}

// longValue is a VecLong element as the logical value of type t that the row reader returns.
func longValue(t types.DataType, x int64) types.Value {
	switch t.(*types.PrimitiveType).Name {
	case types.TypeByte:
		return int8(x)
	case types.TypeShort:
		return int16(x)
	case types.TypeInteger:
		return int32(x)
	case types.TypeDate:
		return types.Date(x)
	case types.TypeTimestamp:
		return types.Timestamp(x)
	case types.TypeTimestampNTZ:
		return types.TimestampNTZ(x)
	}
	return x
}

// columnarSubset keeps the fields of a schema the columnar reader handles, in their own types; nil
// when nothing is left.
func columnarSubset(t types.DataType, inList bool) types.DataType {
	switch t := t.(type) {
	case *types.PrimitiveType:
		if t.Name == types.TypeDecimal {
			return nil
		}
		return t
	case *types.StructType:
		out := &types.StructType{}
		for _, f := range t.Fields {
			if ft := columnarSubset(f.Type, inList); ft != nil {
				out.Fields = append(out.Fields, &types.StructField{Name: f.Name, Type: ft, Nullable: f.Nullable, Metadata: f.Metadata})
			}
		}
		if len(out.Fields) == 0 {
			return nil
		}
		return out
	case *types.ArrayType:
		if inList {
			return nil
		}
		if e := columnarSubset(t.ElementType, true); e != nil {
			return &types.ArrayType{ElementType: e, ContainsNull: t.ContainsNull}
		}
	case *types.MapType:
		if inList {
			return nil
		}
		k, v := columnarSubset(t.KeyType, true), columnarSubset(t.ValueType, true)
		if k != nil && v != nil {
			return &types.MapType{KeyType: k, ValueType: v, ValueContainsNull: t.ValueContainsNull}
		}
	}
	return nil
}

func assertColumnsMatchRows(t *testing.T, f *File, schema *types.StructType, batchSizes ...int) {
	t.Helper()
	want := readAll(t, f, schema, ReadOptions{})
	for _, bs := range batchSizes {
		got, err := columnsAsRows(t, f, schema, ColumnOptions{BatchSize: bs})
		if err != nil {
			t.Fatalf("batch size %d: %v", bs, err)
		}
		if len(got) != len(want) {
			t.Fatalf("batch size %d: %d rows, Rows reads %d", bs, len(got), len(want))
		}
		for i := range want {
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("batch size %d, row %d:\n columns %#v\n    rows %#v", bs, i, got[i], want[i])
			}
		}
	}
}

func TestColumns_MatchRowsOnEveryConformanceFile(t *testing.T) {
	root, files := conformanceFiles(t)
	checked := 0
	typed := map[format.Type]int{}
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) {
			f := openFile(t, path)
			own, err := f.Schema()
			if err != nil {
				t.Skipf("no derivable schema: %v", err) // Rows cannot read it by its own schema either
			}
			sub, _ := columnarSubset(own, false).(*types.StructType)
			if sub == nil {
				return
			}
			assertColumnsMatchRows(t, f, sub, 1, 5, 4096)
			checked++
			for _, leaf := range f.leaves {
				if leaf.lt.phys == format.Int96 || leaf.lt.ann == annTimestamp || leaf.lt.ann == annDate || leaf.lt.phys == format.Double || leaf.lt.phys == format.Float {
					typed[leaf.lt.phys]++
				}
			}
		})
	}
	if checked < 500 {
		t.Fatalf("compared only %d files", checked)
	}
	// Spark's INT96 timestamps, INT64 timestamps and dates, floats and doubles were all compared.
	for _, phys := range []format.Type{format.Int96, format.Int64, format.Int32, format.Double, format.Float} {
		if typed[phys] == 0 {
			t.Errorf("no conformance file has a %s date, timestamp or floating-point column", phys)
		}
	}
}

func openFile(t *testing.T, path string) *File {
	t.Helper()
	f, err := Open(context.Background(), openLocal(t, path))
	if err != nil {
		t.Fatal(err)
	}
	return f
}

// sparseStructsSchema has the shapes the columnar reader is for (those of a Delta checkpoint, whose
// field names it borrows): nullable top-level structs, one non-null per row, holding strings,
// integers of both widths, booleans, a nested struct, maps and lists.
func sparseStructsSchema() *types.StructType {
	strMap := &types.MapType{KeyType: prim(types.TypeString), ValueType: prim(types.TypeString), ValueContainsNull: true}
	return structOf(
		field("add", structOf(
			field("path", prim(types.TypeString), true),
			field("partitionValues", strMap, true),
			field("size", prim(types.TypeLong), true),
			field("dataChange", prim(types.TypeBoolean), true),
			field("stats", prim(types.TypeString), true),
			field("tags", strMap, true),
			field("deletionVector", structOf(
				field("storageType", prim(types.TypeString), true),
				field("offset", prim(types.TypeInteger), true),
				field("cardinality", prim(types.TypeLong), true),
			), true),
		), true),
		field("protocol", structOf(
			field("minReaderVersion", prim(types.TypeInteger), false),
			field("readerFeatures", &types.ArrayType{ElementType: prim(types.TypeString), ContainsNull: true}, true),
		), true),
	)
}

// widenedRead is the read schema of sparseStructsSchema: integers as long, as worker/delta reads
// checkpoints (the reader widens them as the row reader does).
func widenedRead(t types.DataType) types.DataType {
	switch t := t.(type) {
	case *types.PrimitiveType:
		if integralType(t.Name) {
			return prim(types.TypeLong)
		}
		return t
	case *types.StructType:
		out := &types.StructType{}
		for _, f := range t.Fields {
			out.Fields = append(out.Fields, &types.StructField{Name: f.Name, Type: widenedRead(f.Type), Nullable: f.Nullable, Metadata: f.Metadata})
		}
		return out
	case *types.ArrayType:
		return &types.ArrayType{ElementType: widenedRead(t.ElementType), ContainsNull: t.ContainsNull}
	case *types.MapType:
		return &types.MapType{KeyType: widenedRead(t.KeyType), ValueType: widenedRead(t.ValueType), ValueContainsNull: t.ValueContainsNull}
	}
	return t
}

func integralType(name string) bool {
	switch name {
	case types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong:
		return true
	}
	return false
}

func sparseStructsRows(n int) []types.Struct {
	rows := make([]types.Struct, 0, n)
	for i := range n {
		if i%97 == 3 {
			rows = append(rows, types.Struct{nil, types.Struct{int32(3), types.Array{"a", nil, fmt.Sprint(i)}}})
			continue
		}
		if i%89 == 5 {
			rows = append(rows, types.Struct{nil, nil})
			continue
		}
		var pv, tags, dv types.Value
		switch i % 4 {
		case 0:
			pv = types.Map{{Key: "day", Value: fmt.Sprintf("2020-01-%02d", i%31)}}
		case 1:
			pv = types.Map{{Key: "a", Value: nil}, {Key: "b", Value: strings.Repeat("x", i%7)}}
		case 2:
			pv = types.Map{}
		}
		if i%5 == 0 {
			tags = types.Map{{Key: "INSERTION_TIME", Value: fmt.Sprint(1700000000 + i)}}
		}
		if i%11 == 0 {
			dv = types.Struct{"u", int32(i % 3), int64(i)}
		} else if i%13 == 0 {
			dv = types.Struct{nil, nil, nil}
		}
		var path, stats, size, dc types.Value = fmt.Sprintf("part-%06d.parquet", i), nil, int64(i * 1000), i%2 == 0
		if i%3 != 0 {
			stats = fmt.Sprintf(`{"numRecords":%d}`, i)
		}
		if i%17 == 0 {
			path, size, dc = nil, nil, nil
		}
		rows = append(rows, types.Struct{types.Struct{path, pv, size, dc, stats, tags, dv}, nil})
	}
	return rows
}

func TestColumns_MatchRowsAcrossPagesRowGroupsAndEncodings(t *testing.T) {
	schema := sparseStructsSchema()
	rows := sparseStructsRows(5000)
	for _, opts := range []WriterOptions{
		{},
		{RowGroupRows: 1234, PageBytes: 4096},
		{RowGroupRows: 999, PageBytes: 1024, DictionaryBytes: -1, Codec: "snappy"},
		{PageBytes: 512, DictionaryBytes: 300},
	} {
		t.Run(fmt.Sprintf("%+v", opts), func(t *testing.T) {
			data, _ := writeRows(t, schema, rows, opts)
			f := openBytes(t, data)
			read := widenedRead(schema).(*types.StructType)
			assertColumnsMatchRows(t, f, read, 1, 7, 1000, 4096)
			// fields absent from the file and structs read without any stored field
			withMissing := structOf(append(append([]*types.StructField{}, read.Fields...),
				field("txn", structOf(field("appId", prim(types.TypeString), true)), true))...)
			withMissing.Fields[1] = field("protocol", structOf(field("nope", prim(types.TypeLong), true)), true)
			assertColumnsMatchRows(t, f, withMissing, 3, 4096)
		})
	}
}

func TestColumns_RowGroupSelection(t *testing.T) {
	schema := sparseStructsSchema()
	rows := sparseStructsRows(3000)
	data, _ := writeRows(t, schema, rows, WriterOptions{RowGroupRows: 1000})
	f := openBytes(t, data)
	if f.NumRowGroups() != 3 {
		t.Fatalf("%d row groups", f.NumRowGroups())
	}
	read := widenedRead(schema).(*types.StructType)
	all, err := columnsAsRows(t, f, read, ColumnOptions{BatchSize: 300})
	if err != nil {
		t.Fatal(err)
	}
	got, err := columnsAsRows(t, f, read, ColumnOptions{BatchSize: 300, RowGroups: []int{2, 0}})
	if err != nil {
		t.Fatal(err)
	}
	want := append(append([]types.Struct{}, all[2000:]...), all[:1000]...)
	if !reflect.DeepEqual(got, want) {
		t.Fatal("row groups 2, 0 do not read as the file's rows 2000-2999, 0-999")
	}
	if _, err := f.Columns(context.Background(), read, ColumnOptions{RowGroups: []int{3}}); err == nil {
		t.Fatal("row group 3 of 3 accepted")
	}
}

func TestColumns_RowRangesSkipPagesAndKeepRowsWhole(t *testing.T) {
	schema := sparseStructsSchema()
	read := widenedRead(schema).(*types.StructType)
	rows := sparseStructsRows(6000)
	for _, opts := range []WriterOptions{
		{RowGroupRows: 2500, PageBytes: 1024},
		{RowGroupRows: 2500, PageBytes: 300, DictionaryBytes: -1},
		{},
	} {
		f := openBytes(t, mustWrite(t, schema, rows, opts))
		all, err := columnsAsRows(t, f, read, ColumnOptions{BatchSize: 1000})
		if err != nil {
			t.Fatal(err)
		}
		for rg := range f.NumRowGroups() {
			info := f.RowGroup(rg)
			for _, r := range [][2]int64{{0, 0}, {0, 1}, {1, 0}, {777, 500}, {info.NumRows - 1, 0}, {info.NumRows - 3, 100}, {1234, 1}, {2100, 0}, {info.NumRows / 2, 7}, {info.NumRows, 0}} {
				if r[0] > info.NumRows {
					continue
				}
				got, err := columnsAsRows(t, f, read, ColumnOptions{BatchSize: 333, RowGroups: []int{rg}, FirstRow: r[0], NumRows: r[1]})
				if err != nil {
					t.Fatalf("%+v rg %d rows %v: %v", opts, rg, r, err)
				}
				end := info.NumRows
				if r[1] > 0 {
					end = min(end, r[0]+r[1])
				}
				want := all[info.FirstRow+r[0] : info.FirstRow+end]
				if len(got) != len(want) {
					t.Fatalf("%+v rg %d rows %v: %d rows, want %d", opts, rg, r, len(got), len(want))
				}
				for i := range want {
					if !reflect.DeepEqual(got[i], want[i]) {
						t.Fatalf("%+v rg %d rows %v, row %d:\n got %#v\nwant %#v", opts, rg, r, i, got[i], want[i])
					}
				}
			}
		}
	}
}

func TestColumns_SparseFieldsSkipBatchesWithoutTheirGuards(t *testing.T) {
	schema := sparseStructsSchema()
	read := widenedRead(schema).(*types.StructType)
	rows := sparseStructsRows(5000)
	for i := 1500; i < 4000; i++ {
		rows[i] = types.Struct{rows[i][0], nil} // a long stretch without protocol
	}
	sparse := []SparseField{{Field: 0, Guards: [][]string{{"add", "path"}}}, {Field: 1, Guards: [][]string{{"protocol", "minReaderVersion"}}}}
	guard := func(row types.Struct, field int) bool {
		s, ok := row[field].(types.Struct)
		return ok && s[0] != nil
	}
	for _, opts := range []WriterOptions{{PageBytes: 1024, RowGroupRows: 2000}, {}} {
		f := openBytes(t, mustWrite(t, schema, rows, opts))
		want := readAll(t, f, read, ReadOptions{})
		for _, bs := range []int{1, 64, 1000} {
			cr, err := f.Columns(context.Background(), read, ColumnOptions{BatchSize: bs, Sparse: sparse})
			if err != nil {
				t.Fatal(err)
			}
			row, skipped := 0, 0
			for {
				b, err := cr.Next()
				if errors.Is(err, io.EOF) {
					break
				}
				if err != nil {
					t.Fatal(err)
				}
				for field := range 2 {
					active := false
					for i := range b.Len() {
						active = active || guard(want[row+i], field)
					}
					if !active {
						skipped++
					}
					for i := range b.Len() {
						got := vectorValue(b.Column(field), read.Fields[field].Type, i)
						exp := want[row+i][field]
						if !active {
							exp = nil
						}
						if !reflect.DeepEqual(got, exp) {
							t.Fatalf("batch size %d, row %d, field %d (batch active %v):\n got %#v\nwant %#v", bs, row+i, field, active, got, exp)
						}
					}
				}
				row += b.Len()
			}
			cr.Close()
			if row != len(want) || skipped == 0 {
				t.Fatalf("batch size %d: %d rows of %d, %d field batches skipped", bs, row, len(want), skipped)
			}
		}
	}
}

func mustWrite(t *testing.T, schema *types.StructType, rows []types.Struct, opts WriterOptions) []byte {
	t.Helper()
	data, _ := writeRows(t, schema, rows, opts)
	return data
}

func TestColumns_LegacyListAndMapLayouts(t *testing.T) {
	opt, req, rep := format.Optional, format.Required, format.Repeated
	longList := &types.ArrayType{ElementType: prim(types.TypeLong), ContainsNull: true}
	cases := []struct {
		name  string
		elems []format.SchemaElement
		cols  []rawColumn
		read  types.DataType
	}{
		{"two-level list of a repeated primitive", legacyListElems(), []rawColumn{{path: []string{"f", "array"}, phys: format.Int32, maxDef: 2, maxRep: 1,
			defs: []byte{2, 2, 1, 0, 2}, reps: []byte{0, 1, 0, 0, 0}, i32: []int32{1, -2, 3}}}, longList},
		{"parquet-mr array group is the element struct",
			[]format.SchemaElement{annotated(elem("f", opt, 1), deprecated.List), elem("array", rep, 1), leafElem("x", opt, format.Int32)},
			[]rawColumn{{path: []string{"f", "array", "x"}, phys: format.Int32, maxDef: 3, maxRep: 1, defs: []byte{3, 2, 0}, reps: []byte{0, 1, 0}, i32: []int32{1}}},
			&types.ArrayType{ElementType: structOf(field("x", prim(types.TypeLong), true))}},
		{"unannotated repeated primitive is a required list",
			[]format.SchemaElement{leafElem("r", rep, format.Int64)},
			[]rawColumn{{path: []string{"r"}, phys: format.Int64, maxDef: 1, maxRep: 1, defs: []byte{1, 1, 0}, reps: []byte{0, 1, 0}, i64: []int64{1, 2}}},
			&types.ArrayType{ElementType: prim(types.TypeLong)}},
		{"unannotated repeated group is a list of structs",
			[]format.SchemaElement{elem("items", rep, 1), leafElem("a", opt, format.Int32)},
			[]rawColumn{{path: []string{"items", "a"}, phys: format.Int32, maxDef: 2, maxRep: 1, defs: []byte{2, 1, 0}, reps: []byte{0, 1, 0}, i32: []int32{9}}},
			&types.ArrayType{ElementType: structOf(field("a", prim(types.TypeLong), true))}},
		{"MAP_KEY_VALUE annotated map",
			[]format.SchemaElement{annotated(elem("m", opt, 1), deprecated.MapKeyValue), elem("map", rep, 2), stringElem("key", req), leafElem("value", opt, format.Int32)},
			[]rawColumn{
				{path: []string{"m", "map", "key"}, phys: format.ByteArray, maxDef: 2, maxRep: 1, defs: []byte{2, 2, 1, 0}, reps: []byte{0, 1, 0, 0}, strs: []string{"k1", "k2"}},
				{path: []string{"m", "map", "value"}, phys: format.Int32, maxDef: 3, maxRep: 1, defs: []byte{3, 2, 1, 0}, reps: []byte{0, 1, 0, 0}, i32: []int32{10}},
			},
			&types.MapType{KeyType: prim(types.TypeString), ValueType: prim(types.TypeLong), ValueContainsNull: true}},
		{"key-only map reads null values",
			[]format.SchemaElement{annotated(elem("m", opt, 1), deprecated.Map), elem("key_value", rep, 1), stringElem("key", req)},
			[]rawColumn{{path: []string{"m", "key_value", "key"}, phys: format.ByteArray, maxDef: 2, maxRep: 1, defs: []byte{2, 2, 0, 1}, reps: []byte{0, 1, 0, 0}, strs: []string{"a", "b"}}},
			&types.MapType{KeyType: prim(types.TypeString), ValueType: prim(types.TypeString), ValueContainsNull: true}},
		{"unsigned 32-bit integers widen without sign",
			[]format.SchemaElement{annotated(leafElem("u", opt, format.Int32), deprecated.Uint32)},
			[]rawColumn{{path: []string{"u"}, phys: format.Int32, maxDef: 1, defs: []byte{1, 0, 1}, i32: []int32{-1, 7}}},
			prim(types.TypeLong)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := openBytes(t, writeRaw(t, tc.elems, tc.cols))
			schema := structOf(field(tc.elems[0].Name, tc.read, true))
			assertColumnsMatchRows(t, f, schema, 1, 2, 100)
		})
	}
}

func TestColumns_RefusesWhatItCannotDecode(t *testing.T) {
	nested := &types.ArrayType{ElementType: &types.ArrayType{ElementType: prim(types.TypeLong)}}
	schema := structOf(
		field("d", types.Decimal(10, 2), true),
		field("i", prim(types.TypeInteger), true),
		field("nested", nested, true),
		field("m", &types.MapType{KeyType: prim(types.TypeString), ValueType: nested}, true),
	)
	data, _ := writeRows(t, schema, []types.Struct{{nil, int32(1), nil, nil}}, WriterOptions{})
	f := openBytes(t, data)
	for _, sf := range schema.Fields {
		_, err := f.Columns(context.Background(), structOf(sf), ColumnOptions{})
		if sf.Name == "i" {
			if err != nil {
				t.Errorf("an integer column: %v", err)
			}
			continue
		}
		if !errors.Is(err, ErrColumnsUnsupported) {
			t.Errorf("%s: err = %v, want ErrColumnsUnsupported", sf.Name, err)
		}
	}
	// what it refuses, Rows reads
	readAll(t, f, schema, ReadOptions{})
}

func TestColumns_ReportsColumnsThatDisagreeWithTheFooter(t *testing.T) {
	schema := sparseStructsSchema()
	data, _ := writeRows(t, schema, sparseStructsRows(300), WriterOptions{})
	read := widenedRead(schema).(*types.StructType)
	for _, rows := range []int64{299, 301} {
		f := openBytes(t, data)
		f.metadata().RowGroups[0].NumRows = rows // as if the footer disagreed with the pages
		if _, err := columnsAsRows(t, f, read, ColumnOptions{BatchSize: 100}); err == nil || !strings.Contains(err.Error(), "corrupt") {
			t.Fatalf("footer says %d rows, columns hold 300: err = %v", rows, err)
		}
	}
}

func TestColumnAllNull_FollowsChunkStatistics(t *testing.T) {
	schema := sparseStructsSchema()
	rows := sparseStructsRows(2000)
	for i := 1000; i < 2000; i++ {
		rows[i] = types.Struct{rows[i][0], nil} // no protocol in the second row group
	}
	rows[500] = types.Struct{nil, types.Struct{int32(1), nil}}
	data, _ := writeRows(t, schema, rows, WriterOptions{RowGroupRows: 1000})
	f := openBytes(t, data)
	if f.ColumnAllNull(0, "protocol", "minReaderVersion") || !f.ColumnAllNull(1, "protocol", "minReaderVersion") {
		t.Fatal("protocol.minReaderVersion: want some values in row group 0, none in row group 1")
	}
	if f.ColumnAllNull(1, "add", "path") || f.ColumnAllNull(1, "nope") || f.ColumnAllNull(1, "add", "partitionValues", "key_value", "key") {
		t.Fatal("ColumnAllNull is true for a column with values, an absent column or a repeated one")
	}
}
