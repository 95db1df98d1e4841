package optimize

import (
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
)

// An old Spark overwrite can leave a Parquet file of zero rows whose add action has no statistics;
// only its footer says it is empty. Compaction must count its rows from the footer, and a bin of
// nothing but such files is a legitimate rewrite: it removes them and adds nothing.
func TestOptimize_RemovesEmptyFilesWithoutStatistics(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			tbl, snap, err := tabletest.Create(ctx, b.open(t, "empty"), table.OrdersSchema(), nil, "", nil)
			if err != nil {
				t.Fatal(err)
			}
			for range 2 {
				if _, err := tabletest.AppendWithoutStats(ctx, snap, nil, nil); err != nil {
					t.Fatal(err)
				}
				snap = latest(t, tbl)
			}
			before := latest(t, tbl)

			rep := run(t, tbl, Options{})
			after := latest(t, tbl)
			if rep.Op.Outcome != result.Succeeded || after.Version() != before.Version()+1 || after.NumFiles() != 0 {
				t.Fatalf("report %+v, version %d → %d, %d files left", rep.Op, before.Version(), after.Version(), after.NumFiles())
			}
			if rep.FilesRemoved != 2 || rep.FilesAdded != 0 {
				t.Errorf("removed %d, added %d files", rep.FilesRemoved, rep.FilesAdded)
			}
			var removes int
			for _, a := range commitActions(t, tbl.Store(), after.Version()) {
				switch {
				case a.Add != nil:
					t.Errorf("the rewrite of empty files added %s", a.Add.Path)
				case a.Remove != nil:
					removes++
					// The row count read from the footer is recorded with the remove.
					if n, ok := delta.NumRecords(a.Remove.Stats); a.Remove.DataChange || !ok || n != 0 {
						t.Errorf("remove %+v: want dataChange=false and numRecords 0", a.Remove)
					}
				}
			}
			if removes != 2 {
				t.Errorf("%d removes, want 2", removes)
			}
		})
	}
}

// A lone empty file is worth removing too, although a bin of one file is otherwise left alone.
func TestOptimize_RemovesALoneEmptyFile(t *testing.T) {
	ctx := t.Context()
	tbl, snap, err := tabletest.Create(ctx, localStore(t), table.OrdersSchema(), nil, "", nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tabletest.AppendWithoutStats(ctx, snap, nil, nil); err != nil {
		t.Fatal(err)
	}
	rep := run(t, tbl, Options{})
	if rep.Op.Outcome != result.Succeeded || rep.FilesRemoved != 1 || latest(t, tbl).NumFiles() != 0 {
		t.Fatalf("report %+v, %d files left", rep.Op, latest(t, tbl).NumFiles())
	}
}

// Files without statistics next to ordinary ones: the bins mix them, the rows stay the same, and the
// commit's row check covers every input because the missing counts come from the footers.
func TestOptimize_CountsRowsOfFilesWithoutStatisticsFromTheirFooters(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			ctx := t.Context()
			tbl := demoTable(t, b.open(t, "orders"), 8, 200, true)
			snap := latest(t, tbl)
			pv := snap.Files()[0].PartitionValues
			if _, err := tabletest.AppendWithoutStats(ctx, snap, pv, nil); err != nil {
				t.Fatal(err)
			}
			snap = latest(t, tbl)
			// 50 more rows of the first day, as a file without statistics.
			if _, err := tabletest.AppendWithoutStats(ctx, snap, nil, table.OrdersRows(7, 0, 1_000_000, 50)); err != nil {
				t.Fatal(err)
			}
			before := latest(t, tbl)
			want := rowsAt(t, before)

			rep := run(t, tbl, Options{})
			after := latest(t, tbl)
			sameRows(t, "after optimize", rowsAt(t, after), want)
			if rep.Op.Outcome != result.Succeeded || rep.FilesRemoved != before.NumFiles() {
				t.Fatalf("report %+v: removed %d of %d files", rep.Op, rep.FilesRemoved, before.NumFiles())
			}
			for _, bin := range rep.Plan.Bins {
				if !bin.RowsKnown {
					t.Errorf("bin of partition %s: rows unknown after reading the footers", bin.Dir)
				}
			}
			for _, a := range commitActions(t, tbl.Store(), after.Version()) {
				if a.Remove != nil {
					if _, ok := delta.NumRecords(a.Remove.Stats); !ok {
						t.Errorf("remove of %s carries no row count", a.Remove.Path)
					}
				}
			}
		})
	}
}
