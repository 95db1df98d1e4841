package duckcheck

import (
	"context"
	"fmt"
	"maps"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/bench/internal/ducktest"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// duckRowIDs reads every live file with DuckDB and returns each row's stable row id (the materialized
// column where a file stores it, else the file's baseRowId plus the row's position in the file, as the
// protocol defines it) mapped to the row's own id column and its row commit version. materialized counts the
// rows whose id was materialized rather than computed.
func duckRowIDs(t *testing.T, dir string, snap *delta.Snapshot) (rows map[int64]string, materialized int) {
	t.Helper()
	db := ducktest.Open(t)
	props := snap.Metadata().Configuration
	idCol, verCol := props["delta.rowTracking.materializedRowIdColumnName"], props["delta.rowTracking.materializedRowCommitVersionColumnName"]
	if idCol == "" || verCol == "" {
		t.Fatal("the table names no materialized row-tracking columns")
	}
	rows = map[int64]string{}
	for _, f := range snap.Files() {
		if f.BaseRowID == nil || f.DefaultRowCommitVersion == nil {
			t.Fatalf("file %s has no baseRowId/defaultRowCommitVersion", f.Path)
		}
		key, err := delta.ObjectKey(snap.Table().Location(), f.Path)
		if err != nil {
			t.Fatal(err)
		}
		src := fmt.Sprintf("read_parquet('%s', file_row_number = true)", filepath.Join(dir, key))
		var cols []string
		q, err := db.Query("SELECT column_name FROM (DESCRIBE SELECT * FROM " + src + ")")
		if err != nil {
			t.Fatal(err)
		}
		for q.Next() {
			var c string
			if err := q.Scan(&c); err != nil {
				t.Fatal(err)
			}
			cols = append(cols, c)
		}
		q.Close()
		rid := fmt.Sprintf("%d + file_row_number", *f.BaseRowID)
		ver := fmt.Sprint(*f.DefaultRowCommitVersion)
		stored := "0"
		if slices.Contains(cols, idCol) {
			rid = fmt.Sprintf(`coalesce("%s", %s)`, idCol, rid)
			stored = fmt.Sprintf(`("%s" IS NOT NULL)::INT`, idCol)
		}
		if slices.Contains(cols, verCol) {
			ver = fmt.Sprintf(`coalesce("%s", %s)`, verCol, ver)
		}
		q, err = db.Query(fmt.Sprintf("SELECT %s, id, %s, %s FROM %s", rid, ver, stored, src))
		if err != nil {
			t.Fatal(err)
		}
		for q.Next() {
			var id, rowID, version int64
			var isStored int
			if err := q.Scan(&rowID, &id, &version, &isStored); err != nil {
				t.Fatal(err)
			}
			if prev, dup := rows[rowID]; dup {
				t.Fatalf("row id %d is held by two rows: %s and id=%d", rowID, prev, id)
			}
			rows[rowID] = fmt.Sprintf("id=%d version=%d", id, version)
			materialized += isStored
		}
		if err := q.Err(); err != nil {
			t.Fatal(err)
		}
		q.Close()
	}
	return rows, materialized
}

// TestCluster_DuckDBSeesEveryRowKeepItsRowIDThroughClustering clusters a row-tracking table (FULL, the
// columnar sort, then an incremental run after more appends) and has DuckDB compute every row's stable
// row id and commit version from the files and the log's baseRowIds: each row must keep both, and no
// id may be lost, duplicated or reused.
func TestCluster_DuckDBSeesEveryRowKeepItsRowIDThroughClustering(t *testing.T) {
	ctx := context.Background()
	dir, tbl := newClusterTable(t, map[string]string{"delta.enableRowTracking": "true"})
	appendRows := func(first, batches int) {
		for i := range batches {
			snap, _ := tbl.Latest(ctx)
			rows := clusterRows(3_000, first+i*3_000, uint64(first+i))
			if _, err := table.Append(ctx, snap, rows, table.WriteOptions{DataChange: true, TargetFileSize: 64 << 10}); err != nil {
				t.Fatal(err)
			}
		}
	}
	appendRows(0, 5)
	if _, err := table.ApplyDeclaration(ctx, tbl, table.Declaration{ClusterBy: []string{"a", "s"}, SetClusterBy: true}); err != nil {
		t.Fatal(err)
	}
	snap, _ := tbl.Latest(ctx)
	want, stored := duckRowIDs(t, dir, snap)
	if len(want) != 15_000 || stored != 0 {
		t.Fatalf("before clustering DuckDB computes %d row ids (%d stored), want 15000 computed", len(want), stored)
	}
	o := cluster.DefaultOptions()
	o.Full, o.TargetFileSize = true, 128<<10
	if op, err := cluster.Optimize(ctx, tbl, snap, o, nil); err != nil || op.FilesAdded < 3 {
		t.Fatalf("FULL clustering: %+v, %v", op, err)
	}
	snap, _ = tbl.Latest(ctx)
	got, stored := duckRowIDs(t, dir, snap)
	if !maps.Equal(got, want) {
		t.Fatalf("row identities changed through FULL clustering: %s", firstIdentityDiff(want, got))
	}
	if stored != len(want) {
		t.Errorf("%d of %d rows carry a materialized row id after clustering, want all", stored, len(want))
	}

	// New rows get fresh ids above every assigned one; an incremental run clusters them and keeps all.
	appendRows(15_000, 2)
	snap, _ = tbl.Latest(ctx)
	want, _ = duckRowIDs(t, dir, snap)
	o.Full = false
	if op, err := cluster.Optimize(ctx, tbl, snap, o, nil); err != nil || op.FilesRemoved == 0 {
		t.Fatalf("incremental clustering: %+v, %v", op, err)
	}
	snap, _ = tbl.Latest(ctx)
	if got, _ = duckRowIDs(t, dir, snap); !maps.Equal(got, want) {
		t.Fatalf("row identities changed through incremental clustering: %s", firstIdentityDiff(want, got))
	}
	t.Logf("%d rows kept their row ids and commit versions in %d files", len(got), snap.NumFiles())
}

func firstIdentityDiff(want, got map[int64]string) string {
	var diffs []string
	for id, w := range want {
		if g, ok := got[id]; !ok || g != w {
			diffs = append(diffs, fmt.Sprintf("row id %d: %s before, %q after", id, w, g))
			if len(diffs) == 3 {
				break
			}
		}
	}
	return fmt.Sprintf("%d rows before, %d after; %s", len(want), len(got), strings.Join(diffs, "; "))
}
