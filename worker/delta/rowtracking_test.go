package delta

import (
	"context"
	"strings"
	"testing"
)

func TestRowTracking_NewFilesGetFreshIDsAboveTheHighWaterMark(t *testing.T) {
	tbl, snap := testTable(t).Prop(PropEnableRowTracking, "true").Create()
	ctx := context.Background()
	p := snap.Protocol()
	if !p.HasWriterFeature(FeatureRowTracking) || !p.HasWriterFeature(FeatureDomainMetadata) {
		t.Fatalf("protocol %+v", p)
	}
	rt, _ := snap.RowTracking()
	if !rt.Enabled || rt.MaterializedRowIDColumn == "" || rt.MaterializedRowCommitVersionColumn == "" || rt.HighWaterMark != -1 {
		t.Fatalf("row tracking %+v", rt)
	}
	caller := dataFile("a.parquet", 10)
	appendFiles(t, tbl, caller, dataFile("b.parquet", 5))
	if caller.BaseRowID != nil {
		t.Fatal("the transaction modified the caller's AddFile")
	}
	s1, _ := tbl.Latest(ctx)
	checkRowIDs(t, s1, map[string][2]int64{"a.parquet": {0, 1}, "b.parquet": {10, 1}}, 14)

	// A transaction that loses the race to another append is rebased above the winner's ids.
	tx, _ := s1.Begin(OpAppend, TxnOptions{Operation: "WRITE", Retry: RetryPolicy{Backoff: noBackoff}})
	tx.Add(dataFile("mine.parquet", 3))
	appendFiles(t, tbl, dataFile("winner.parquet", 4))
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	s3, _ := tbl.Latest(ctx)
	checkRowIDs(t, s3, map[string][2]int64{"winner.parquet": {15, 2}, "mine.parquet": {19, 3}}, 21)
}

func TestRowTracking_RewriteMustDeclarePreservation(t *testing.T) {
	tbl, _ := testTable(t).Prop(PropEnableRowTracking, "true").Create()
	appendFiles(t, tbl, dataFile("a.parquet", 10))
	ctx := context.Background()
	snap, _ := tbl.Latest(ctx)
	compact := func(preserved bool) error {
		tx, err := snap.Begin(OpRewrite, TxnOptions{Operation: "OPTIMIZE", RowTrackingPreserved: preserved, NoAutoCheckpoint: true})
		if err != nil {
			return err
		}
		tx.Remove(false, snap.Files()...)
		out := dataFile("c.parquet", 10)
		out.DataChange = false
		tx.Add(out)
		_, err = tx.Commit(ctx)
		return err
	}
	if err := compact(false); err == nil || !strings.Contains(err.Error(), "RowTrackingPreserved") {
		t.Fatalf("undeclared preservation: err = %v", err)
	}
	if err := compact(true); err != nil {
		t.Fatal(err)
	}
	if ci := commitInfoOf(t, tbl, 2); ci.Tags["delta.rowTracking.preserved"] != "true" {
		t.Fatalf("commitInfo tags %v", ci.Tags)
	}
	// The rewritten file gets a fresh id range; preserved ids live in the materialized column.
	s2, _ := tbl.Latest(ctx)
	checkRowIDs(t, s2, map[string][2]int64{"c.parquet": {10, 2}}, 19)
	if id, err := PreservedRowID(snap.Files()[0], 7, nil); err != nil || id != 7 {
		t.Fatalf("preserved id %d %v", id, err)
	}
	if id, _ := PreservedRowID(snap.Files()[0], 7, int64(3)); id != 3 {
		t.Fatalf("materialized id not preferred: %d", id)
	}
}

// DML keeps row ids in the materialized columns, which Create names; without them the gate refuses
// (gate_test.go, "row tracking enabled").
func TestRowTracking_MergeIsAllowedWhenTheMaterializedColumnsAreNamed(t *testing.T) {
	_, snap := testTable(t).Prop(PropEnableRowTracking, "true").Create()
	if _, err := snap.Begin(OpMerge, TxnOptions{Operation: "MERGE"}); err != nil {
		t.Fatalf("err = %v", err)
	}
}

func checkRowIDs(t *testing.T, s *Snapshot, want map[string][2]int64, hwm int64) {
	t.Helper()
	for path, w := range want {
		f, ok := s.livePath(path)
		if !ok {
			t.Fatalf("%s not live", path)
		}
		if f.BaseRowID == nil || *f.BaseRowID != w[0] || f.DefaultRowCommitVersion == nil || *f.DefaultRowCommitVersion != w[1] {
			t.Errorf("%s: baseRowId %v defaultRowCommitVersion %v, want %d/%d", path, f.BaseRowID, f.DefaultRowCommitVersion, w[0], w[1])
		}
	}
	rt, err := s.RowTracking()
	if err != nil || rt.HighWaterMark != hwm {
		t.Errorf("high-water mark %d (%v), want %d", rt.HighWaterMark, err, hwm)
	}
}

func TestRowTracking_WithoutAMarkFreshIDsStartAboveTheFilesIDs(t *testing.T) {
	// A writer that assigned ids but recorded no high-water mark: the mark comes from the files.
	tbl, _ := testTable(t).Prop(PropEnableRowTracking, "true").Create()
	ctx := context.Background()
	raw := `{"add":{"path":"foreign.parquet","partitionValues":{},"size":100,"modificationTime":1,"dataChange":true,` +
		`"stats":"{\"numRecords\":7}","baseRowId":100,"defaultRowCommitVersion":1}}` + "\n"
	if err := tbl.Store().PutIfAbsent(ctx, CommitKey(1), []byte(raw)); err != nil {
		t.Fatal(err)
	}
	s1, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if rt, err := s1.RowTracking(); err != nil || rt.HighWaterMark != 106 {
		t.Fatalf("high-water mark %d (%v), want 106 from the file's ids 100..106", rt.HighWaterMark, err)
	}
	appendFiles(t, tbl, dataFile("mine.parquet", 3))
	s2, _ := tbl.Latest(ctx)
	checkRowIDs(t, s2, map[string][2]int64{"mine.parquet": {107, 2}}, 109)

	// Our commit recorded the mark, so from now on it is the domain's.
	if _, ok := s2.domains[DomainRowTracking]; !ok {
		t.Fatal("the append recorded no high-water mark")
	}

	// Ids that cannot be sized leave the mark unknown: nothing is assigned.
	tbl2, _ := testTable(t).Prop(PropEnableRowTracking, "true").Create()
	raw = `{"add":{"path":"unsized.parquet","partitionValues":{},"size":100,"modificationTime":1,"dataChange":true,"baseRowId":500}}` + "\n"
	if err := tbl2.Store().PutIfAbsent(ctx, CommitKey(1), []byte(raw)); err != nil {
		t.Fatal(err)
	}
	u1, _ := tbl2.Latest(ctx)
	if _, err := u1.RowTracking(); err == nil || !strings.Contains(err.Error(), "unsized.parquet") {
		t.Fatalf("unsized ids: err = %v", err)
	}
	tx, err := u1.Begin(OpAppend, TxnOptions{Operation: "WRITE"})
	if err == nil {
		tx.Add(dataFile("new.parquet", 1))
		_, err = tx.Commit(ctx)
	}
	if err == nil {
		t.Fatal("an append to a table whose assigned ids are unknown committed")
	}
	if u, _ := tbl2.Latest(ctx); u.Version() != 1 {
		t.Fatalf("version %d after the refused append", u.Version())
	}
}
