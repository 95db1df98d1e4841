package duckcheck

import (
	"fmt"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/bench/internal/ducktest"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// TestDelete_DuckDBReadsExactlyTheSurvivors deletes from a copy-on-write table (no deletion vectors,
// which DuckDB's read_parquet would not apply) with table.DeleteWhere and checks with DuckDB that the
// live files of the new version hold exactly the rows of the old version's files that do not match.
func TestDelete_DuckDBReadsExactlyTheSurvivors(t *testing.T) {
	ctx := t.Context()
	dir := filepath.Join(t.TempDir(), "orders")
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	tbl := delta.NewTable(store)
	if _, err := table.WriteDemoData(ctx, tbl, table.DemoOptions{Files: 6, RowsPerFile: 3000, Partitioned: true, Seed: 7}, nil); err != nil {
		t.Fatal(err)
	}
	before, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	const where = "customer_id < 120 AND quantity >= 2"
	e, err := expr.Parse(where)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := table.DeleteWhere(ctx, tbl, e, table.DeleteWhereOptions{})
	if err != nil {
		t.Fatal(err)
	}
	after, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if !rep.Committed || rep.RowsDeleted == 0 || rep.FilesRewritten == 0 || rep.DVsWritten != 0 {
		t.Fatalf("report %+v: want a copy-on-write delete of some rows", rep)
	}
	db := ducktest.Open(t)
	ids := func(snap *delta.Snapshot, filter string) []int64 {
		var files []string
		for _, f := range snap.Files() {
			if f.DeletionVector != nil {
				t.Fatalf("file %s has a DV, which DuckDB's read_parquet would not apply", f.Path)
			}
			key, err := delta.ObjectKey(snap.Table().Location(), f.Path)
			if err != nil {
				t.Fatal(err)
			}
			files = append(files, "'"+filepath.Join(dir, key)+"'")
		}
		q, err := db.Query(fmt.Sprintf("SELECT order_id FROM read_parquet([%s]) WHERE %s ORDER BY order_id", strings.Join(files, ", "), filter))
		if err != nil {
			t.Fatal(err)
		}
		defer q.Close()
		var out []int64
		for q.Next() {
			var id int64
			if err := q.Scan(&id); err != nil {
				t.Fatal(err)
			}
			out = append(out, id)
		}
		if err := q.Err(); err != nil {
			t.Fatal(err)
		}
		return out
	}
	want := ids(before, "NOT ("+where+")")
	got := ids(after, "true")
	if !slices.Equal(got, want) {
		t.Fatalf("DuckDB reads %d rows after the delete, %d survivors expected", len(got), len(want))
	}
	if deleted := len(ids(before, where)); int64(deleted) != rep.RowsDeleted || len(want) == 0 {
		t.Fatalf("DuckDB counts %d matching rows before, the delete reports %d", deleted, rep.RowsDeleted)
	}
}
