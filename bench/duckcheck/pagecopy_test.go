package duckcheck

import (
	"bytes"
	"context"
	"fmt"
	"math/rand/v2"
	"sort"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/bench/internal/ducktest"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// TestDelete_CopyOnWritePagesReadBackIdenticallyInDuckDB rewrites files of every Delta type (nulls,
// nesting, several row groups and pages, dictionary and PLAIN) as a copy-on-write delete does —
// parquetio.Rewrite with a row filter and CopyPages, so that pages without a deleted row are copied
// as stored and the others re-encoded — and checks that DuckDB reads exactly the surviving rows.
func TestDelete_CopyOnWritePagesReadBackIdenticallyInDuckDB(t *testing.T) {
	db := ducktest.Open(t)
	schema := allTypesSchema()
	const n = 5000
	distinct := generateRows(schema, n, 23)
	few := generateRows(schema, 40, 29)
	var repeated []types.Struct
	for i := range n {
		repeated = append(repeated, few[i%len(few)])
	}
	for _, data := range []struct {
		name string
		rows []types.Struct
	}{{"distinct values", distinct}, {"repeated values (dictionaries)", repeated}} {
		rows := data.rows
		var buf memWriter
		w, err := parquetio.NewWriter(&buf, schema, parquetio.WriterOptions{Codec: "zstd", PageBytes: 2 << 10, RowGroupRows: 1500})
		if err != nil {
			t.Fatal(err)
		}
		for i := 0; i < n; i += 500 { // batches of 500 rows make pages of at most 500 rows
			if err := w.Write(rows[i:min(n, i+500)]); err != nil {
				t.Fatal(err)
			}
		}
		if _, err := w.Close(); err != nil {
			t.Fatal(err)
		}
		written := append([]byte(nil), buf.Bytes()...)
		r := rand.New(rand.NewPCG(5, 5))
		run := roaring64.New()
		run.AddRange(1200, 2100) // across a row group boundary, whole pages and parts of pages
		scatter := roaring64.New()
		for range 40 {
			scatter.Add(r.Uint64N(n))
		}
		edges := roaring64.BitmapOf(0, 499, 500, 1499, 1500, 2999, 3000, n-1)
		for _, f := range []struct {
			name string
			dv   *roaring64.Bitmap
		}{{"none", nil}, {"one row", roaring64.BitmapOf(2222)}, {"a run", run}, {"scattered rows", scatter}, {"page and row group edges", edges}} {
			t.Run(data.name+", "+f.name, func(t *testing.T) {
				var want []string
				for i, row := range rows {
					if f.dv == nil || !f.dv.Contains(uint64(i)) {
						want = append(want, canonRow(row, schema))
					}
				}
				sort.Strings(want)
				var out memWriter
				res, err := parquetio.Rewrite(context.Background(), []parquetio.RewriteInput{{File: bytesFile{bytes.NewReader(written)}, Deleted: f.dv}},
					func(int) (storageWriter, error) { return &out, nil },
					parquetio.RewriteOptions{Schema: schema, CopyPages: true, Writer: parquetio.WriterOptions{Codec: "zstd"}})
				if err != nil {
					t.Fatal(err)
				}
				if res.Rows != int64(len(want)) {
					t.Fatalf("rewrite kept %d rows, want %d", res.Rows, len(want))
				}
				got, err := duckRows(db, writeTemp(t, out.Bytes()))
				if err != nil {
					t.Fatalf("DuckDB cannot read the rewritten file: %v", err)
				}
				assertSameRows(t, want, got)
				if ours := ourRows(t, bytesFile{bytes.NewReader(out.Bytes())}); fmt.Sprint(ours) != fmt.Sprint(want) {
					t.Fatal("parquetio reads other rows than the survivors")
				}
			})
		}
	}
}
