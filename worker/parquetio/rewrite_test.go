package parquetio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// memSink collects rewrite outputs in memory.
type memSink struct{ outs []*memWriter }

func (s *memSink) create(i int) (storage.Writer, error) {
	if i != len(s.outs) {
		return nil, fmt.Errorf("create(%d) after %d outputs", i, len(s.outs))
	}
	w := &memWriter{}
	s.outs = append(s.outs, w)
	return w, nil
}

// readOutputs reads every completed output in order.
func (s *memSink) readOutputs(t *testing.T, schema *types.StructType) []types.Struct {
	t.Helper()
	var rows []types.Struct
	for i, w := range s.outs {
		if !w.closed {
			t.Fatalf("output %d was not closed", i)
		}
		rows = append(rows, readAll(t, openBytes(t, w.Bytes()), schema, ReadOptions{})...)
	}
	return rows
}

type rewriteCase struct {
	rows    []types.Struct
	data    []byte
	deleted *roaring64.Bitmap
}

// makeInputs writes n files of the schema with varied writer settings and deletion vectors.
func makeInputs(t *testing.T, schema *types.StructType, n, rowsPer int, seed uint64) []rewriteCase {
	settings := []WriterOptions{
		{Codec: "snappy"},
		{Codec: "gzip", DictionaryBytes: -1, PageBytes: 500},
		{Codec: "zstd", RowGroupRows: 97},
		{Codec: "uncompressed", PageBytes: 100, RowGroupRows: 50},
	}
	var cases []rewriteCase
	for i := range n {
		g := newValueGen(seed+uint64(i), 0.15)
		if i%2 == 0 {
			g.card = 9
		}
		var rows []types.Struct
		for range rowsPer {
			rows = append(rows, g.row(schema))
		}
		data, _ := writeRows(t, schema, rows, settings[i%len(settings)])
		var dv *roaring64.Bitmap
		switch i % 3 {
		case 1:
			dv = roaring64.BitmapOf(0, 3, uint64(rowsPer-1))
		case 2:
			dv = roaring64.New()
			dv.AddRange(10, uint64(rowsPer/2))
		}
		cases = append(cases, rewriteCase{rows: rows, data: data, deleted: dv})
	}
	return cases
}

func liveRows(cases []rewriteCase) []types.Struct {
	var out []types.Struct
	for _, c := range cases {
		for i, r := range c.rows {
			if c.deleted == nil || !c.deleted.Contains(uint64(i)) {
				out = append(out, r)
			}
		}
	}
	return out
}

func rewriteInputs(cases []rewriteCase) []RewriteInput {
	var in []RewriteInput
	for _, c := range cases {
		in = append(in, RewriteInput{File: memReader(c.data), Deleted: c.deleted})
	}
	return in
}

func TestRewrite_PreservesLiveRowsInOrderWithExactStatistics(t *testing.T) {
	schema := allTypesSchema()
	cases := makeInputs(t, schema, 7, 400, 1)
	want := liveRows(cases)
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallelism %d", par), func(t *testing.T) {
			var sink memSink
			res, err := Rewrite(context.Background(), rewriteInputs(cases), sink.create, RewriteOptions{
				Schema: schema, Parallelism: par, Writer: WriterOptions{RowGroupBytes: 40 << 10, PageBytes: 4096},
			})
			if err != nil {
				t.Fatal(err)
			}
			if res.GeneralInputs != 0 {
				t.Fatalf("%d inputs took the logical path; files written in the output layout must be copied by column", res.GeneralInputs)
			}
			var deleted int64
			for _, c := range cases {
				deleted += int64(len(c.rows))
			}
			deleted -= int64(len(want))
			if res.Deleted != deleted {
				t.Fatalf("Deleted = %d, want %d", res.Deleted, deleted)
			}
			if res.Rows != int64(len(want)) || len(res.Files) != 1 || res.Files[0].NumRows != res.Rows {
				t.Fatalf("result %+v, want %d rows in one file", res, len(want))
			}
			got := sink.readOutputs(t, schema)
			assertRowsEqual(t, want, got)
			assertStats(t, schema, want, res.Files[0])
			if f := openBytes(t, sink.outs[0].Bytes()); f.NumRowGroups() < 2 {
				t.Fatalf("want several row groups at RowGroupBytes 40 KiB, got %d", f.NumRowGroups())
			}
		})
	}
}

func TestRewrite_OutputDoesNotDependOnParallelism(t *testing.T) {
	schema := allTypesSchema()
	cases := makeInputs(t, schema, 4, 300, 7)
	var outs [][]byte
	for _, par := range []int{1, 2, 5} {
		var sink memSink
		if _, err := Rewrite(context.Background(), rewriteInputs(cases), sink.create, RewriteOptions{Schema: schema, Parallelism: par, Writer: WriterOptions{RowGroupBytes: 30 << 10}}); err != nil {
			t.Fatal(err)
		}
		outs = append(outs, sink.outs[0].Bytes())
	}
	for i := 1; i < len(outs); i++ {
		if !bytes.Equal(outs[0], outs[i]) {
			t.Fatalf("output with parallelism run %d differs from the first", i)
		}
	}
}

func TestRewrite_RollsOverAtTargetFileBytes(t *testing.T) {
	schema := structOf(field("id", prim(types.TypeLong), false), field("s", prim(types.TypeString), true))
	cases := makeInputs(t, schema, 5, 2000, 3)
	want := liveRows(cases)
	opts := RewriteOptions{Schema: schema, Writer: WriterOptions{RowGroupBytes: 8 << 10}}
	var whole memSink
	if _, err := Rewrite(context.Background(), rewriteInputs(cases), whole.create, opts); err != nil {
		t.Fatal(err)
	}
	target := int64(whole.outs[0].Len() / 4)
	opts.TargetFileBytes = target
	var sink memSink
	res, err := Rewrite(context.Background(), rewriteInputs(cases), sink.create, opts)
	if err != nil {
		t.Fatal(err)
	}
	if len(res.Files) < 3 {
		t.Fatalf("want at least 3 outputs of %d bytes from %d bytes, got %d", target, whole.outs[0].Len(), len(res.Files))
	}
	var total int64
	for i, f := range res.Files {
		total += f.NumRows
		if int64(sink.outs[i].Len()) != f.Bytes {
			t.Fatalf("output %d: result says %d bytes, file has %d", i, f.Bytes, sink.outs[i].Len())
		}
		if i < len(res.Files)-1 && f.Bytes < target {
			t.Fatalf("output %d closed early at %d bytes", i, f.Bytes)
		}
	}
	if total != int64(len(want)) {
		t.Fatalf("outputs hold %d rows, want %d", total, len(want))
	}
	assertRowsEqual(t, want, sink.readOutputs(t, schema))
}

func TestRewrite_EvolvesOlderInputsToTheOutputSchema(t *testing.T) {
	old := structOf(field("id", prim(types.TypeInteger), false), field("f", prim(types.TypeFloat), true),
		field("s", structOf(field("a", prim(types.TypeShort), false)), true), field("d", prim(types.TypeDate), true))
	current := structOf(field("id", prim(types.TypeLong), true), field("f", prim(types.TypeDouble), true),
		field("s", structOf(field("a", prim(types.TypeInteger), true)), true), field("d", prim(types.TypeTimestampNTZ), true),
		field("added", &types.ArrayType{ElementType: prim(types.TypeString), ContainsNull: true}, true))
	oldRows := []types.Struct{{int32(1), float32(0.5), types.Struct{int16(-2)}, types.Date(3)}, {int32(2), nil, nil, nil}}
	oldData, _ := writeRows(t, old, oldRows, WriterOptions{Codec: "snappy"})
	newRows := []types.Struct{{int64(3), 1.25, types.Struct{nil}, types.TimestampNTZ(5), types.Array{"x", nil}}}
	newData, _ := writeRows(t, current, newRows, WriterOptions{})
	var sink memSink
	res, err := Rewrite(context.Background(), []RewriteInput{{File: memReader(oldData)}, {File: memReader(newData)}}, sink.create, RewriteOptions{Schema: current})
	if err != nil {
		t.Fatal(err)
	}
	if res.GeneralInputs != 0 {
		t.Fatalf("widening and added columns should be copied by column, %d inputs took the logical path", res.GeneralInputs)
	}
	want := []types.Struct{
		{int64(1), 0.5, types.Struct{int32(-2)}, types.TimestampNTZ(3 * microsPerDay), nil},
		{int64(2), nil, nil, nil, nil},
		newRows[0],
	}
	assertRowsEqual(t, want, sink.readOutputs(t, current))
}

func TestRewrite_TakesTheLogicalPathForLegacyLayouts(t *testing.T) {
	legacy := writeRaw(t, legacyListElems(), []rawColumn{{path: []string{"f", "array"}, phys: format.Int32, maxDef: 2, maxRep: 1,
		defs: []byte{2, 2, 1, 0, 2}, reps: []byte{0, 1, 0, 0, 0}, i32: []int32{1, 2, 3}}})
	schema := structOf(field("f", &types.ArrayType{ElementType: prim(types.TypeInteger), ContainsNull: true}, true))
	modern, _ := writeRows(t, schema, []types.Struct{{types.Array{int32(9)}}}, WriterOptions{})
	var sink memSink
	res, err := Rewrite(context.Background(), []RewriteInput{{File: memReader(legacy), Deleted: roaring64.BitmapOf(2)}, {File: memReader(modern)}}, sink.create, RewriteOptions{Schema: schema})
	if err != nil {
		t.Fatal(err)
	}
	if res.GeneralInputs != 1 {
		t.Fatalf("GeneralInputs = %d, want 1", res.GeneralInputs)
	}
	want := []types.Struct{{types.Array{int32(1), int32(2)}}, {types.Array{}}, {types.Array{int32(3)}}, {types.Array{int32(9)}}}
	assertRowsEqual(t, want, sink.readOutputs(t, schema))
}

func TestRewrite_StopsWhenCancelledMidwayAndAbortsTheOutput(t *testing.T) {
	schema := structOf(field("id", prim(types.TypeLong), false), field("s", prim(types.TypeString), true))
	cases := makeInputs(t, schema, 4, 3000, 5)
	ctx, cancel := context.WithCancel(context.Background())
	defer cancel()
	var sink memSink
	create := func(i int) (storage.Writer, error) {
		cancel() // the first output exists, then the caller gives up
		return sink.create(i)
	}
	_, err := Rewrite(ctx, rewriteInputs(cases), create, RewriteOptions{Schema: schema, Writer: WriterOptions{RowGroupBytes: 4 << 10}})
	if !errors.Is(err, context.Canceled) {
		t.Fatalf("want context.Canceled, got %v", err)
	}
	if len(sink.outs) != 1 || !sink.outs[0].aborted || sink.outs[0].closed {
		t.Fatalf("the output in progress must be aborted, not published: %+v", sink.outs)
	}
}

func TestRewrite_FailsCleanly(t *testing.T) {
	schema := structOf(field("id", prim(types.TypeLong), false))
	data, _ := writeRows(t, schema, []types.Struct{{int64(1)}}, WriterOptions{})
	cases := []struct {
		name   string
		ctx    func() context.Context
		schema *types.StructType
		create func(int) (storage.Writer, error)
	}{
		{"cancelled context", func() context.Context { c, cancel := context.WithCancel(context.Background()); cancel(); return c }, schema, nil},
		{"required column missing from an input", context.Background, structOf(field("other", prim(types.TypeLong), false)), nil},
		{"output cannot be created", context.Background, schema, func(int) (storage.Writer, error) { return nil, errors.New("disk full") }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sink memSink
			create := tc.create
			if create == nil {
				create = sink.create
			}
			if _, err := Rewrite(tc.ctx(), []RewriteInput{{File: memReader(data)}}, create, RewriteOptions{Schema: tc.schema}); err == nil {
				t.Fatal("Rewrite succeeded")
			}
			for i, w := range sink.outs {
				if w.closed && !w.aborted {
					t.Fatalf("output %d was published despite the error", i)
				}
			}
		})
	}
}
