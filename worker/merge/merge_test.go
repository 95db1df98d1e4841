package merge

import (
	"errors"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// tenFiles fills the table with ids 0..99, ten clustered ids per file, v = id, p = "a"/"b" by parity.
func tenFiles(fx *fixture) []types.Struct {
	var all []types.Struct
	for f := range 10 {
		var rows []types.Struct
		for i := range 10 {
			id := int64(f*10 + i)
			rows = append(rows, row(id, id, []string{"a", "b"}[id%2]))
		}
		fx.appendFile(rows...)
		all = append(all, rows...)
	}
	return all
}

func replace(rows []types.Struct, id int64, r types.Struct) []types.Struct {
	out := []types.Struct{}
	for _, x := range rows {
		if x[0] != id {
			out = append(out, x)
		}
	}
	if r != nil {
		out = append(out, r)
	}
	return out
}

// TestUpsert_PrunesByKeyRangesAndUpdatesAndInserts: two updated keys in two of ten files and one new
// key: only the two files are scanned (binary search per file), the rows are replaced, the new
// key is inserted.
func TestUpsert_PrunesByKeyRangesAndUpdatesAndInserts(t *testing.T) {
	fx := newFixture(t, nil, nil)
	rows := tenFiles(fx)
	b := fx.source(`{"id":5,"name":"five","v":500,"p":"b"}`, `{"id":95,"name":"x","v":950,"p":"b"}`, `{"id":1000,"name":"new","v":1,"p":"a"}`)
	rep := fx.merge(b, Options{Mode: Upsert, Keys: []string{"id"}})
	rows = replace(rows, 5, types.Struct{int64(5), "five", int64(500), "b"})
	rows = replace(rows, 95, types.Struct{int64(95), "x", int64(950), "b"})
	rows = append(rows, types.Struct{int64(1000), "new", int64(1), "a"})
	fx.expectRows(rows...)
	if rep.FilesTotal != 10 || rep.FilesPrunedByStats != 8 || rep.FilesScanned != 2 || rep.FilesTouched != 2 {
		t.Fatalf("pruning %+v: want 10 files, 8 pruned by stats, 2 scanned and touched", rep)
	}
	if rep.RowsMatched != 2 || rep.RowsUpdated != 2 || rep.RowsInserted != 1 || rep.RowsDeleted != 0 || rep.Version != 11 {
		t.Fatalf("rows %+v", rep)
	}
}

// TestUpsert_KeysBetweenFileRangesPruneEveryFile: keys that fall in the gaps of a global min–max
// range touch no file (one global range would scan them all).
func TestUpsert_KeysBetweenFileRangesPruneEveryFile(t *testing.T) {
	fx := newFixture(t, nil, nil)
	for f := range 5 {
		fx.appendFile(row(int64(f*100), 0, "a"), row(int64(f*100+10), 0, "a"))
	}
	b := fx.source(`{"id":50,"v":1}`, `{"id":250,"v":1}`, `{"id":450,"v":1}`)
	rep := fx.merge(b, Options{Mode: Upsert, Keys: []string{"id"}})
	if rep.FilesPrunedByStats != 5 || rep.FilesScanned != 0 || rep.RowsInserted != 3 {
		t.Fatalf("%+v: keys between the files' ranges must prune all five", rep)
	}
}

// TestUpsert_NullKeysNeverMatch: a source row with a null key is inserted, never matched, even when
// the target holds a null key too.
func TestUpsert_NullKeysNeverMatch(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.appendFile(types.Struct{nil, "old", int64(1), "a"}, row(1, 1, "a"))
	b := fx.source(`{"id":null,"name":"new","v":2,"p":"a"}`, `{"name":"new2","v":3,"p":"a"}`)
	rep := fx.merge(b, Options{Mode: Upsert, Keys: []string{"id"}})
	fx.expectRows(types.Struct{nil, "old", int64(1), "a"}, row(1, 1, "a"), types.Struct{nil, "new", int64(2), "a"}, types.Struct{nil, "new2", int64(3), "a"})
	if rep.RowsMatched != 0 || rep.RowsInserted != 2 {
		t.Fatalf("%+v", rep)
	}
}

// TestUpsert_DuplicateKeys: two source rows matching one target row is an error naming the key and
// nothing is committed; with --order-by the greatest wins (the later on ties).
func TestUpsert_DuplicateKeys(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.appendFile(row(1, 1, "a"), row(2, 2, "a"))
	b := fx.source(`{"id":1,"v":10}`, `{"id":1,"v":30}`, `{"id":1,"v":20}`)
	_, err := fx.tryMerge(b, Options{Mode: Upsert, Keys: []string{"id"}})
	var re *result.Error
	if err == nil || !strings.Contains(err.Error(), "id=1") || !strings.Contains(err.Error(), "3 source rows") || !errors.As(err, &re) || re.Outcome != result.Refused {
		t.Fatalf("err = %v: want a refusal naming id=1", err)
	}
	if fx.latest().Version() != 1 {
		t.Fatal("a failed merge committed")
	}
	rep := fx.merge(b, Options{Mode: Upsert, Keys: []string{"id"}, OrderBy: "v"})
	fx.expectRows(types.Struct{int64(1), "n1", int64(30), "a"}, row(2, 2, "a"))
	if rep.SourceRowsDeduplicated != 2 || rep.RowsUpdated != 1 {
		t.Fatalf("%+v", rep)
	}
	// Ties: the later row wins.
	b = fx.source(`{"id":2,"name":"first","v":5}`, `{"id":2,"name":"second","v":5}`)
	fx.merge(b, Options{Mode: Upsert, Keys: []string{"id"}, OrderBy: "v"})
	fx.expectRows(types.Struct{int64(1), "n1", int64(30), "a"}, types.Struct{int64(2), "second", int64(5), "a"})
}

// TestUpsert_UnmatchedDuplicatesAreBothInserted: as Spark's MERGE, duplicates that match nothing are
// not an error (no target row is matched twice) and are inserted.
func TestUpsert_UnmatchedDuplicatesAreBothInserted(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.appendFile(row(1, 1, "a"))
	b := fx.source(`{"id":7,"v":1}`, `{"id":7,"v":2}`)
	rep := fx.merge(b, Options{Mode: Upsert, Keys: []string{"id"}})
	if rep.RowsInserted != 2 {
		t.Fatalf("%+v", rep)
	}
}

// TestUpsert_DeleteMarker: true markers delete the match and are never inserted; false and null
// markers upsert.
func TestUpsert_DeleteMarker(t *testing.T) {
	fx := newFixture(t, nil, nil)
	fx.appendFile(row(1, 1, "a"), row(2, 2, "a"), row(3, 3, "a"))
	b := fx.source(`{"id":1,"gone":true}`, `{"id":2,"v":20,"gone":false}`, `{"id":9,"gone":true}`, `{"id":10,"v":100}`)
	rep := fx.merge(b, Options{Mode: Upsert, Keys: []string{"id"}, DeleteColumn: "gone"})
	// The marker is a source-only column: never written; absent columns keep the target's values.
	fx.expectRows(types.Struct{int64(2), "n2", int64(20), "a"}, row(3, 3, "a"), types.Struct{int64(10), nil, int64(100), nil})
	if rep.RowsDeleted != 1 || rep.RowsUpdated != 1 || rep.RowsInserted != 1 || rep.RowsMatched != 2 {
		t.Fatalf("%+v", rep)
	}
}

// TestUpsert_AsIsWritesEachRowOnceAndTargetDuplicatesAgain: an upsert whose source rows carry every
// column is written as it is (stageUpsertAsIs), updated and inserted rows in one file; a key the
// target holds twice gets its source row written once per target row, as Spark's MERGE updates
// both; a refused merge leaves no file behind, the file written during the match included.
func TestUpsert_AsIsWritesEachRowOnceAndTargetDuplicatesAgain(t *testing.T) {
	// Deletion vectors: every added file holds new rows (no copy-on-write rewrite among them).
	fx := newFixture(t, nil, map[string]string{"delta.enableDeletionVectors": "true"})
	fx.appendFile(row(1, 1, "a"), row(2, 2, "a"))
	fx.appendFile(row(1, 1, "a"), row(3, 3, "a"))
	rep := fx.merge(fx.source(`{"id":1,"name":"one","v":10,"p":"a"}`, `{"id":2,"name":"two","v":20,"p":"a"}`, `{"id":9,"name":"nine","v":90,"p":"b"}`),
		Options{Mode: Upsert, Keys: []string{"id"}})
	one := types.Struct{int64(1), "one", int64(10), "a"}
	fx.expectRows(one, one, types.Struct{int64(2), "two", int64(20), "a"}, row(3, 3, "a"), types.Struct{int64(9), "nine", int64(90), "b"})
	if rep.RowsMatched != 3 || rep.RowsUpdated != 3 || rep.RowsInserted != 1 || rep.FilesAdded != 2 {
		t.Fatalf("%+v: want 3 target rows updated, 1 inserted, the batch's file and one more for id=1's second target row", rep)
	}
	rep = fx.merge(fx.source(`{"id":2,"name":"two!","v":21,"p":"a"}`, `{"id":10,"name":"ten","v":100,"p":"b"}`), Options{Mode: Upsert, Keys: []string{"id"}})
	if rep.RowsUpdated != 1 || rep.RowsInserted != 1 || rep.FilesAdded != 1 {
		t.Fatalf("%+v: want the updated and the inserted row in one new file", rep)
	}
	before := dataFiles(t, fx)
	if _, err := fx.tryMerge(fx.source(`{"id":3,"name":"x","v":1,"p":"a"}`, `{"id":3,"name":"y","v":2,"p":"a"}`), Options{Mode: Upsert, Keys: []string{"id"}}); err == nil {
		t.Fatal("two source rows matching id=3 merged")
	}
	if after := dataFiles(t, fx); !slices.Equal(before, after) {
		t.Fatalf("a refused merge left files: before %v, after %v", before, after)
	}
}

// dataFiles lists the table directory's Parquet files.
func dataFiles(t *testing.T, fx *fixture) []string {
	t.Helper()
	out, err := tabletest.ParquetFiles(filepath.Join(fx.dir, "table"))
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// TestRun_PlansFirstOnTheGivenSnapshotAndAgainWhenItIsStale: Options.Snapshot saves the first
// attempt a log replay; given a snapshot that a later append made stale, the merge still sees that
// append's rows (its commit conflicts, and the next attempt plans on the newest version).
func TestRun_PlansFirstOnTheGivenSnapshotAndAgainWhenItIsStale(t *testing.T) {
	fx := newFixture(t, nil, map[string]string{"delta.enableDeletionVectors": "true"})
	fx.appendFile(row(1, 1, "a"), row(2, 2, "a"))
	stale := fx.latest()
	fx.appendFile(row(3, 3, "a"))
	rep := fx.merge(fx.source(`{"id":3,"name":"three","v":30,"p":"a"}`, `{"id":4,"name":"four","v":40,"p":"a"}`),
		Options{Mode: Upsert, Keys: []string{"id"}, Snapshot: stale})
	fx.expectRows(row(1, 1, "a"), row(2, 2, "a"), types.Struct{int64(3), "three", int64(30), "a"}, types.Struct{int64(4), "four", int64(40), "a"})
	if rep.Attempts != 2 || rep.RowsUpdated != 1 || rep.RowsInserted != 1 {
		t.Fatalf("%+v: want a second attempt on the newest version, updating id 3 and inserting id 4", rep)
	}
	rep = fx.merge(fx.source(`{"id":5,"name":"five","v":50,"p":"a"}`), Options{Mode: Upsert, Keys: []string{"id"}, Snapshot: fx.latest()})
	if rep.Attempts != 1 || rep.RowsInserted != 1 {
		t.Fatalf("%+v: want one attempt on the given, current snapshot", rep)
	}
}
