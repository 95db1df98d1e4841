package deltacheck

import (
	"fmt"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/bench/internal/ducktest"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
)

// TestOptimize_DuckDBReadsTheWrittenRowsAfterCompaction compacts tables of many small files (every
// type, nested ones included; partitioned or not; every column-mapping mode) and has DuckDB read the
// live files the JSON log lists afterwards — its own Parquet reader and an independent replay of the
// log — to check that the compacted table holds exactly the rows that were written, as our scan does.
func TestOptimize_DuckDBReadsTheWrittenRowsAfterCompaction(t *testing.T) {
	db := ducktest.Open(t)
	rows := tabletest.AllTypesRows(900)
	want := canonical(rows)
	for _, mode := range []delta.ColumnMappingMode{delta.ColumnMappingNone, delta.ColumnMappingName, delta.ColumnMappingID} {
		for _, parts := range [][]string{nil, {"part", "pday"}} {
			t.Run(fmt.Sprintf("%s/partitions=%v", mode, parts), func(t *testing.T) {
				root := t.TempDir()
				store, err := storage.NewLocal(root)
				if err != nil {
					t.Fatal(err)
				}
				tbl, snap, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), parts, mode, nil)
				if err != nil {
					t.Fatal(err)
				}
				// Nine appends of small files (rolled over at 4 KiB): the small-file problem.
				for i := 0; i < len(rows); i += 100 {
					if _, err := table.Append(t.Context(), snap, rows[i:i+100], table.WriteOptions{TargetFileSize: 4 << 10}); err != nil {
						t.Fatal(err)
					}
					if snap, err = tbl.Latest(t.Context()); err != nil {
						t.Fatal(err)
					}
				}
				before := snap.NumFiles()
				rep, err := optimize.Run(t.Context(), tbl, optimize.Options{MaxDeletedRowsRatio: optimize.DefaultMaxDeletedRowsRatio}, nil)
				if err != nil {
					t.Fatal(err)
				}
				if snap, err = tbl.Latest(t.Context()); err != nil {
					t.Fatal(err)
				}
				if rep.FilesRemoved == 0 || snap.NumFiles() >= before {
					t.Fatalf("compaction did not reduce the files: %d → %d", before, snap.NumFiles())
				}
				duck, ours := duckTable(t, db, root, snap), ourTable(t, snap)
				if !slices.Equal(duck, want) {
					t.Errorf("DuckDB reads other rows than were written: %s", firstDiff(duck, want))
				}
				if !slices.Equal(ours, want) {
					t.Errorf("our scan returns other rows than were written: %s", firstDiff(ours, want))
				}
				t.Logf("%d files → %d, %d rows identical in DuckDB and our scan", before, snap.NumFiles(), len(want))
			})
		}
	}
}
