package parquetio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// pageFirstRows lists the first row (physical, in the file) of every data page of the named top-level
// column, and the first row of every row group.
func pageFirstRows(t *testing.T, f *File, schema *types.StructType, column string) (pages, groups []int64) {
	t.Helper()
	leaf := (&planner{}).lookup(f.root, schema.Fields[schema.FieldIndex(column)])
	for rg := range f.NumRowGroups() {
		start := f.rowGroupStart[rg]
		groups = append(groups, start)
		cr, err := f.openChunk(rg, leaf, newReadBuffers(4096))
		if err != nil {
			t.Fatal(err)
		}
		row := start
		for {
			var h format.PageHeader
			if err := cr.readPage(&h); errors.Is(err, io.EOF) {
				break
			} else if err != nil {
				t.Fatal(err)
			}
			if h.Type == format.DataPage || h.Type == format.DataPageV2 {
				pages = append(pages, row)
				n := int64(pageValues(&h))
				cr.remaining -= n
				row += n
			}
		}
	}
	return pages, groups
}

// rowFilters are the deletion vectors a copy-on-write meets: none, one row, whole pages, every row, the
// first and last rows of pages and row groups, and random scatters.
func rowFilters(t *testing.T, f *File, schema *types.StructType, column string, seed uint64) map[string]*roaring64.Bitmap {
	n := uint64(f.NumRows())
	pages, groups := pageFirstRows(t, f, schema, column)
	if len(pages) < 6 || len(groups) < 3 {
		t.Fatalf("%d pages in %d row groups: the file must have several of both", len(pages), len(groups))
	}
	end := func(starts []int64, i int) uint64 {
		if i+1 < len(starts) {
			return uint64(starts[i+1])
		}
		return n
	}
	r := rand.New(rand.NewPCG(seed, 1))
	fs := map[string]*roaring64.Bitmap{"none": nil, "one row": roaring64.BitmapOf(n / 2)}
	whole := roaring64.New()
	whole.AddRange(uint64(pages[2]), end(pages, 3)) // pages 2 and 3 of the column
	fs["whole pages"] = whole
	all := roaring64.New()
	all.AddRange(0, n)
	fs["every row"] = all
	pageEdges, groupEdges := roaring64.New(), roaring64.New()
	for i, p := range pages {
		if i%2 == 0 {
			pageEdges.Add(uint64(p))
			pageEdges.Add(end(pages, i) - 1)
		}
	}
	for i, g := range groups {
		groupEdges.Add(uint64(g))
		groupEdges.Add(end(groups, i) - 1)
	}
	fs["first and last rows of pages"] = pageEdges
	fs["first and last rows of row groups"] = groupEdges
	group := roaring64.New()
	group.AddRange(uint64(groups[1]), end(groups, 1))
	fs["a whole row group"] = group
	run := roaring64.New()
	from := r.Uint64N(n / 2)
	run.AddRange(from, from+n/10)
	fs["a run of consecutive rows"] = run
	scatter := roaring64.New()
	for range n / 20 {
		scatter.Add(r.Uint64N(n))
	}
	fs["random rows"] = scatter
	return fs
}

func TestRewrite_CopyPagesGivesTheRowsAndStatisticsOfTheReencodingPath(t *testing.T) {
	schema := allTypesSchema()
	settings := []WriterOptions{
		{Codec: "zstd", PageBytes: 64, RowGroupRows: 2000},
		{Codec: "snappy", DictionaryBytes: -1, PageBytes: 300, RowGroupRows: 1700},
		{Codec: "uncompressed", PageBytes: 200, RowGroupRows: 2500},
	}
	for si, wo := range settings {
		g := newValueGen(uint64(40+si), 0.2)
		if si != 1 {
			g.card = 7 // dictionary pages
		}
		var rows []types.Struct
		for range 6000 {
			rows = append(rows, g.row(schema))
		}
		data, _ := writeRows(t, schema, rows, wo)
		in := openBytes(t, data)
		for name, dv := range rowFilters(t, in, schema, "long", uint64(si)) {
			t.Run(fmt.Sprintf("%s, %s", wo.Codec, name), func(t *testing.T) {
				want := liveRows([]rewriteCase{{rows: rows, deleted: dv}})
				var outs [2][]byte
				for k, copyPages := range []bool{false, true} {
					var sink memSink
					res, err := Rewrite(context.Background(), []RewriteInput{{File: memReader(data), Deleted: dv}}, sink.create, RewriteOptions{
						Schema: schema, CopyPages: copyPages, Writer: WriterOptions{Codec: wo.Codec, PageBytes: 4096},
					})
					if err != nil {
						t.Fatal(err)
					}
					if res.Rows != int64(len(want)) || res.Rows+res.Deleted != int64(len(rows)) {
						t.Fatalf("CopyPages %v: %d rows kept and %d deleted, want %d of %d", copyPages, res.Rows, res.Deleted, len(want), len(rows))
					}
					if len(want) == 0 {
						if len(sink.outs) != 0 {
							t.Fatalf("CopyPages %v: %d outputs for no rows", copyPages, len(sink.outs))
						}
						return
					}
					assertRowsEqual(t, want, sink.readOutputs(t, schema))
					assertStats(t, schema, want, res.Files[0])
					outs[k] = sink.outs[0].Bytes()
					assertPageIndex(t, outs[k])
				}
				assertRowGroupsKept(t, in, dv, openBytes(t, outs[1]))
			})
		}
	}
}

// assertRowGroupsKept checks that a page copy keeps the input's row groups (minus the rows deleted,
// minus those left empty) and copies the column chunks that lose no row byte for byte.
func assertRowGroupsKept(t *testing.T, in *File, dv *roaring64.Bitmap, out *File) {
	t.Helper()
	k, copied := 0, 0
	for rg := range in.NumRowGroups() {
		info := in.RowGroup(rg)
		live := info.NumRows - int64(len(deletedIn(dv, info.FirstRow, info.NumRows)))
		if live == 0 {
			continue
		}
		if k >= out.NumRowGroups() || out.RowGroup(k).NumRows != live {
			t.Fatalf("input row group %d keeps %d rows; output row group %d does not hold them", rg, live, k)
		}
		if live == info.NumRows {
			ic, oc := in.metadata().RowGroups[rg].Columns, out.metadata().RowGroups[k].Columns
			for j := range ic {
				im, om := &ic[j].MetaData, &oc[j].MetaData
				if om.Codec != im.Codec || om.NumValues != im.NumValues {
					t.Fatalf("row group %d column %v: codec or values changed", rg, im.PathInSchema)
				}
				if len(im.PathInSchema) == 1 && im.TotalCompressedSize == om.TotalCompressedSize {
					copied++
				}
			}
		}
		k++
	}
	if k != out.NumRowGroups() {
		t.Fatalf("output has %d row groups, %d expected", out.NumRowGroups(), k)
	}
	if dv == nil && copied == 0 {
		t.Fatal("no top-level column chunk was copied as stored")
	}
}

// assertPageIndex reads a file's page index with parquet-go and checks it against the chunks: page
// first rows ascending from 0 within the row group, and null counts adding up to the chunk's.
func assertPageIndex(t *testing.T, data []byte) {
	t.Helper()
	pf, err := parquet.OpenFile(bytes.NewReader(data), int64(len(data)))
	if err != nil {
		t.Fatal(err)
	}
	md := pf.Metadata()
	for g, rg := range md.RowGroups {
		for c, cc := range rg.Columns {
			oi := pf.OffsetIndexes()[g*len(rg.Columns)+c]
			if len(oi.PageLocations) == 0 || oi.PageLocations[0].FirstRowIndex != 0 {
				t.Fatalf("row group %d column %v: offset index %+v", g, cc.MetaData.PathInSchema, oi.PageLocations)
			}
			for i := 1; i < len(oi.PageLocations); i++ {
				p, q := oi.PageLocations[i-1], oi.PageLocations[i]
				if q.FirstRowIndex < p.FirstRowIndex || q.FirstRowIndex >= rg.NumRows || q.Offset != p.Offset+int64(p.CompressedPageSize) {
					t.Fatalf("row group %d column %v: pages %d and %d at %+v then %+v", g, cc.MetaData.PathInSchema, i-1, i, p, q)
				}
			}
			if ci := pf.ColumnIndexes(); len(ci) > 0 && ci[g*len(rg.Columns)+c].NullCounts != nil {
				var nulls int64
				for _, n := range ci[g*len(rg.Columns)+c].NullCounts {
					nulls += n
				}
				if nulls != cc.MetaData.Statistics.NullCount {
					t.Fatalf("row group %d column %v: column index counts %d nulls, the chunk %d", g, cc.MetaData.PathInSchema, nulls, cc.MetaData.Statistics.NullCount)
				}
			}
		}
	}
	n := 0
	r := parquet.NewReader(bytes.NewReader(data))
	for {
		row := make([]parquet.Row, 64)
		k, err := r.ReadRows(row)
		n += k
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("parquet-go reads the output: %v", err)
		}
	}
	if int64(n) != md.NumRows {
		t.Fatalf("parquet-go reads %d rows, the footer says %d", n, md.NumRows)
	}
}

func TestWriter_CutsDataPagesAtPageRows(t *testing.T) {
	schema := structOf(field("id", prim(types.TypeLong), false), field("s", prim(types.TypeString), true))
	g := newValueGen(3, 0.1)
	var rows []types.Struct
	for range 50_000 {
		rows = append(rows, g.row(schema))
	}
	for _, tc := range []struct {
		pageRows int
		want     []int64 // first rows of the pages of column id
	}{{0, []int64{0, 20_000, 40_000}}, {7_000, []int64{0, 7_000, 14_000, 21_000, 28_000, 35_000, 42_000, 49_000}}, {-1, []int64{0}}} {
		data, _ := writeRows(t, schema, rows, WriterOptions{PageRows: tc.pageRows})
		f := openBytes(t, data)
		pages, _ := pageFirstRows(t, f, schema, "id")
		if fmt.Sprint(pages) != fmt.Sprint(tc.want) {
			t.Fatalf("PageRows %d: pages start at rows %v, want %v", tc.pageRows, pages, tc.want)
		}
		assertRowsEqual(t, rows, readAll(t, f, schema, ReadOptions{}))
	}
}
