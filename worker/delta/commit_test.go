package delta

import (
	"context"
	"encoding/json"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/version"
)

func TestCommit_AppendWritesNextVersionWithTruthfulCommitInfo(t *testing.T) {
	tbl, _ := testTable(t).Partitioned("p").Create()
	res := appendFiles(t, tbl, dataFile("p=a/f1.parquet", 10, "a"), dataFile("p=b/f2.parquet", 5, "b"))
	if res.Version != 1 || res.Attempts != 1 {
		t.Fatalf("result %+v", res)
	}
	actions := readCommit(t, tbl, 1)
	if actions[0].CommitInfo == nil {
		t.Fatal("commitInfo is not the first action")
	}
	ci := actions[0].CommitInfo
	if ci.Operation != "WRITE" || !ci.BlindAppend() || ci.EngineInfo != version.EngineInfo() || ci.TxnID == "" ||
		ci.ReadVersion == nil || *ci.ReadVersion != 0 || ci.Timestamp == nil || *ci.Timestamp != testEpoch.UnixMilli() {
		t.Fatalf("commitInfo %s", ci.Raw)
	}
	if ci.OperationMetrics["numAddedFiles"] != "2" || ci.OperationMetrics["numOutputRows"] != "15" {
		t.Fatalf("metrics %v", ci.OperationMetrics)
	}
	snap, err := tbl.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if snap.Version() != 1 || snap.NumFiles() != 2 || snap.CommitInfo().TxnID != ci.TxnID {
		t.Fatalf("snapshot v%d with %d files", snap.Version(), snap.NumFiles())
	}
	if v, err := snap.PartitionValue(snap.Files()[1], "p"); err != nil || v != "b" {
		t.Fatalf("partition value %v %v", v, err)
	}
}

func TestCommit_RewriteIsNotBlindAndRemovesCarryExtendedMetadata(t *testing.T) {
	tbl, _ := testTable(t).Create()
	appendFiles(t, tbl, dataFile("a.parquet", 3), dataFile("b.parquet", 4))
	mustCommit(t, tbl, OpRewrite, "OPTIMIZE", func(tx *Transaction) {
		in := tx.Snapshot().Files()
		tx.ReadFiles(in...)
		tx.Remove(false, in...)
		out := dataFile("c.parquet", 7)
		out.DataChange = false
		tx.Add(out)
	})
	actions := readCommit(t, tbl, 2)
	if actions[0].CommitInfo.BlindAppend() {
		t.Fatal("a rewrite claimed to be a blind append")
	}
	var removes int
	for _, a := range actions {
		if r := a.Remove; r != nil {
			removes++
			if r.DataChange || r.ExtendedFileMetadata == nil || !*r.ExtendedFileMetadata || r.Size == nil || r.PartitionValues == nil || r.Stats == "" || r.DeletionTimestamp == nil {
				t.Fatalf("remove %+v lacks extended file metadata", r)
			}
		}
	}
	if removes != 2 {
		t.Fatalf("%d removes", removes)
	}
	snap, _ := tbl.Latest(context.Background())
	if snap.NumFiles() != 1 || len(snap.Tombstones()) != 2 {
		t.Fatalf("%d files, %d tombstones", snap.NumFiles(), len(snap.Tombstones()))
	}
}

func TestCommit_RefusesCommitsThatWouldCorruptTheTable(t *testing.T) {
	tbl, _ := testTable(t).Partitioned("p").Create()
	appendFiles(t, tbl, dataFile("p=a/f1.parquet", 10, "a"))
	ctx := context.Background()
	cases := []struct {
		name string
		kind Operation
		fill func(tx *Transaction)
		want string
	}{
		{"rewrite loses rows", OpRewrite, func(tx *Transaction) {
			tx.Remove(false, tx.Snapshot().Files()...)
			f := dataFile("p=a/g.parquet", 9, "a")
			f.DataChange = false
			tx.Add(f)
		}, "hold 9 rows but the removed files held 10"},
		{"rewrite with dataChange", OpRewrite, func(tx *Transaction) {
			tx.Remove(false, tx.Snapshot().Files()...)
			tx.Add(dataFile("p=a/g.parquet", 10, "a"))
		}, "dataChange=false"},
		{"append removes", OpAppend, func(tx *Transaction) { tx.Remove(true, tx.Snapshot().Files()...) }, "may not remove"},
		{"duplicate add", OpAppend, func(tx *Transaction) {
			tx.Add(dataFile("p=a/x.parquet", 1, "a"), dataFile("p=a/x.parquet", 1, "a"))
		}, "added twice"},
		{"missing partition value", OpAppend, func(tx *Transaction) { tx.Add(dataFile("x.parquet", 1)) }, "partition values"},
		{"DV without numRecords", OpAppend, func(tx *Transaction) {
			f := dataFile("p=a/x.parquet", 1, "a")
			f.Stats = ""
			f.DeletionVector = &DeletionVectorDescriptor{StorageType: "i", PathOrInlineDv: "wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L", SizeInBytes: 40, Cardinality: 6}
			tx.Add(f)
		}, "numRecords"},
		{"remove a file that is not live", OpMerge, func(tx *Transaction) {
			tx.Remove(true, dataFile("p=a/ghost.parquet", 1, "a"))
		}, "not live"},
		{"path escapes the table", OpAppend, func(tx *Transaction) { tx.Add(dataFile("../x.parquet", 1, "a")) }, "escapes"},
		{"empty", OpAppend, func(tx *Transaction) {}, "no actions"},
	}
	snap, _ := tbl.Latest(ctx)
	for _, c := range cases {
		tx, err := snap.Begin(c.kind, TxnOptions{Operation: c.name})
		if err != nil {
			t.Fatal(err)
		}
		c.fill(tx)
		if _, err := tx.Commit(ctx); err == nil || !strings.Contains(err.Error(), c.want) {
			t.Errorf("%s: err = %v, want mention of %q", c.name, err, c.want)
		}
	}
	if latest, _ := tbl.Latest(ctx); latest.Version() != 1 {
		t.Fatalf("a refused commit was written: version %d", latest.Version())
	}
}

func TestCommit_AppendOnlyTableRefusesDataRemovalButAllowsCompaction(t *testing.T) {
	tbl, _ := testTable(t).Prop(PropAppendOnly, "true").Create()
	appendFiles(t, tbl, dataFile("a.parquet", 2), dataFile("b.parquet", 3))
	snap, _ := tbl.Latest(context.Background())
	if _, err := snap.Begin(OpMerge, TxnOptions{Operation: "MERGE"}); !errors.Is(err, ErrUnsupportedTable) {
		t.Fatalf("merge on appendOnly: err = %v", err)
	}
	mustCommit(t, tbl, OpRewrite, "OPTIMIZE", func(tx *Transaction) {
		tx.Remove(false, tx.Snapshot().Files()...)
		f := dataFile("c.parquet", 5)
		f.DataChange = false
		tx.Add(f)
	})
}

func TestCommit_IdempotentTxnIsRecordedAndVisible(t *testing.T) {
	tbl, _ := testTable(t).Create()
	mustCommit(t, tbl, OpAppend, "STREAMING UPDATE", func(tx *Transaction) {
		if _, ok := tx.ReadTxn("stream-1"); ok {
			t.Fatal("unexpected txn")
		}
		tx.SetTxn("stream-1", 7)
		tx.Add(dataFile("a.parquet", 1))
	})
	snap, _ := tbl.Latest(context.Background())
	if txn, ok := snap.Txn("stream-1"); !ok || txn.Version != 7 || txn.LastUpdated == nil {
		t.Fatalf("txn %+v %v", txn, ok)
	}
	if commitInfoOf(t, tbl, 1).BlindAppend() != true {
		t.Fatal("an append with a txn marker is still a blind append")
	}
}

func TestCommit_InCommitTimestampsAreMonotonic(t *testing.T) {
	b := testTable(t).Prop(PropEnableICT, "true")
	tbl, snap := b.Create()
	ict0, ok := snap.InCommitTimestamp()
	if !ok || ict0 != testEpoch.UnixMilli() {
		t.Fatalf("create ICT %d %v", ict0, ok)
	}
	if !snap.Protocol().HasWriterFeature(FeatureInCommitTimestamp) {
		t.Fatalf("protocol %+v lacks inCommitTimestamp", snap.Protocol())
	}
	// The clock goes backwards: the next ICT must still exceed the previous one.
	b.clock.Set(testEpoch.Add(-time.Hour))
	appendFiles(t, tbl, dataFile("a.parquet", 1))
	ci := commitInfoOf(t, tbl, 1)
	if ci.InCommitTimestamp == nil || *ci.InCommitTimestamp != ict0+1 {
		t.Fatalf("ICT after clock skew = %v, want %d", ci.InCommitTimestamp, ict0+1)
	}
	if first := readCommit(t, tbl, 1)[0]; first.CommitInfo == nil {
		t.Fatal("commitInfo is not the first action of an ICT table commit")
	}
	b.clock.Set(testEpoch.Add(time.Hour))
	appendFiles(t, tbl, dataFile("b.parquet", 1))
	latest, _ := tbl.Latest(context.Background())
	if got, _ := latest.InCommitTimestamp(); got != testEpoch.Add(time.Hour).UnixMilli() || !latest.Timestamp().Equal(testEpoch.Add(time.Hour)) {
		t.Fatalf("ICT %d, timestamp %v", got, latest.Timestamp())
	}
}

func TestCommit_UnknownOutcomeIsResolvedByLookingAtTheLog(t *testing.T) {
	tbl, _ := testTable(t).Create()
	flaky := &flakyStore{Store: tbl.Store(), failAfterWrite: 1}
	tbl2 := NewTable(flaky, WithClock(newFakeClock(testEpoch)))
	res := appendFiles(t, tbl2, dataFile("a.parquet", 1))
	if res.Version != 1 || res.Attempts != 1 {
		t.Fatalf("result %+v", res)
	}
	snap, _ := tbl.Latest(context.Background())
	if snap.Version() != 1 || snap.NumFiles() != 1 {
		t.Fatalf("v%d %d files", snap.Version(), snap.NumFiles())
	}
}

func TestCommitInfo_WrittenJSONUsesSparkShapes(t *testing.T) {
	tbl, _ := testTable(t).Create()
	mustCommit(t, tbl, OpAppend, "WRITE", func(tx *Transaction) {
		tx.SetMetric("numOutputRows", 42)
		tx.SetTag("source", "test")
		tx.Add(dataFile("a.parquet", 42))
	})
	var raw map[string]json.RawMessage
	if err := json.Unmarshal(commitInfoOf(t, tbl, 1).Raw, &raw); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{"timestamp", "operation", "operationParameters", "readVersion", "isolationLevel", "isBlindAppend", "operationMetrics", "engineInfo", "txnId"} {
		if _, ok := raw[k]; !ok {
			t.Errorf("commitInfo lacks %s", k)
		}
	}
	if string(raw["operationMetrics"]) == "" || !strings.Contains(string(raw["operationMetrics"]), `"numOutputRows":"42"`) {
		t.Errorf("operationMetrics %s: values must be strings", raw["operationMetrics"])
	}
}

func TestCommit_AmbiguousFailureIsReportedAsUnknownOutcome(t *testing.T) {
	tbl, _ := testTable(t).Create()
	ctx := context.Background()
	blind := &blindStore{Store: tbl.Store()}
	other := NewTable(blind, WithClock(newFakeClock(testEpoch)))
	snap, err := other.Latest(ctx)
	must(t, err)
	tx, _ := snap.Begin(OpAppend, TxnOptions{Operation: "WRITE"})
	tx.Add(dataFile("a.parquet", 1))
	blind.failing = true
	_, err = tx.Commit(ctx)
	var unknown *CommitOutcomeUnknownError
	if !errors.Is(err, ErrCommitOutcomeUnknown) || !errors.As(err, &unknown) || unknown.TxnID != tx.TxnID() {
		t.Fatalf("err = %v", err)
	}
	// The write did land; FindCommit tells.
	v, found, err := tbl.FindCommit(ctx, unknown.TxnID, 1)
	if err != nil || !found || v != 1 {
		t.Fatalf("FindCommit = %d %v %v", v, found, err)
	}
	if _, found, _ := tbl.FindCommit(ctx, "no-such-txn", 0); found {
		t.Fatal("found a transaction that never committed")
	}
}
