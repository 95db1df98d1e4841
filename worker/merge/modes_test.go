package merge

import (
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func threeRows(fx *fixture) {
	fx.appendFile(row(1, 1, "a"), row(2, 2, "b"))
	fx.appendFile(row(3, 3, "a"))
}

// TestUpdate_TouchesMatchedRowsOnly: unmatched source rows are ignored.
func TestUpdate_TouchesMatchedRowsOnly(t *testing.T) {
	fx := newFixture(t, nil, nil)
	threeRows(fx)
	rep := fx.merge(fx.source(`{"id":2,"name":"two","v":20,"p":"b"}`, `{"id":9,"name":"nine","v":9,"p":"a"}`), Options{Mode: Update, Keys: []string{"id"}})
	fx.expectRows(row(1, 1, "a"), types.Struct{int64(2), "two", int64(20), "b"}, row(3, 3, "a"))
	if rep.RowsUpdated != 1 || rep.RowsInserted != 0 || rep.FilesScanned != 1 {
		t.Fatalf("%+v", rep)
	}
}

// TestDelete_DeletesMatchedRows: every matched row goes, whatever the other columns say.
func TestDelete_DeletesMatchedRows(t *testing.T) {
	fx := newFixture(t, nil, nil)
	threeRows(fx)
	rep := fx.merge(fx.source(`{"id":1}`, `{"id":3}`, `{"id":7}`), Options{Mode: Delete, Keys: []string{"id"}})
	fx.expectRows(row(2, 2, "b"))
	if rep.RowsDeleted != 2 || rep.RowsInserted != 0 || rep.FilesTouched != 2 {
		t.Fatalf("%+v", rep)
	}
}

// TestAppend_InsertsEveryRow: no keys, duplicates welcome.
func TestAppend_InsertsEveryRow(t *testing.T) {
	fx := newFixture(t, nil, nil)
	threeRows(fx)
	fx.merge(fx.source(`{"id":1,"name":"n1","v":1,"p":"a"}`), Options{Mode: Append})
	fx.expectRows(row(1, 1, "a"), row(1, 1, "a"), row(2, 2, "b"), row(3, 3, "a"))
}

// TestOverwriteAndTruncateInsert_ReplaceEveryRow, and delete-marked rows are not written.
func TestOverwriteAndTruncateInsert_ReplaceEveryRow(t *testing.T) {
	for _, mode := range []Mode{Overwrite, TruncateInsert} {
		t.Run(string(mode), func(t *testing.T) {
			fx := newFixture(t, nil, nil)
			threeRows(fx)
			rep := fx.merge(fx.source(`{"id":8,"name":"n8","v":8,"p":"a"}`, `{"id":9,"gone":true}`), Options{Mode: mode, DeleteColumn: "gone"})
			fx.expectRows(row(8, 8, "a"))
			if rep.RowsDeleted != 3 || rep.RowsInserted != 1 || rep.FilesRemoved != 2 {
				t.Fatalf("%+v", rep)
			}
		})
	}
}

// TestOverwrite_DynamicPartitions replaces only the partitions present in the batch.
func TestOverwrite_DynamicPartitions(t *testing.T) {
	fx := newFixture(t, []string{"p"}, nil)
	fx.appendFile(row(1, 1, "a"), row(2, 2, "b"), row(3, 3, "c"))
	rep := fx.merge(fx.source(`{"id":10,"name":"n10","v":10,"p":"b"}`, `{"id":11,"name":"n11","v":11,"p":"d"}`), Options{Mode: Overwrite, OverwriteScope: ScopePartitions})
	fx.expectRows(row(1, 1, "a"), row(3, 3, "c"), row(10, 10, "b"), row(11, 11, "d"))
	if rep.FilesRemoved != 1 || rep.RowsDeleted != 1 {
		t.Fatalf("%+v", rep)
	}
	unpart := newFixture(t, nil, nil)
	threeRows(unpart)
	if _, err := unpart.tryMerge(unpart.source(`{"id":1}`), Options{Mode: Overwrite, OverwriteScope: ScopePartitions}); err == nil || !strings.Contains(err.Error(), "not partitioned") {
		t.Fatalf("err = %v", err)
	}
}

// TestUpsert_PartitionedTarget: with the partition column in the key, files of other partitions
// are pruned by partition; --partition-pruning prunes by a non-key partition column.
func TestUpsert_PartitionedTarget(t *testing.T) {
	fx := newFixture(t, []string{"p"}, nil)
	for _, p := range []string{"a", "b", "c", "d"} {
		fx.appendFile(types.Struct{int64(1), "n1", int64(1), p}, types.Struct{int64(2), "n2", int64(2), p})
	}
	rep := fx.merge(fx.source(`{"id":1,"v":100,"p":"b"}`), Options{Mode: Upsert, Keys: []string{"id", "p"}})
	if rep.FilesPrunedByPartition != 3 || rep.FilesScanned != 1 || rep.RowsUpdated != 1 {
		t.Fatalf("%+v", rep)
	}
	// Partition b now holds two files (the copy and the updated row): four files are pruned.
	rep = fx.merge(fx.source(`{"id":2,"v":200,"p":"c"}`), Options{Mode: Upsert, Keys: []string{"id"}, PartitionPruning: []string{"p"}})
	if rep.FilesPrunedByPartition != 4 || rep.RowsUpdated != 1 {
		t.Fatalf("%+v", rep)
	}
	var rows []types.Struct
	for _, p := range []string{"a", "b", "c", "d"} {
		r1, r2 := types.Struct{int64(1), "n1", int64(1), p}, types.Struct{int64(2), "n2", int64(2), p}
		if p == "b" {
			r1[2] = int64(100)
		}
		if p == "c" {
			r2[2] = int64(200)
		}
		rows = append(rows, r1, r2)
	}
	fx.expectRows(rows...)
	if _, err := fx.tryMerge(fx.source(`{"id":1}`), Options{Mode: Upsert, Keys: []string{"id"}, PartitionPruning: []string{"v"}}); err == nil || !strings.Contains(err.Error(), "not a partition column") {
		t.Fatalf("err = %v", err)
	}
}

// A key that moves partition within one batch, deduplicated by --order-by: its older row names the
// partition its target row is in, so --partition-pruning must keep that partition, or the row is
// missed and the key inserted a second time (found by the DuckDB model, seed 1796193136788950957).
func TestUpsert_PartitionPruningKeepsThePartitionsOfDeduplicatedRows(t *testing.T) {
	fx := newFixture(t, []string{"p"}, nil)
	fx.appendFile(types.Struct{int64(1), "n1", int64(1), "a"})
	fx.appendFile(types.Struct{int64(2), "n2", int64(2), "b"})
	rep := fx.merge(fx.source(`{"id":1,"v":10,"p":"a"}`, `{"id":1,"v":11,"p":"c"}`),
		Options{Mode: Upsert, Keys: []string{"id"}, OrderBy: "v", PartitionPruning: []string{"p"}})
	if rep.RowsUpdated != 1 || rep.RowsInserted != 0 {
		t.Fatalf("%+v: want the row in partition a updated (moved to c), nothing inserted", rep)
	}
	fx.expectRows(types.Struct{int64(1), "n1", int64(11), "c"}, types.Struct{int64(2), "n2", int64(2), "b"})
}

// TestUpsert_PartitionChangeMovesTheRow: an update that changes the partition column moves the row.
func TestUpsert_PartitionChangeMovesTheRow(t *testing.T) {
	fx := newFixture(t, []string{"p"}, nil)
	fx.appendFile(row(1, 1, "a"), row(2, 2, "a"))
	fx.merge(fx.source(`{"id":1,"name":"n1","v":1,"p":"z"}`), Options{Mode: Upsert, Keys: []string{"id"}})
	fx.expectRows(row(1, 1, "z"), row(2, 2, "a"))
}

// TestUpsert_DeletionVectors: a DV table keeps its files and gets deletion vectors.
func TestUpsert_DeletionVectors(t *testing.T) {
	fx := newFixture(t, nil, map[string]string{"delta.enableDeletionVectors": "true"})
	tenFiles(fx)
	rep := fx.merge(fx.source(`{"id":5,"name":"x","v":0,"p":"b"}`, `{"id":17,"gone":true}`), Options{Mode: Upsert, Keys: []string{"id"}, DeleteColumn: "gone"})
	if rep.DVsWritten != 2 || rep.FilesRewritten != 0 || rep.RowsUpdated != 1 || rep.RowsDeleted != 1 {
		t.Fatalf("%+v", rep)
	}
	rows := fx.rows()
	if len(rows) != 99 {
		t.Fatalf("%d rows, want 99", len(rows))
	}
	// A second merge on the same file merges its existing DV.
	rep = fx.merge(fx.source(`{"id":6,"gone":true}`), Options{Mode: Upsert, Keys: []string{"id"}, DeleteColumn: "gone"})
	if rep.DVsWritten != 1 || len(fx.rows()) != 98 {
		t.Fatalf("%+v, %d rows", rep, len(fx.rows()))
	}
}

// TestUpsert_SchemaEvolution: addNewColumns adds the source's new column, old rows read null;
// failOnNewColumns refuses; none drops it.
func TestUpsert_SchemaEvolution(t *testing.T) {
	fx := newFixture(t, nil, nil)
	threeRows(fx)
	b := fx.source(`{"id":1,"name":"n1","v":1,"p":"a","extra":"e1"}`, `{"id":4,"name":"n4","v":4,"p":"a","extra":"e4"}`)
	if _, err := fx.tryMerge(b, Options{Mode: Upsert, Keys: []string{"id"}}); err == nil || !strings.Contains(err.Error(), "extra") {
		t.Fatalf("err = %v: want a refusal naming the column", err)
	}
	none := Options{Mode: Upsert, Keys: []string{"id"}}
	none.Format = jsonOptions(t, format.None)
	fx.merge(b, none)
	fx.expectRows(row(1, 1, "a"), row(2, 2, "b"), row(3, 3, "a"), row(4, 4, "a"))
	add := Options{Mode: Upsert, Keys: []string{"id"}}
	add.Format = jsonOptions(t, format.AddNewColumns)
	rep := fx.merge(b, add)
	if len(rep.SchemaChanges) != 1 || rep.SchemaChanges[0] != "extra" {
		t.Fatalf("%+v", rep)
	}
	fx.expectRows(append(row(1, 1, "a"), "e1"), append(row(2, 2, "b"), nil), append(row(3, 3, "a"), nil), append(row(4, 4, "a"), "e4"))
}

// TestUpsert_KeyMustExist: a key missing from the table or from a source file is refused by name.
func TestUpsert_KeyMustExist(t *testing.T) {
	fx := newFixture(t, nil, nil)
	threeRows(fx)
	if _, err := fx.tryMerge(fx.source(`{"id":1}`), Options{Mode: Upsert, Keys: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `"nope"`) {
		t.Fatalf("err = %v", err)
	}
	if _, err := fx.tryMerge(fx.source(`{"v":1}`), Options{Mode: Upsert, Keys: []string{"id"}}); err == nil || !strings.Contains(err.Error(), `"id" is missing from source file`) {
		t.Fatalf("err = %v", err)
	}
}

// TestMerge_TxnMakesItExactlyOnce: a batch at or below the committed one is a no-op.
func TestMerge_TxnMakesItExactlyOnce(t *testing.T) {
	fx := newFixture(t, nil, nil)
	threeRows(fx)
	b := fx.source(`{"id":10,"name":"n10","v":10,"p":"a"}`)
	o := Options{Mode: Upsert, Keys: []string{"id"}, AppID: "cdc", BatchID: 5}
	rep := fx.merge(b, o)
	if rep.AlreadyCommitted || rep.Version != 3 {
		t.Fatalf("%+v", rep)
	}
	for _, id := range []int64{5, 4} {
		o.BatchID = id
		if rep = fx.merge(b, o); !rep.AlreadyCommitted || fx.latest().Version() != 3 {
			t.Fatalf("batch %d: %+v", id, rep)
		}
	}
	fx.expectRows(row(1, 1, "a"), row(2, 2, "b"), row(3, 3, "a"), row(10, 10, "a"))
	if txn, ok := fx.latest().Txn("cdc"); !ok || txn.Version != 5 {
		t.Fatalf("txn %+v %v", txn, ok)
	}
}

// TestUpdate_NothingMatchedCommitsNothing: no row changes, no commit (unless a txn must be recorded).
func TestUpdate_NothingMatchedCommitsNothing(t *testing.T) {
	fx := newFixture(t, nil, nil)
	threeRows(fx)
	before := fx.latest().Version()
	if rep := fx.merge(fx.source(`{"id":77,"v":1}`), Options{Mode: Update, Keys: []string{"id"}}); rep.Version != -1 || fx.latest().Version() != before {
		t.Fatalf("%+v: nothing should have been committed", rep)
	}
	if rep := fx.merge(fx.source(`{"id":77,"v":1}`), Options{Mode: Update, Keys: []string{"id"}, AppID: "a", BatchID: 1}); rep.Version != int64(before)+1 {
		t.Fatalf("%+v: the txn must be committed", rep)
	}
}
