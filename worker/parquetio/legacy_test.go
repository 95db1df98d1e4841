package parquetio

import (
	"testing"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Builders for hand-made Parquet schemas: the layouts old writers produced, which our writer never does.

func elem(name string, rep format.FieldRepetitionType, children int) format.SchemaElement {
	e := format.SchemaElement{Name: name, RepetitionType: thrift.New(rep)}
	if children > 0 {
		e.NumChildren = thrift.New(int32(children))
	}
	return e
}

func annotated(e format.SchemaElement, ct deprecated.ConvertedType) format.SchemaElement {
	e.ConvertedType = thrift.New(ct)
	return e
}

func leafElem(name string, rep format.FieldRepetitionType, phys format.Type) format.SchemaElement {
	e := elem(name, rep, 0)
	e.Type = thrift.New(phys)
	return e
}

func stringElem(name string, rep format.FieldRepetitionType) format.SchemaElement {
	return annotated(leafElem(name, rep, format.ByteArray), deprecated.UTF8)
}

// rawColumn is one leaf of a hand-made file: its levels and values.
type rawColumn struct {
	path       []string
	phys       format.Type
	maxDef     int
	maxRep     int
	defs, reps []byte
	i32        []int32
	i64        []int64
	strs       []string
}

// writeRaw writes one row group of hand-made columns with the package's encoders.
func writeRaw(t *testing.T, elems []format.SchemaElement, cols []rawColumn) []byte {
	t.Helper()
	var out []byte
	writeRawWith(t, elems, cols, WriterOptions{}, func(e *columnEncoder, c rawColumn) {
		b := columnBatch{n: max(len(c.defs), len(c.reps)), defs: c.defs, reps: c.reps}
		if b.n == 0 {
			b.n = len(c.i32) + len(c.i64) + len(c.strs)
		}
		b.i32, b.i64 = c.i32, c.i64
		for _, s := range c.strs {
			b.appendBytes([]byte(s))
		}
		if err := e.write(&b); err != nil {
			t.Fatal(err)
		}
	}, &out)
	return out
}

// writeRawWith writes one row group; feed hands each column's triplets to its encoder.
func writeRawWith(t *testing.T, elems []format.SchemaElement, cols []rawColumn, opts WriterOptions, feed func(*columnEncoder, rawColumn), data *[]byte) {
	t.Helper()
	root := format.SchemaElement{Name: "schema", NumChildren: thrift.New(int32(countTop(elems)))}
	out := &outputSchema{elements: append([]format.SchemaElement{root}, elems...)}
	cfg, err := opts.config(len(cols))
	if err != nil {
		t.Fatal(err)
	}
	var buf memWriter
	fw := newFileWriter(&buf, out, cfg.codecID)
	fw.beginRowGroup()
	for _, c := range cols {
		order := map[format.Type]orderKind{format.Int32: orderInt32, format.Int64: orderInt64, format.ByteArray: orderBytes}[c.phys]
		leaf := &leafDesc{path: c.path, phys: c.phys, maxDef: c.maxDef, maxRep: c.maxRep, order: order}
		out.leaves = append(out.leaves, leaf)
		e := newColumnEncoder(leaf, cfg)
		feed(e, c)
		chunk, err := e.finishChunk()
		if err != nil {
			t.Fatal(err)
		}
		if err := fw.writeChunk(chunk); err != nil {
			t.Fatal(err)
		}
	}
	fw.endRowGroup()
	if _, err := fw.close(); err != nil {
		t.Fatal(err)
	}
	*data = buf.Bytes()
}

// countTop counts the top-level elements of a depth-first element list.
func countTop(elems []format.SchemaElement) int {
	n, pos := 0, 0
	var skip func()
	skip = func() {
		e := elems[pos]
		pos++
		if e.NumChildren.Valid {
			for range int(e.NumChildren.V) {
				skip()
			}
		}
	}
	for pos < len(elems) {
		skip()
		n++
	}
	return n
}

// legacyListElems is "optional group f (LIST) { repeated int32 array; }".
func legacyListElems() []format.SchemaElement {
	return []format.SchemaElement{annotated(elem("f", format.Optional, 1), deprecated.List), leafElem("array", format.Repeated, format.Int32)}
}

func TestRows_ReadsLegacyListAndMapLayouts(t *testing.T) {
	opt, req, rep := format.Optional, format.Required, format.Repeated
	intList := &types.ArrayType{ElementType: prim(types.TypeInteger), ContainsNull: true}
	cases := []struct {
		name  string
		elems []format.SchemaElement
		cols  []rawColumn
		read  types.DataType
		want  []types.Value
	}{
		{
			name:  "two-level list of a repeated primitive",
			elems: legacyListElems(),
			cols: []rawColumn{{path: []string{"f", "array"}, phys: format.Int32, maxDef: 2, maxRep: 1,
				defs: []byte{2, 2, 1, 0, 2}, reps: []byte{0, 1, 0, 0, 0}, i32: []int32{1, 2, 3}}},
			read: intList,
			want: []types.Value{types.Array{int32(1), int32(2)}, types.Array{}, nil, types.Array{int32(3)}},
		},
		{
			name:  "parquet-mr array group is the element struct",
			elems: []format.SchemaElement{annotated(elem("f", opt, 1), deprecated.List), elem("array", rep, 1), leafElem("x", opt, format.Int32)},
			cols: []rawColumn{{path: []string{"f", "array", "x"}, phys: format.Int32, maxDef: 3, maxRep: 1,
				defs: []byte{3, 2, 0}, reps: []byte{0, 1, 0}, i32: []int32{1}}},
			read: &types.ArrayType{ElementType: structOf(field("x", prim(types.TypeInteger), true)), ContainsNull: false},
			want: []types.Value{types.Array{types.Struct{int32(1)}, types.Struct{nil}}, nil},
		},
		{
			name:  "hive bag holds the element",
			elems: []format.SchemaElement{annotated(elem("f", opt, 1), deprecated.List), elem("bag", rep, 1), leafElem("array_element", opt, format.Int32)},
			cols: []rawColumn{{path: []string{"f", "bag", "array_element"}, phys: format.Int32, maxDef: 3, maxRep: 1,
				defs: []byte{3, 2, 1}, reps: []byte{0, 1, 0}, i32: []int32{5}}},
			read: intList,
			want: []types.Value{types.Array{int32(5), nil}, types.Array{}},
		},
		{
			name:  "tuple group is the element struct",
			elems: []format.SchemaElement{annotated(elem("f", opt, 1), deprecated.List), elem("f_tuple", rep, 1), stringElem("s", req)},
			cols: []rawColumn{{path: []string{"f", "f_tuple", "s"}, phys: format.ByteArray, maxDef: 2, maxRep: 1,
				defs: []byte{2, 2}, reps: []byte{0, 1}, strs: []string{"a", "b"}}},
			read: &types.ArrayType{ElementType: structOf(field("s", prim(types.TypeString), false))},
			want: []types.Value{types.Array{types.Struct{"a"}, types.Struct{"b"}}},
		},
		{
			name:  "unannotated repeated primitive is a required list",
			elems: []format.SchemaElement{leafElem("r", rep, format.Int64)},
			cols: []rawColumn{{path: []string{"r"}, phys: format.Int64, maxDef: 1, maxRep: 1,
				defs: []byte{1, 1, 0}, reps: []byte{0, 1, 0}, i64: []int64{1, 2}}},
			read: &types.ArrayType{ElementType: prim(types.TypeLong)},
			want: []types.Value{types.Array{int64(1), int64(2)}, types.Array{}},
		},
		{
			name:  "unannotated repeated group is a list of structs",
			elems: []format.SchemaElement{elem("items", rep, 1), leafElem("a", opt, format.Int32)},
			cols: []rawColumn{{path: []string{"items", "a"}, phys: format.Int32, maxDef: 2, maxRep: 1,
				defs: []byte{2, 1, 0}, reps: []byte{0, 1, 0}, i32: []int32{9}}},
			read: &types.ArrayType{ElementType: structOf(field("a", prim(types.TypeInteger), true))},
			want: []types.Value{types.Array{types.Struct{int32(9)}, types.Struct{nil}}, types.Array{}},
		},
		{
			name:  "MAP_KEY_VALUE annotated map",
			elems: []format.SchemaElement{annotated(elem("m", opt, 1), deprecated.MapKeyValue), elem("map", rep, 2), stringElem("key", req), leafElem("value", opt, format.Int32)},
			cols: []rawColumn{
				{path: []string{"m", "map", "key"}, phys: format.ByteArray, maxDef: 2, maxRep: 1, defs: []byte{2, 2, 1, 0}, reps: []byte{0, 1, 0, 0}, strs: []string{"k1", "k2"}},
				{path: []string{"m", "map", "value"}, phys: format.Int32, maxDef: 3, maxRep: 1, defs: []byte{3, 2, 1, 0}, reps: []byte{0, 1, 0, 0}, i32: []int32{10}},
			},
			read: &types.MapType{KeyType: prim(types.TypeString), ValueType: prim(types.TypeInteger), ValueContainsNull: true},
			want: []types.Value{types.Map{{Key: "k1", Value: int32(10)}, {Key: "k2", Value: nil}}, types.Map{}, nil},
		},
		{
			name:  "MAP with a MAP_KEY_VALUE repeated group",
			elems: []format.SchemaElement{annotated(elem("m", opt, 1), deprecated.Map), annotated(elem("key_value", rep, 2), deprecated.MapKeyValue), leafElem("key", req, format.Int32), stringElem("value", opt)},
			cols: []rawColumn{
				{path: []string{"m", "key_value", "key"}, phys: format.Int32, maxDef: 2, maxRep: 1, defs: []byte{2}, reps: []byte{0}, i32: []int32{1}},
				{path: []string{"m", "key_value", "value"}, phys: format.ByteArray, maxDef: 3, maxRep: 1, defs: []byte{3}, reps: []byte{0}, strs: []string{"v"}},
			},
			read: &types.MapType{KeyType: prim(types.TypeInteger), ValueType: prim(types.TypeString), ValueContainsNull: true},
			want: []types.Value{types.Map{{Key: int32(1), Value: "v"}}},
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := openBytes(t, writeRaw(t, tc.elems, tc.cols))
			var want []types.Struct
			for _, v := range tc.want {
				want = append(want, types.Struct{v})
			}
			schema := structOf(field(tc.elems[0].Name, tc.read, tc.elems[0].RepetitionType.V != format.Required))
			assertRowsEqual(t, want, readAll(t, f, schema, ReadOptions{}))
			derived, err := f.Schema()
			if err != nil {
				t.Fatal(err)
			}
			assertRowsEqual(t, want, readAll(t, f, derived, ReadOptions{}))
		})
	}
}
