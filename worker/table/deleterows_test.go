package table_test

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"slices"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func dmlSchema() *types.StructType {
	return &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: false},
		{Name: "p", Type: types.Primitive(types.TypeString), Nullable: true},
		{Name: "v", Type: types.Primitive(types.TypeString), Nullable: true},
	}}
}

func dmlRow(id int64) types.Struct {
	return types.Struct{id, fmt.Sprintf("p%d", id%2), fmt.Sprintf("v%04d", id)}
}

// dmlTable creates a table and appends files of 100 rows each: ids [100k, 100k+100) in append k
// (one file per partition of p when partitioned).
func dmlTable(t *testing.T, store storage.Store, parts []string, props map[string]string, files int) *delta.Table {
	t.Helper()
	return dmlTableN(t, store, parts, props, files, 100)
}

func dmlTableN(t *testing.T, store storage.Store, parts []string, props map[string]string, files, perFile int) *delta.Table {
	t.Helper()
	tbl, snap, err := tabletest.Create(t.Context(), store, dmlSchema(), parts, delta.ColumnMappingNone, props)
	if err != nil {
		t.Fatal(err)
	}
	for k := range files {
		var rows []types.Struct
		for i := range perFile {
			rows = append(rows, dmlRow(int64(perFile*k+i)))
		}
		if _, err := table.Append(t.Context(), snap, rows, table.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
		if snap, err = tbl.Latest(t.Context()); err != nil {
			t.Fatal(err)
		}
	}
	return tbl
}

func latestSnap(t *testing.T, tbl *delta.Table) *delta.Snapshot {
	t.Helper()
	snap, err := tbl.Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func deleteWhere(t *testing.T, tbl *delta.Table, where string, opts table.DeleteWhereOptions) *table.DeleteReport {
	t.Helper()
	e, err := expr.Parse(where)
	if err != nil {
		t.Fatal(err)
	}
	rep, err := table.DeleteWhere(t.Context(), tbl, e, opts)
	if err != nil {
		t.Fatalf("delete where %s: %v", where, err)
	}
	return rep
}

// idsInOrder scans the table and returns the ids in scan order (files in log order, rows in file order).
func idsInOrder(t *testing.T, snap *delta.Snapshot) []int64 {
	t.Helper()
	rows, _ := scanAll(t, snap, table.ScanOptions{Columns: []string{"id"}})
	out := make([]int64, len(rows))
	for i, r := range rows {
		out[i] = r[0].(int64)
	}
	return out
}

func sortedIDs(t *testing.T, snap *delta.Snapshot) []int64 {
	ids := idsInOrder(t, snap)
	slices.Sort(ids)
	return ids
}

// wantIDs is [0, n) without the ids gone says.
func wantIDs(n int64, gone func(int64) bool) []int64 {
	var out []int64
	for id := range n {
		if !gone(id) {
			out = append(out, id)
		}
	}
	return out
}

func commitActions(t *testing.T, store storage.Store, v delta.Version) []*delta.Action {
	t.Helper()
	data, err := store.Get(t.Context(), delta.CommitKey(v))
	if err != nil {
		t.Fatal(err)
	}
	var out []*delta.Action
	for _, line := range bytes.Split(bytes.TrimSpace(data), []byte("\n")) {
		var a delta.Action
		if err := json.Unmarshal(line, &a); err != nil {
			t.Fatalf("commit %d: %v", v, err)
		}
		out = append(out, &a)
	}
	return out
}

func TestDeleteWhere_CopyOnWriteKeepsTheOtherRowsInOrderAndRemovesEmptiedFiles(t *testing.T) {
	store, _ := newStore(t)
	tbl := dmlTable(t, store, nil, nil, 3)
	before := latestSnap(t, tbl)
	// File 0 loses scattered rows, file 1 nothing, file 2 all of its rows.
	rep := deleteWhere(t, tbl, "id IN (0, 7, 50, 99, 200, 201) AND v != 'x'", table.DeleteWhereOptions{})
	rep2 := deleteWhere(t, tbl, "id >= 200", table.DeleteWhereOptions{})
	gone := func(id int64) bool { return slices.Contains([]int64{0, 7, 50, 99}, id) || id >= 200 }
	after := latestSnap(t, tbl)
	if !rep.Committed || !rep2.Committed || rep.RowsDeleted != 6 || rep2.RowsDeleted != 98 || rep.FilesTouched != 2 || rep.FilesRewritten != 2 ||
		rep2.FilesRemoved != 1 || rep2.FilesRewritten != 0 || rep.DVsWritten != 0 {
		t.Fatalf("reports %+v / %+v", rep, rep2)
	}
	if rep.FilesScanned != 2 || rep.FilesPrunedByStats != 1 || rep2.FilesScanned != 1 || rep2.FilesPrunedByStats != 2 {
		t.Errorf("pruning: %+v / %+v, want the files without a matching id skipped by their statistics", rep, rep2)
	}
	// The rewritten file keeps its surviving rows in their order; untouched files stay as they were.
	if got, want := idsInOrder(t, after), wantIDs(300, gone); !slices.Equal(sortedIDs(t, after), want) || len(got) != len(want) {
		t.Fatalf("rows after delete: %v, want %v", got, want)
	}
	for _, f := range after.Files() {
		if f.DeletionVector != nil {
			t.Errorf("copy-on-write left a deletion vector on %s", f.Path)
		}
	}
	var rewritten *delta.AddFile
	for _, f := range after.Files() {
		if _, ok := before.File(f.Key()); !ok {
			rewritten = f
		}
	}
	if rewritten == nil || len(after.Files()) != 2 {
		t.Fatalf("files after: %d, want the untouched one and one rewrite", len(after.Files()))
	}
	if n, ok := delta.NumRecords(rewritten.Stats); !ok || n != 96 || !rewritten.DataChange {
		t.Errorf("rewritten file %s: stats %s, dataChange %v", rewritten.Path, rewritten.Stats, rewritten.DataChange)
	}
	one := latestSnap(t, tbl)
	scan, err := table.NewScan(one, table.ScanOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	var order []int64
	if _, err := scan.Each(t.Context(), func(f *delta.AddFile, rows []types.Struct) error {
		if f.Path == rewritten.Path {
			for _, r := range rows {
				order = append(order, r[0].(int64))
			}
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if want := wantIDs(100, gone); !slices.Equal(order, want) {
		t.Errorf("rewritten file's rows %v, want the survivors in their old order %v", order, want)
	}
	// The commit: DELETE, every remove and add a data change, Spark's metric names.
	for _, a := range commitActions(t, store, rep.Version) {
		switch {
		case a.CommitInfo != nil:
			m := a.CommitInfo.OperationMetrics
			if a.CommitInfo.Operation != "DELETE" || m["numDeletedRows"] != "6" || m["numRemovedFiles"] != "2" || m["numAddedFiles"] != "2" ||
				m["numCopiedRows"] != "194" || a.CommitInfo.OperationParameters["predicate"] != `["id IN (0, 7, 50, 99, 200, 201) AND v != 'x'"]` {
				t.Errorf("commitInfo %+v", a.CommitInfo)
			}
		case a.Remove != nil && !a.Remove.DataChange, a.Add != nil && !a.Add.DataChange:
			t.Errorf("action without dataChange: %+v %+v", a.Remove, a.Add)
		}
	}
	// Time travel to the version before returns the old rows.
	old, err := tbl.At(t.Context(), before.Version())
	if err != nil {
		t.Fatal(err)
	}
	if got := sortedIDs(t, old); !slices.Equal(got, wantIDs(300, func(int64) bool { return false })) {
		t.Errorf("time travel to %d: %d rows", before.Version(), len(got))
	}
}

func TestDeleteWhere_MatchingNothingCommitsNothing(t *testing.T) {
	store, _ := newStore(t)
	tbl := dmlTable(t, store, []string{"p"}, nil, 2)
	before := latestSnap(t, tbl)
	for _, where := range []string{"id > 1000", "p = 'p7'", "id = 5 AND p = 'p0'"} {
		rep := deleteWhere(t, tbl, where, table.DeleteWhereOptions{})
		if rep.Committed || rep.Version != before.Version() || rep.RowsDeleted != 0 {
			t.Errorf("%s: %+v, want no commit", where, rep)
		}
	}
	if v := latestSnap(t, tbl).Version(); v != before.Version() {
		t.Fatalf("version %d after deletes that match nothing, want %d", v, before.Version())
	}
}

func TestDeleteWhere_PartitionPredicateRemovesWholeFilesWithoutRewriting(t *testing.T) {
	store, _ := newStore(t)
	tbl := dmlTable(t, store, []string{"p"}, nil, 2)
	rep := deleteWhere(t, tbl, "p = 'p1'", table.DeleteWhereOptions{})
	if rep.FilesPrunedByPartition != 2 || rep.FilesRemoved != 2 || rep.FilesRewritten != 0 || rep.RowsDeleted != 100 || rep.BytesWritten != 0 {
		t.Fatalf("report %+v", rep)
	}
	rep = deleteWhere(t, tbl, "p = 'p0' AND id < 10", table.DeleteWhereOptions{})
	if rep.FilesPrunedByPartition != 0 || rep.FilesPrunedByStats != 1 || rep.FilesRewritten != 1 || rep.RowsDeleted != 5 {
		t.Fatalf("report %+v", rep)
	}
	after := latestSnap(t, tbl)
	if got, want := sortedIDs(t, after), wantIDs(200, func(id int64) bool { return id%2 == 1 || id < 10 }); !slices.Equal(got, want) {
		t.Fatalf("rows %v, want %v", got, want)
	}
	for _, f := range after.Files() {
		if pv, _ := f.PartitionValues.Get("p"); pv.Value != "p0" {
			t.Errorf("file %s in partition %q", f.Path, pv.Value)
		}
	}
}

func TestDeleteRows_RowTrackingKeepsTheSurvivorsIDsAndCommitVersions(t *testing.T) {
	for _, dv := range []bool{false, true} {
		t.Run(fmt.Sprintf("dv=%v", dv), func(t *testing.T) {
			store, _ := newStore(t)
			props := map[string]string{delta.PropEnableRowTracking: "true"}
			if dv {
				props[delta.PropEnableDeletionVectors] = "true"
			}
			tbl := dmlTable(t, store, nil, props, 2)
			before := latestSnap(t, tbl)
			ids, err := tabletest.RowIdentities(t.Context(), before)
			if err != nil {
				t.Fatal(err)
			}
			deleteWhere(t, tbl, "id IN (3, 4, 150, 199)", table.DeleteWhereOptions{})
			deleteWhere(t, tbl, "id >= 190 AND id < 195", table.DeleteWhereOptions{})
			after := latestSnap(t, tbl)
			got, err := tabletest.RowIdentities(t.Context(), after)
			if err != nil {
				t.Fatal(err)
			}
			// Survivors keep their ids and commit versions; the deleted rows' ids are gone.
			want := map[int64]string{}
			for id, row := range ids {
				keep := true
				for _, gone := range []int64{3, 4, 150, 199, 190, 191, 192, 193, 194} {
					if row == table.CanonicalRow(append(dmlRow(gone), int64(gone/100+1))) {
						keep = false
					}
				}
				if keep {
					want[id] = row
				}
			}
			if len(want) != 191 {
				t.Fatalf("%d survivors expected from the identities of the old snapshot", len(want))
			}
			if err := tabletest.SameIdentities(want, got); err != nil {
				t.Fatal(err)
			}
			info := after.CommitInfo()
			if info.Operation != "DELETE" || (!dv && info.Tags["delta.rowTracking.preserved"] != "true") {
				t.Errorf("commitInfo %+v", info)
			}
		})
	}
}

func TestDeleteRows_RefusesPositionsThatAreNotLiveRows(t *testing.T) {
	for _, dv := range []bool{false, true} {
		t.Run(fmt.Sprintf("dv=%v", dv), func(t *testing.T) {
			store, _ := newStore(t)
			props := map[string]string{}
			if dv {
				props[delta.PropEnableDeletionVectors] = "true"
			}
			tbl := dmlTable(t, store, nil, props, 1)
			snap := latestSnap(t, tbl)
			f := snap.Files()[0]
			for _, positions := range []*roaring64.Bitmap{roaring64.BitmapOf(5, 100), roaring64.BitmapOf(1000)} {
				tx, err := snap.Begin(delta.OpMerge, delta.TxnOptions{Operation: "DELETE"})
				if err != nil {
					t.Fatal(err)
				}
				if _, err := table.DeleteRows(t.Context(), tx, []table.FileDeletes{{File: f, Positions: positions}}, table.WriteOptions{}); err == nil {
					t.Errorf("positions %v beyond the file's 100 rows were accepted", positions.ToArray())
				}
			}
			// Nothing written was left behind: the table root holds the one data file and the log.
			if n := countObjects(t, store, ""); n != 1+countObjects(t, store, "_delta_log/") {
				t.Errorf("%d objects outside _delta_log after refused deletes, want the one data file", n-countObjects(t, store, "_delta_log/"))
			}
		})
	}
}

func countObjects(t *testing.T, store storage.Store, prefix string) int {
	t.Helper()
	n := 0
	for _, err := range store.List(context.Background(), prefix, "") {
		if err != nil {
			t.Fatal(err)
		}
		n++
	}
	return n
}
