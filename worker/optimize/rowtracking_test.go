package optimize

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"maps"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// rowTrackingTable creates a table with row tracking (and deletion vectors) enabled, as Spark does
// when delta.enableRowTracking is set at creation: the protocol gets the feature and the
// materialized column names are chosen.
func rowTrackingTable(t *testing.T, store storage.Store, partitioned bool, mode delta.ColumnMappingMode) *delta.Table {
	t.Helper()
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: false},
		{Name: "name", Type: types.Primitive(types.TypeString), Nullable: true},
		{Name: "p", Type: types.Primitive(types.TypeString), Nullable: true},
	}}
	var parts []string
	if partitioned {
		parts = []string{"p"}
	}
	tbl, snap, err := tabletest.Create(t.Context(), store, schema, parts, mode, map[string]string{
		delta.PropEnableRowTracking: "true", "delta.enableDeletionVectors": "true"})
	if err != nil {
		t.Fatal(err)
	}
	if rt, err := snap.RowTracking(); err != nil || !rt.MustPreserve() {
		t.Fatalf("row tracking %+v, %v: the table must require preserved row ids", rt, err)
	}
	return tbl
}

// appendFiles appends files commits of rows rows each (ids from first on, two partitions), one
// commit per call so that each file gets its own baseRowId and defaultRowCommitVersion.
func appendFiles(t *testing.T, tbl *delta.Table, files, rows int, first int64) {
	t.Helper()
	for f := range files {
		var batch []types.Struct
		for i := range rows {
			id := first + int64(f*rows+i)
			var name types.Value = fmt.Sprintf("n%d", id%13)
			if id%7 == 0 {
				name = nil
			}
			batch = append(batch, types.Struct{id, name, []string{"a", "b"}[id%2]})
		}
		if _, err := table.Append(t.Context(), latest(t, tbl), batch, table.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
}

// sparkDelete commits what Spark's DELETE writes with deletion vectors enabled: the file removed and
// added again with an inline deletion vector hiding the given physical rows. The add keeps its
// baseRowId and defaultRowCommitVersion, so the survivors keep their ids. (deltakeeper's own
// transactions refuse deletes on row-tracking tables.)
func sparkDelete(t *testing.T, tbl *delta.Table, f *delta.AddFile, rows ...uint64) {
	t.Helper()
	snap := latest(t, tbl)
	dv, err := tabletest.InlineDV(rows...)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now().UnixMilli()
	add := f.WithDeletionVector(dv, now)
	rm := f.Remove(now, true)
	commitRaw(t, tbl.Store(), snap.Version()+1,
		delta.Action{CommitInfo: &delta.CommitInfo{Timestamp: &now, Operation: "DELETE"}},
		delta.Action{Remove: rm}, delta.Action{Add: add})
}

// commitRaw writes commit v as another engine would.
func commitRaw(t *testing.T, store storage.Store, v delta.Version, actions ...delta.Action) {
	t.Helper()
	var buf bytes.Buffer
	for _, a := range actions {
		line, err := json.Marshal(a)
		if err != nil {
			t.Fatal(err)
		}
		buf.Write(append(line, '\n'))
	}
	if err := store.PutIfAbsent(t.Context(), delta.CommitKey(v), buf.Bytes()); err != nil {
		t.Fatal(err)
	}
}

func identities(t *testing.T, snap *delta.Snapshot) map[int64]string {
	t.Helper()
	ids, err := tabletest.RowIdentities(t.Context(), snap)
	if err != nil {
		t.Fatal(err)
	}
	return ids
}

func sameIdentities(t *testing.T, what string, before, after map[int64]string) {
	t.Helper()
	if err := tabletest.SameIdentities(before, after); err != nil {
		t.Fatalf("%s: %v", what, err)
	}
}

// checkRowTrackingCommit verifies that the compaction commit declares the preservation and that its
// new files got fresh ids above the previous high-water mark and the commit's version.
func checkRowTrackingCommit(t *testing.T, tbl *delta.Table, before *delta.Snapshot) {
	t.Helper()
	after := latest(t, tbl)
	rtBefore, err := before.RowTracking()
	if err != nil {
		t.Fatal(err)
	}
	rtAfter, err := after.RowTracking()
	if err != nil {
		t.Fatal(err)
	}
	next := rtBefore.HighWaterMark + 1
	for _, a := range commitActions(t, tbl.Store(), after.Version()) {
		switch {
		case a.CommitInfo != nil:
			if a.CommitInfo.Operation != "OPTIMIZE" || a.CommitInfo.Tags["delta.rowTracking.preserved"] != "true" {
				t.Fatalf("commitInfo %+v: want an OPTIMIZE tagged delta.rowTracking.preserved", a.CommitInfo)
			}
		case a.Add != nil:
			n, _ := delta.NumRecords(a.Add.Stats)
			if a.Add.BaseRowID == nil || *a.Add.BaseRowID != next || a.Add.DefaultRowCommitVersion == nil || *a.Add.DefaultRowCommitVersion != int64(after.Version()) {
				t.Fatalf("add %s: baseRowId %v, defaultRowCommitVersion %v; want %d and %d", a.Add.Path, a.Add.BaseRowID, a.Add.DefaultRowCommitVersion, next, after.Version())
			}
			next += n
		}
	}
	if rtAfter.HighWaterMark != next-1 {
		t.Fatalf("high-water mark %d, want %d", rtAfter.HighWaterMark, next-1)
	}
}

func TestOptimize_KeepsEveryRowsIdAndCommitVersion(t *testing.T) {
	cases := []struct {
		name        string
		partitioned bool
		mode        delta.ColumnMappingMode
		backend     int
	}{
		{"unpartitioned", false, "", 0},
		{"partitioned", true, "", 0},
		{"column mapping by name", false, delta.ColumnMappingName, 0},
		{"column mapping by id", true, delta.ColumnMappingID, 0},
		{"on S3", true, "", 1},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			tbl := rowTrackingTable(t, backends[tc.backend].open(t, "tracked"), tc.partitioned, tc.mode)
			appendFiles(t, tbl, 6, 40, 0)
			// Deletion vectors on two files: the first rows of one, the middle and last of another.
			// The survivors' ids must still come from their positions in the original files.
			files := latest(t, tbl).Files()
			sparkDelete(t, tbl, files[1], 0, 1, 2)
			sparkDelete(t, tbl, latest(t, tbl).Files()[3], 5, 6, 19)
			before := latest(t, tbl)
			ids, rows := identities(t, before), rowsAt(t, before)

			rep := run(t, tbl, Options{MaxDeletedRowsRatio: DefaultMaxDeletedRowsRatio})
			if rep.Op.Outcome != result.Succeeded || rep.FilesRemoved != before.NumFiles() || rep.RowsPurged != 6 {
				t.Fatalf("report %+v: want every file compacted and 6 deleted rows purged", rep.Op)
			}
			after := latest(t, tbl)
			sameRows(t, "after optimize", rowsAt(t, after), rows)
			sameIdentities(t, "after optimize", ids, identities(t, after))
			checkRowTrackingCommit(t, tbl, before)
		})
	}
}

func TestOptimize_RowIdsStayStableOverRoundsOfCompaction(t *testing.T) {
	tbl := rowTrackingTable(t, localStore(t), false, "")
	// every maps each row id ever assigned to its row and commit version; rows only ever leave it.
	every := map[int64]string{}
	remember := func() {
		maps.Copy(every, identities(t, latest(t, tbl)))
	}
	appendFiles(t, tbl, 4, 30, 0)
	remember()
	rounds := []struct {
		name string
		// prepare changes the table before the round: new files, deletes in compacted files.
		prepare func()
	}{
		{"first compaction: ids from baseRowId and position", func() {}},
		{"compacted file with deletes plus new files: kept ids and computed ids mixed", func() {
			sparkDelete(t, tbl, latest(t, tbl).Files()[0], 0, 7, 8, 50, 119)
			appendFiles(t, tbl, 3, 25, 1_000)
			remember()
		}},
		{"a lone compacted file with deletes: every id already materialized", func() {
			sparkDelete(t, tbl, latest(t, tbl).Files()[0], 3, 4, 100)
		}},
	}
	for _, r := range rounds {
		r.prepare()
		before := latest(t, tbl)
		ids, rows := identities(t, before), rowsAt(t, before)
		// Every file is a candidate: the compacted output too, so ids already materialized are copied.
		rep := run(t, tbl, Options{MinFileSize: 1 << 40})
		if rep.Op.Outcome != result.Succeeded {
			t.Fatalf("%s: report %+v", r.name, rep.Op)
		}
		after := latest(t, tbl)
		if after.NumFiles() != 1 {
			t.Fatalf("%s: %d files after compaction, want 1", r.name, after.NumFiles())
		}
		sameRows(t, r.name, rowsAt(t, after), rows)
		got := identities(t, after)
		sameIdentities(t, r.name, ids, got)
		checkRowTrackingCommit(t, tbl, before)
		for id, row := range got {
			if every[id] != row {
				t.Fatalf("%s: row id %d holds %q, first assigned to %q", r.name, id, row, every[id])
			}
		}
	}
}

func TestOptimize_RefusesRowTrackingWithoutMaterializedColumnsBeforeWriting(t *testing.T) {
	store := localStore(t)
	tbl := rowTrackingTable(t, store, false, "")
	appendFiles(t, tbl, 3, 10, 0)
	// Another engine drops the column names: row ids can then not be preserved.
	snap := latest(t, tbl)
	md := snap.Metadata()
	md.Configuration = maps.Clone(md.Configuration)
	delete(md.Configuration, delta.PropMaterializedRowIDColumn)
	now := time.Now().UnixMilli()
	commitRaw(t, store, snap.Version()+1, delta.Action{CommitInfo: &delta.CommitInfo{Timestamp: &now, Operation: "SET TBLPROPERTIES"}}, delta.Action{MetaData: &md})
	snap = latest(t, tbl)
	files := storedFiles(t, store)
	_, err := Run(t.Context(), tbl, Options{}, nil)
	if !errors.Is(err, delta.ErrUnsupportedTable) || !strings.Contains(err.Error(), "materialized") {
		t.Fatalf("error %v, want a refusal naming the materialized columns", err)
	}
	if latest(t, tbl).Version() != snap.Version() || !maps.Equal(storedFiles(t, store), files) {
		t.Fatal("the refused run wrote something")
	}
}

// TestOptimize_KeepsRowIdsOfReferenceRowTrackingTables compacts copies of reference tables written by
// Databricks: files with baseRowId and defaultRowCommitVersion, one with a deletion vector stored in a
// file ('u' descriptor).
func TestOptimize_KeepsRowIdsOfReferenceRowTrackingTables(t *testing.T) {
	cases := []struct {
		name, table string
		// prepare adapts the copy before it is opened.
		prepare   func(t *testing.T, dir string)
		wantFiles int
		purged    int64
	}{
		// Clustered, so Run hands it to clustering; the bin-packing engine is driven directly to
		// prove it on Databricks-written row-tracking files.
		{"Databricks liquid table, bin-packed", "delta-rs/table_with_liquid_clustering", nil, 10, 0},
		// Databricks' DELETE left a deletion vector file; row tracking is turned on in the copy's
		// log exactly as a table created with it would carry it (feature, names, domain, base ids).
		{"Databricks deletion vector file", "kernel-rs/table-with-dv-small", enableRowTrackingInLog, 1, 2},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t")
			if err := os.CopyFS(dir, os.DirFS(filepath.Join(testutil.ConformanceDir(t), tc.table, "delta"))); err != nil {
				t.Fatal(err)
			}
			chmodTree(t, dir)
			if tc.prepare != nil {
				tc.prepare(t, dir)
			}
			store, err := storage.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			tbl := delta.NewTable(store)
			before := latest(t, tbl)
			ids, rows := identities(t, before), rowsAt(t, before)
			if len(ids) == 0 || len(ids) != len(rows) {
				t.Fatalf("%d row ids for %d rows", len(ids), len(rows))
			}
			opts := Options{MaxDeletedRowsRatio: DefaultMaxDeletedRowsRatio}
			cfg := planConfig{target: DefaultTargetFileSize, minFileSize: DefaultTargetFileSize, maxDeletedRowsRatio: opts.MaxDeletedRowsRatio}
			p, err := plan(before, cfg)
			if err != nil {
				t.Fatal(err)
			}
			rep := &Report{Plan: p, Batches: 1}
			if err := execute(t.Context(), p, opts, operationParameters(before, opts), rep, func(string) {}); err != nil {
				t.Fatal(err)
			}
			if rep.FilesRemoved != tc.wantFiles || rep.RowsPurged != tc.purged || len(rep.Commits) != 1 {
				t.Fatalf("removed %d files, purged %d rows in %d commits; want %d files, %d rows, 1 commit", rep.FilesRemoved, rep.RowsPurged, len(rep.Commits), tc.wantFiles, tc.purged)
			}
			after := latest(t, tbl)
			sameRows(t, "after optimize", rowsAt(t, after), rows)
			sameIdentities(t, "after optimize", ids, identities(t, after))
			checkRowTrackingCommit(t, tbl, before)
		})
	}
}

// enableRowTrackingInLog rewrites a copied table's log as if the table had been created with row
// tracking: the writer feature, the property and column names, the high-water mark domain, and
// every add's baseRowId (0: the table holds one file of 10 rows) and defaultRowCommitVersion 0.
func enableRowTrackingInLog(t *testing.T, dir string) {
	t.Helper()
	logs, err := filepath.Glob(filepath.Join(dir, "_delta_log", "*.json"))
	if err != nil || len(logs) == 0 {
		t.Fatalf("no commits in %s: %v", dir, err)
	}
	for _, path := range logs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		var out bytes.Buffer
		sc := bufio.NewScanner(bytes.NewReader(data))
		for sc.Scan() {
			var a map[string]map[string]any
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatal(err)
			}
			if p := a["protocol"]; p != nil {
				p["writerFeatures"] = append(p["writerFeatures"].([]any), delta.FeatureRowTracking, delta.FeatureDomainMetadata)
			}
			if m := a["metaData"]; m != nil {
				conf := m["configuration"].(map[string]any)
				conf[delta.PropEnableRowTracking] = "true"
				conf[delta.PropMaterializedRowIDColumn] = "_row-id-col-test"
				conf[delta.PropMaterializedRowCommitVer] = "_row-commit-version-col-test"
			}
			if add := a["add"]; add != nil {
				add["baseRowId"], add["defaultRowCommitVersion"] = 0, 0
			}
			line, err := json.Marshal(a)
			if err != nil {
				t.Fatal(err)
			}
			out.Write(append(line, '\n'))
			if a["metaData"] != nil {
				out.WriteString(`{"domainMetadata":{"domain":"delta.rowTracking","configuration":"{\"rowIdHighWaterMark\":9}","removed":false}}` + "\n")
			}
		}
		if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// chmodTree makes a copy of the read-only corpus writable.
func chmodTree(t *testing.T, dir string) {
	t.Helper()
	err := filepath.WalkDir(dir, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chmod(p, map[bool]os.FileMode{true: 0o755, false: 0o644}[d.IsDir()])
	})
	if err != nil {
		t.Fatal(err)
	}
}
