package parquetio

import (
	"context"
	"path/filepath"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// TestConformance_EveryFileReadsFullyWithItsOwnAndItsTableSchema reads every Parquet file of the shared
// conformance tables (Spark 2.x–3.x, Databricks/Photon, delta-rs, delta-go data files, checkpoints and
// Spark's INT96 expected results) with the schema derived from the file, and every table data file also
// with the table's current schema (physical names, field ids in id mode, widened types, added columns).
func TestConformance_EveryFileReadsFullyWithItsOwnAndItsTableSchema(t *testing.T) {
	root, files := conformanceFiles(t)
	tables := map[string]*tableInfo{}
	for _, path := range files {
		rel, _ := filepath.Rel(root, path)
		t.Run(rel, func(t *testing.T) {
			f, err := Open(context.Background(), openLocal(t, path))
			if err != nil {
				t.Fatal(err)
			}
			own, err := f.Schema()
			if err != nil {
				t.Fatal(err)
			}
			rows := readAll(t, f, own, ReadOptions{})
			if int64(len(rows)) != f.NumRows() {
				t.Fatalf("read %d rows with the file schema, footer says %d", len(rows), f.NumRows())
			}
			for _, r := range rows {
				if len(r) != len(own.Fields) {
					t.Fatalf("row has %d values, schema %d fields", len(r), len(own.Fields))
				}
			}
			tr := tableRoot(path)
			if tr == "" {
				return
			}
			info, ok := tables[tr]
			if !ok {
				ti, found := readTableInfo(t, tr)
				if found {
					info = &ti
				}
				tables[tr] = info
			}
			if info == nil {
				return
			}
			trows := readAll(t, f, info.schema, ReadOptions{MatchFieldIDs: info.matchIDs})
			if int64(len(trows)) != f.NumRows() {
				t.Fatalf("read %d rows with the table schema, footer says %d", len(trows), f.NumRows())
			}
			assertSameStoredColumns(t, own, rows, info.schema, trows)
		})
	}
}

// assertSameStoredColumns checks that top-level primitive columns present under the same name in both
// schemas and stored with the same type read identically through both paths.
func assertSameStoredColumns(t *testing.T, own *types.StructType, ownRows []types.Struct, table *types.StructType, tableRows []types.Struct) {
	t.Helper()
	for ti, tf := range table.Fields {
		oi := own.FieldIndex(tf.Name)
		if oi < 0 || own.Fields[oi].Type.String() != tf.Type.String() {
			continue
		}
		if _, ok := tf.Type.(*types.PrimitiveType); !ok {
			continue
		}
		for r := range ownRows {
			a, b := ownRows[r][oi], tableRows[r][ti]
			if (a == nil) != (b == nil) {
				t.Fatalf("column %s row %d: file schema read %v, table schema read %v", tf.Name, r, a, b)
			}
			if a == nil {
				continue
			}
			if c, err := types.Compare(a, b); err == nil && c != 0 {
				t.Fatalf("column %s row %d: file schema read %v, table schema read %v", tf.Name, r, a, b)
			}
		}
	}
}

// TestConformance_RewritingEachTablesDataFilesPreservesTheirRows compacts every conformance table's data
// files (Spark, Databricks, delta-rs writers: snappy, dictionaries, INT96, nested types, variants, type
// widening, column mapping) with the table's schema and a synthetic deletion vector, and compares the
// output with what the logical reader returns for the inputs.
func TestConformance_RewritingEachTablesDataFilesPreservesTheirRows(t *testing.T) {
	_, files := conformanceFiles(t)
	byTable := map[string][]string{}
	var roots []string
	for _, p := range files {
		if tr := tableRoot(p); tr != "" && !strings.Contains(p, "/_change_data/") {
			if byTable[tr] == nil {
				roots = append(roots, tr)
			}
			byTable[tr] = append(byTable[tr], p)
		}
	}
	for _, root := range roots {
		info, ok := readTableInfo(t, root)
		if !ok {
			continue
		}
		schema := info.dataSchema
		t.Run(filepath.Base(filepath.Dir(root)), func(t *testing.T) {
			var inputs []RewriteInput
			var want []types.Struct
			for i, p := range byTable[root] {
				f, err := Open(context.Background(), openLocal(t, p))
				if err != nil {
					t.Fatal(err)
				}
				dv := roaring64.New()
				for r := int64(i % 3); r < f.NumRows(); r += 3 {
					dv.Add(uint64(r))
				}
				want = append(want, readAll(t, f, schema, ReadOptions{MatchFieldIDs: info.matchIDs, Deleted: dv})...)
				inputs = append(inputs, RewriteInput{File: openLocal(t, p), Deleted: dv})
			}
			var sink memSink
			res, err := Rewrite(context.Background(), inputs, sink.create, RewriteOptions{Schema: schema, MatchFieldIDs: info.matchIDs, Writer: WriterOptions{WriteFieldIDs: info.matchIDs}})
			if err != nil {
				t.Fatal(err)
			}
			t.Logf("%d inputs, %d through the logical path", len(inputs), res.GeneralInputs)
			if res.Rows != int64(len(want)) {
				t.Fatalf("rewrote %d rows, want %d", res.Rows, len(want))
			}
			var got []types.Struct
			for _, w := range sink.outs {
				got = append(got, readAll(t, openBytes(t, w.Bytes()), schema, ReadOptions{MatchFieldIDs: info.matchIDs})...)
			}
			assertRowsEqual(t, want, got)
		})
	}
}
