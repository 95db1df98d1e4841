package parquetio

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// rtOutSchema is a data-file schema with the two materialized row-tracking columns at the end.
func rtOutSchema() *types.StructType {
	return structOf(field("id", prim(types.TypeLong), false), field("s", prim(types.TypeString), true),
		field("st", structOf(field("a", prim(types.TypeInteger), true), field("b", prim(types.TypeString), true)), true),
		field("_rid", prim(types.TypeLong), true), field("_rver", prim(types.TypeLong), true))
}

var rtColumns = &RowTrackingColumns{RowID: "_rid", RowCommitVersion: "_rver"}

// rtInput is one input file: how it is stored, and what each of its physical rows must read as.
type rtInput struct {
	name string
	// materialized stores the two columns, with nulls where a row has no materialized value;
	// narrowStruct drops st.b, which sends the file down the logical path.
	materialized, narrowStruct bool
	writer                     WriterOptions
	deleted                    *roaring64.Bitmap
	base                       RowTrackingBase
}

func ptr64(v int64) *int64 { return &v }

// rtFile writes input k with n rows and returns it with the rows the rewrite must produce from it:
// the live rows, materialized values kept, the others computed from baseRowId + physical index.
func rtFile(t *testing.T, k int, in rtInput, n int) (RewriteInput, []types.Struct) {
	t.Helper()
	out := rtOutSchema()
	stored := structOf(out.Fields[0], out.Fields[1], out.Fields[2])
	if in.narrowStruct {
		stored.Fields[2] = field("st", structOf(field("a", prim(types.TypeInteger), true)), true)
	}
	if in.materialized {
		stored.Fields = append(stored.Fields, out.Fields[3], out.Fields[4])
	}
	var rows, want []types.Struct
	for r := range n {
		id := int64(k*100_000 + r)
		var s types.Value = fmt.Sprintf("s%d", r%7) // few distinct values: dictionary pages
		if r%11 == 0 {
			s = nil
		}
		st := types.Struct{int32(r), fmt.Sprint("b", r)}
		row := types.Struct{id, s, st}
		if in.narrowStruct {
			row[2] = types.Struct{int32(r)}
			st = types.Struct{int32(r), nil}
		}
		var rid, rver types.Value
		if in.materialized {
			// A row id kept from an earlier rewrite is unrelated to this file's baseRowId.
			if r%3 != 0 {
				rid = int64(7_000_000 + 3*r)
			}
			if r%4 != 1 {
				rver = int64(r % 5)
			}
			row = append(row, rid, rver)
		}
		rows = append(rows, row)
		if in.deleted != nil && in.deleted.Contains(uint64(r)) {
			continue
		}
		if rid == nil {
			rid = *in.base.BaseRowID + int64(r)
		}
		if rver == nil {
			rver = *in.base.DefaultRowCommitVersion
		}
		want = append(want, types.Struct{id, s, st, rid, rver})
	}
	data, _ := writeRows(t, stored, rows, in.writer)
	return RewriteInput{File: memReader(data), Deleted: in.deleted, RowTracking: in.base}, want
}

func rtBase(id, ver int64) RowTrackingBase {
	return RowTrackingBase{BaseRowID: ptr64(id), DefaultRowCommitVersion: ptr64(ver)}
}

// rtFiles writes the inputs with n rows each and returns them with every live row as a rewrite
// must produce it, in input order.
func rtFiles(t *testing.T, inputs []rtInput, n int) ([]RewriteInput, []types.Struct) {
	t.Helper()
	var ins []RewriteInput
	var want []types.Struct
	for k, in := range inputs {
		ri, w := rtFile(t, k, in, n)
		ins = append(ins, ri)
		want = append(want, w...)
	}
	return ins, want
}

func TestRewrite_PreservesRowTrackingOnTheColumnAndLogicalPaths(t *testing.T) {
	wholeGroup := roaring64.New()
	wholeGroup.AddRange(50, 100) // all of the second row group of 50
	wholeGroup.Add(0)
	wholeGroup.Add(599)
	inputs := []rtInput{
		{name: "columns not stored, several row groups, a whole group deleted", writer: WriterOptions{RowGroupRows: 50}, deleted: wholeGroup, base: rtBase(100, 3)},
		{name: "stored with nulls, dictionary pages", materialized: true, writer: WriterOptions{RowGroupRows: 200}, deleted: roaring64.BitmapOf(1, 2, 3, 300), base: rtBase(10_000, 4)},
		{name: "stored with nulls, plain small pages", materialized: true, writer: WriterOptions{DictionaryBytes: -1, PageBytes: 200, RowGroupRows: 64, Codec: "zstd"}, base: rtBase(20_000, 5)},
		{name: "logical path, columns stored", materialized: true, narrowStruct: true, writer: WriterOptions{RowGroupRows: 97}, deleted: roaring64.BitmapOf(0, 5, 96, 97), base: rtBase(30_000, 6)},
		{name: "logical path, columns not stored", narrowStruct: true, deleted: roaring64.BitmapOf(10), base: rtBase(40_000, 7)},
		{name: "column path after the logical path", writer: WriterOptions{RowGroupRows: 128}, deleted: roaring64.BitmapOf(127, 128), base: rtBase(50_000, 8)},
	}
	ins, want := rtFiles(t, inputs, 600)
	for _, par := range []int{1, 3} {
		t.Run(fmt.Sprintf("parallelism %d", par), func(t *testing.T) {
			var sink memSink
			// Small output row groups cut the inputs' row groups into slices that start mid-group.
			res, err := Rewrite(context.Background(), ins, sink.create, RewriteOptions{Schema: rtOutSchema(), Parallelism: par,
				Writer: WriterOptions{RowGroupBytes: 6 << 10, PageBytes: 1024}, RowTracking: rtColumns})
			if err != nil {
				t.Fatal(err)
			}
			if res.GeneralInputs != 2 {
				t.Fatalf("GeneralInputs = %d, want the 2 narrow-struct files on the logical path", res.GeneralInputs)
			}
			got := sink.readOutputs(t, rtOutSchema())
			for i := range min(len(got), len(want)) {
				if !valuesEqual(want[i], got[i]) {
					t.Fatalf("row %d: got %v, want %v", i, got[i], want[i])
				}
			}
			assertRowsEqual(t, want, got)
			for _, c := range res.Files[0].Columns {
				if n := c.Path[0]; (n == "_rid" || n == "_rver") && c.NullCount != 0 {
					t.Fatalf("column %s has %d nulls after the rewrite", n, c.NullCount)
				}
			}
		})
	}
}

func TestRewrite_RowTrackingKeepsMaterializedValuesWithoutABase(t *testing.T) {
	schema := rtOutSchema()
	rows := []types.Struct{
		{int64(1), "a", nil, int64(42), int64(9)},
		{int64(2), "b", nil, int64(43), int64(9)},
	}
	data, _ := writeRows(t, schema, rows, WriterOptions{})
	var sink memSink
	// A file whose rows all carry materialized values needs neither baseRowId nor a default version.
	if _, err := Rewrite(context.Background(), []RewriteInput{{File: memReader(data)}}, sink.create, RewriteOptions{Schema: schema, RowTracking: rtColumns}); err != nil {
		t.Fatal(err)
	}
	assertRowsEqual(t, rows, sink.readOutputs(t, schema))
}

func TestRewrite_RowTrackingRefusesWhatItCannotPreserve(t *testing.T) {
	withNull, _ := writeRows(t, rtOutSchema(), []types.Struct{{int64(1), nil, nil, nil, int64(2)}}, WriterOptions{})
	plain, _ := writeRows(t, structOf(field("id", prim(types.TypeLong), false)), []types.Struct{{int64(1)}}, WriterOptions{})
	narrow := structOf(field("id", prim(types.TypeLong), false), field("st", structOf(field("a", prim(types.TypeInteger), true)), true))
	narrowData, _ := writeRows(t, narrow, []types.Struct{{int64(1), nil}}, WriterOptions{})
	withStruct := structOf(field("id", prim(types.TypeLong), false),
		field("st", structOf(field("a", prim(types.TypeInteger), true), field("b", prim(types.TypeString), true)), true),
		field("_rid", prim(types.TypeLong), true), field("_rver", prim(types.TypeLong), true))
	cases := []struct {
		name    string
		data    []byte
		schema  *types.StructType
		base    RowTrackingBase
		wantErr string
	}{
		{"null row id on the column path without baseRowId", withNull, rtOutSchema(), RowTrackingBase{DefaultRowCommitVersion: ptr64(1)}, "baseRowId"},
		{"missing column on the column path without a default version", plain, rtOutSchema(), RowTrackingBase{BaseRowID: ptr64(1)}, "defaultRowCommitVersion"},
		{"missing column on the logical path without baseRowId", narrowData, withStruct, RowTrackingBase{DefaultRowCommitVersion: ptr64(1)}, "baseRowId"},
		{"materialized column not in the schema", plain, structOf(field("id", prim(types.TypeLong), false)), RowTrackingBase{}, "not a top-level field"},
		{"materialized column not a long", plain, structOf(field("id", prim(types.TypeLong), false), field("_rid", prim(types.TypeInteger), true), field("_rver", prim(types.TypeLong), true)), RowTrackingBase{}, "not long"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			var sink memSink
			_, err := Rewrite(context.Background(), []RewriteInput{{File: memReader(tc.data), RowTracking: tc.base}}, sink.create, RewriteOptions{Schema: tc.schema, RowTracking: rtColumns})
			if err == nil || !strings.Contains(err.Error(), tc.wantErr) {
				t.Fatalf("error %v, want one mentioning %q", err, tc.wantErr)
			}
			for i, w := range sink.outs {
				if w.closed && !w.aborted {
					t.Fatalf("output %d was published despite the error", i)
				}
			}
		})
	}
}

func TestRowTrackingBase_UsesMaterializedValuesBeforeTheFilesBase(t *testing.T) {
	b := RowTrackingBase{BaseRowID: ptr64(1000), DefaultRowCommitVersion: ptr64(7)}
	cases := []struct {
		name          string
		base          RowTrackingBase
		index         int64
		id, version   types.Value
		wantID, wantV int64
		wantErr       bool
	}{
		{"null values come from the base", b, 5, nil, nil, 1005, 7, false},
		{"materialized values win", b, 5, int64(3), int64(2), 3, 2, false},
		{"narrow materialized values are widened", b, 5, int32(4), int16(1), 4, 1, false},
		{"no base is fine when values are materialized", RowTrackingBase{}, 5, int64(8), int64(1), 8, 1, false},
		{"no base for a null is an error", RowTrackingBase{}, 5, nil, int64(1), 0, 0, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := tc.base.RowID(tc.index, tc.id)
			if tc.wantErr {
				if err == nil {
					t.Fatalf("RowID = %d, want an error", id)
				}
				return
			}
			v, err2 := tc.base.RowCommitVersion(tc.version)
			if err != nil || err2 != nil || id != tc.wantID || v != tc.wantV {
				t.Fatalf("RowID, RowCommitVersion = %d, %d (%v, %v); want %d, %d", id, v, err, err2, tc.wantID, tc.wantV)
			}
		})
	}
}

func TestPermute_PreservesRowTrackingWhileRowsMove(t *testing.T) {
	wholeGroup := roaring64.New()
	wholeGroup.AddRange(50, 100)
	inputs := []rtInput{
		{name: "columns not stored, a whole group deleted", writer: WriterOptions{RowGroupRows: 50}, deleted: wholeGroup, base: rtBase(100, 3)},
		{name: "stored with nulls, dictionary pages", materialized: true, writer: WriterOptions{RowGroupRows: 200}, deleted: roaring64.BitmapOf(1, 2, 3, 300), base: rtBase(10_000, 4)},
		{name: "stored with nulls, plain small pages", materialized: true, writer: WriterOptions{DictionaryBytes: -1, PageBytes: 200, RowGroupRows: 64, Codec: "zstd"}, base: rtBase(20_000, 5)},
	}
	ins, live := rtFiles(t, inputs, 400)
	order := make([]uint32, len(live))
	for i := range order {
		order[i] = uint32(i)
	}
	rand.New(rand.NewPCG(7, 7)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	starts := []int{0, 500}
	for _, subset := range []bool{false, true} {
		t.Run(fmt.Sprintf("subset %v", subset), func(t *testing.T) {
			run, ord := Permute, order
			if subset {
				// The first output only, as one wave of PermuteSubset writes it.
				run, ord = PermuteSubset, order[:500]
			}
			var sink indexedSink
			res, err := run(context.Background(), ins, ord, starts[:len(starts)-btoi(subset)], sink.create, RewriteOptions{
				Schema: rtOutSchema(), Parallelism: 2, RowTracking: rtColumns, Writer: WriterOptions{RowGroupRows: 100, PageBytes: 1024},
			})
			if err != nil {
				t.Fatal(err)
			}
			for k := range res.Files {
				lo, hi := starts[k], len(ord)
				if k+1 < len(starts) && !subset {
					hi = starts[k+1]
				}
				var want []types.Struct
				for a := lo; a < hi; a += 100 {
					grp := slices.Clone(ord[a:min(hi, a+100)])
					slices.Sort(grp)
					for _, g := range grp {
						want = append(want, live[g])
					}
				}
				assertRowsEqual(t, want, readAll(t, openBytes(t, sink.outs[k].Bytes()), rtOutSchema(), ReadOptions{}))
			}
		})
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}
