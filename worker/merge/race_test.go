package merge

import (
	"errors"
	"io/fs"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"

	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// TestUpsert_RacingAppendOfTheKeyIsReplannedNeverDuplicated: while the upsert of key 50 (absent,
// so an insert) is about to commit, a blind append commits a row with key 50. The merge's key
// predicate conflicts with it, the merge plans again, finds the appended row and updates it: one
// row with key 50, not two.
func TestUpsert_RacingAppendOfTheKeyIsReplannedNeverDuplicated(t *testing.T) {
	fx := newFixture(t, nil, nil)
	threeRows(fx)
	o := Options{Mode: Upsert, Keys: []string{"id"}}
	o.beforeCommit = func(attempt int, _ []string) {
		if attempt == 1 {
			fx.appendFile(row(50, 1, "a"))
		}
	}
	rep := fx.merge(fx.source(`{"id":50,"name":"mine","v":2,"p":"a"}`), o)
	fx.expectRows(row(1, 1, "a"), row(2, 2, "b"), row(3, 3, "a"), types.Struct{int64(50), "mine", int64(2), "a"})
	if rep.Attempts != 2 || rep.RowsUpdated != 1 || rep.RowsInserted != 0 {
		t.Fatalf("%+v: want a second plan that updates the appended row", rep)
	}
}

// TestUpsert_RacingAppendElsewhereDoesNotConflict: an append of keys outside the batch's is
// compatible (the commit rebases, no re-plan).
func TestUpsert_RacingAppendElsewhereDoesNotConflict(t *testing.T) {
	fx := newFixture(t, nil, nil)
	threeRows(fx)
	o := Options{Mode: Upsert, Keys: []string{"id"}}
	o.beforeCommit = func(attempt int, _ []string) {
		if attempt == 1 {
			fx.appendFile(row(900, 1, "a"))
		}
	}
	rep := fx.merge(fx.source(`{"id":2,"name":"two","v":2,"p":"b"}`), o)
	if rep.Attempts != 1 {
		t.Fatalf("%+v", rep)
	}
	fx.expectRows(row(1, 1, "a"), types.Struct{int64(2), "two", int64(2), "b"}, row(3, 3, "a"), row(900, 1, "a"))
}

// TestUpsert_RacingOptimizeReplansAndReusesInsertFiles: an OPTIMIZE compacts the touched files
// away before the merge commits; the merge plans again on the new snapshot (matching the
// compacted file) and commits the insert files it already wrote.
func TestUpsert_RacingOptimizeReplansAndReusesInsertFiles(t *testing.T) {
	fx := newFixture(t, nil, nil)
	tenFiles(fx)
	var inserts [][]string
	o := Options{Mode: Upsert, Keys: []string{"id"}}
	o.beforeCommit = func(attempt int, paths []string) {
		inserts = append(inserts, paths)
		if attempt == 1 {
			if _, err := optimize.Run(t.Context(), fx.tbl, optimize.Options{TargetFileSize: 1 << 20}, nil); err != nil {
				t.Fatal(err)
			}
		}
	}
	rep := fx.merge(fx.source(`{"id":5,"name":"five","v":5,"p":"b"}`, `{"id":500,"name":"new","v":1,"p":"a"}`), o)
	if rep.Attempts != 2 || rep.RowsUpdated != 1 || rep.RowsInserted != 1 || rep.FilesTotal != 1 {
		t.Fatalf("%+v: want a re-plan on the compacted table", rep)
	}
	if len(inserts) != 2 || len(inserts[0]) != 1 || inserts[0][0] != inserts[1][0] {
		t.Fatalf("insert files per attempt %v: the second attempt must reuse the first's", inserts)
	}
	live := false
	for _, f := range fx.latest().Files() {
		live = live || f.Path == inserts[0][0]
	}
	if !live {
		t.Fatalf("insert file %s is not live", inserts[0][0])
	}
	rows := fx.rows()
	if len(rows) != 101 {
		t.Fatalf("%d rows, want 101", len(rows))
	}
	want := table.CanonicalRow(types.Struct{int64(5), "five", int64(5), "b"})
	found := 0
	for _, r := range rows {
		if r == want {
			found++
		}
	}
	if found != 1 {
		t.Fatalf("updated row found %d times", found)
	}
}

// TestUpsert_RacingMetadataChangeFails: a concurrent metadata change fails the merge (retryable),
// nothing committed and no file of the merge left behind.
func TestUpsert_RacingMetadataChangeFails(t *testing.T) {
	fx := newFixture(t, nil, nil)
	threeRows(fx)
	o := Options{Mode: Upsert, Keys: []string{"id"}}
	o.beforeCommit = func(attempt int, _ []string) {
		if _, err := table.ApplyDeclaration(t.Context(), fx.tbl, table.Declaration{Properties: map[string]string{"owner": "someone"}}); err != nil {
			t.Fatal(err)
		}
	}
	before := fx.latest().Version()
	_, err := fx.tryMerge(fx.source(`{"id":2,"name":"two","v":2,"p":"b"}`, `{"id":9,"name":"n9","v":9,"p":"a"}`), o)
	var re *result.Error
	if !errors.As(err, &re) || re.Outcome != result.Failed || re.Reason != result.ReasonConflict || !errors.Is(err, delta.ErrMetadataChanged) {
		t.Fatalf("err = %v: want a Conflict failure for the metadata change", err)
	}
	if v := fx.latest().Version(); v != before+1 {
		t.Fatalf("version %d: only the metadata change may have committed", v)
	}
	fx.expectRows(row(1, 1, "a"), row(2, 2, "b"), row(3, 3, "a"))
	leftovers := 0
	_ = filepath.WalkDir(filepath.Join(fx.dir, "table"), func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			leftovers++
		}
		return nil
	})
	if leftovers != len(fx.latest().Files()) {
		t.Fatalf("%d data files on disk, %d live: the failed merge left files behind", leftovers, len(fx.latest().Files()))
	}
}

// TestUpsert_OneRowIntoManyFilesScansOne: a one-row upsert into a table of 200 files reads the key
// column of the one file whose range holds the key. (Peak RSS of the same on a 10M-row, 1000-file
// table: see the report of issue 13.)
func TestUpsert_OneRowIntoManyFilesScansOne(t *testing.T) {
	fx := newFixture(t, nil, nil)
	for f := range 200 {
		fx.appendFile(row(int64(f*10), 0, "a"), row(int64(f*10+9), 0, "a"))
	}
	rep := fx.merge(fx.source(`{"id":1009,"v":1}`), Options{Mode: Upsert, Keys: []string{"id"}})
	if rep.FilesTotal != 200 || rep.FilesScanned != 1 || rep.FilesTouched != 1 || rep.RowsUpdated != 1 {
		t.Fatalf("%+v", rep)
	}
}
