package ingest

import (
	"bytes"
	"context"
	"fmt"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// parquetSource renders rows of schema as a Parquet file.
func parquetSource(t *testing.T, schema *types.StructType, rows []types.Struct) string {
	t.Helper()
	var b bytes.Buffer
	w, err := parquetio.NewWriter(&b, schema, parquetio.WriterOptions{Codec: "snappy"})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

// Parquet sources whose columns fit the table are written by the column copy, the others (an extra
// column dropped under schemaEvolution none, a partitioned table) by the row path; either way every
// row lands once, with statistics.
func TestRun_ParquetSourcesThatFitAreCopiedTheRestReadAsRows(t *testing.T) {
	ts := &types.StructField{Name: "ts", Type: types.Primitive(types.TypeTimestamp), Nullable: true}
	s := &types.StructField{Name: "s", Type: types.Primitive(types.TypeString), Nullable: true}
	tableSchema := &types.StructType{Fields: []*types.StructField{longCol("id"), s, ts}}
	narrow := &types.StructType{Fields: []*types.StructField{{Name: "id", Type: types.Primitive(types.TypeInteger)}, ts, s}}
	extra := &types.StructType{Fields: []*types.StructField{longCol("id"), s, ts, {Name: "x", Type: types.Primitive(types.TypeLong), Nullable: true}}}
	rowsOf := func(schema *types.StructType, first, n int) []types.Struct {
		var out []types.Struct
		for i := first; i < first+n; i++ {
			r := make(types.Struct, len(schema.Fields))
			for j, f := range schema.Fields {
				switch f.Name {
				case "id":
					if f.Type.(*types.PrimitiveType).Name == types.TypeInteger {
						r[j] = int32(i)
					} else {
						r[j] = int64(i)
					}
				case "s":
					if i%5 != 0 {
						r[j] = fmt.Sprintf("v%d", i%17)
					}
				case "ts":
					r[j] = types.Timestamp(int64(i) * 1_000_000)
				case "x":
					r[j] = int64(-i)
				}
			}
			out = append(out, r)
		}
		return out
	}
	for _, tc := range []struct {
		name        string
		partitioned bool
		optimized   bool
	}{{"optimized", false, true}, {"plain", false, false}, {"partitioned", true, true}} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			var parts []string
			if tc.partitioned {
				parts = []string{"s"}
			}
			if _, err := fx.tbl.Create(context.Background(), delta.CreateOptions{Schema: tableSchema, PartitionColumns: parts}); err != nil {
				t.Fatal(err)
			}
			fx.put("a.parquet", parquetSource(t, tableSchema, rowsOf(tableSchema, 0, 3000)))
			fx.put("b.parquet", parquetSource(t, narrow, rowsOf(narrow, 3000, 2000))) // int → long: still a copy
			fx.put("c.parquet", parquetSource(t, extra, rowsOf(extra, 5000, 1000)))   // x is dropped: rows
			fx.put("d.parquet", parquetSource(t, tableSchema, rowsOf(tableSchema, 6000, 500)))
			snap := fx.snapshot()
			srcStore, err := storage.NewLocal(fx.src)
			if err != nil {
				t.Fatal(err)
			}
			var fits []string
			for _, name := range []string{"a", "b", "c", "d"} {
				ra, err := srcStore.Open(context.Background(), name+".parquet")
				if err != nil {
					t.Fatal(err)
				}
				pf, err := parquetio.Open(context.Background(), ra)
				if err != nil {
					t.Fatal(err)
				}
				if table.CopyFits(snap, pf) {
					fits = append(fits, name)
				}
				ra.Close()
			}
			want := []string{"a", "b", "d"}
			if tc.partitioned {
				want = nil
			}
			if !slices.Equal(fits, want) {
				t.Fatalf("files the copy takes: %v, want %v", fits, want)
			}
			o := fx.options(format.Parquet, nil, format.None)
			o.AvailableNow = true
			o.OptimizeWrite = &tc.optimized
			rep := fx.run(o)
			if len(rep.Batches) != 1 || rep.Batches[0].Rows != 6500 {
				t.Fatalf("batches %+v, want one of 6500 rows", rep.Batches)
			}
			got := fx.rows("id", "s", "ts")
			if len(got) != 6500 {
				t.Fatalf("%d rows in the table, want 6500", len(got))
			}
			seen := map[string]bool{}
			for _, r := range got {
				if seen[r] {
					t.Fatalf("row %q twice", r)
				}
				seen[r] = true
			}
			for i := range 6500 {
				r := rowsOf(tableSchema, i, 1)[0]
				if w := fmt.Sprintf("id=%d s=%s ts=%s", i, render(r[1]), render(r[2])); !seen[w] {
					t.Fatalf("row %q is missing", w)
				}
			}
			var total int64
			for _, f := range fx.snapshot().Files() {
				n, ok := delta.NumRecords(f.Stats)
				if !ok {
					t.Fatalf("%s: no numRecords in %q", f.Path, f.Stats)
				}
				total += n
			}
			if total != 6500 {
				t.Fatalf("numRecords add up to %d, want 6500", total)
			}
			if !tc.optimized && len(fx.snapshot().Files()) < 4 {
				t.Fatalf("%d files from 4 sources without optimized writes, want one per source at least", len(fx.snapshot().Files()))
			}
		})
	}
}
