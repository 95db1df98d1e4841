package parquetio

import (
	"context"
	"path/filepath"
	"testing"

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
