package delta

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// TestConflicts_EachRuleAgainstACraftedWinner builds a transaction on version 1, lets a crafted
// winning commit take version 2, and checks the conflict rules in Spark's order.
func TestConflicts_EachRuleAgainstACraftedWinner(t *testing.T) {
	const (
		blindAppend    = `{"commitInfo":{"operation":"WRITE","isBlindAppend":true}}`
		nonBlindWrite  = `{"commitInfo":{"operation":"MERGE","isBlindAppend":false}}`
		compaction     = `{"commitInfo":{"operation":"OPTIMIZE","isBlindAppend":false}}`
		addInA         = `{"add":{"path":"p=a/new.parquet","partitionValues":{"p":"a"},"size":1,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":1}"}}`
		addInC         = `{"add":{"path":"p=c/new.parquet","partitionValues":{"p":"c"},"size":1,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":1}"}}`
		removeF1       = `{"remove":{"path":"p=a/f1.parquet","deletionTimestamp":1,"dataChange":true}}`
		removeF1NoData = `{"remove":{"path":"p=a/f1.parquet","deletionTimestamp":1,"dataChange":false}}`
		removeF2       = `{"remove":{"path":"p=b/f2.parquet","deletionTimestamp":1,"dataChange":true}}`
	)
	inA := func(f *AddFile) bool { v, _ := f.PartitionValues.Get("p"); return v.Value == "a" }
	cases := []struct {
		name      string
		kind      Operation
		isolation string
		txn       func(tx *Transaction)
		winner    []string
		want      error // nil: the commit succeeds at version 3
	}{
		{"protocol change", OpAppend, "", appendOne, []string{blindAppend, `{"protocol":{"minReaderVersion":1,"minWriterVersion":3}}`}, ErrProtocolChanged},
		{"metadata change", OpAppend, "", appendOne, []string{blindAppend, metadataLine(t)}, ErrMetadataChanged},
		{"same domain written", OpMetadataChange, "", func(tx *Transaction) {
			must(t, tx.SetDomain("com.example", `{"x":1}`))
		}, []string{blindAppend, `{"domainMetadata":{"domain":"com.example","configuration":"{}","removed":false}}`}, ErrConcurrentTransaction},
		{"domain read", OpAppend, "", func(tx *Transaction) { tx.ReadDomain("delta.clustering"); appendOne(tx) },
			[]string{blindAppend, `{"domainMetadata":{"domain":"delta.clustering","configuration":"{}","removed":false}}`}, ErrConcurrentTransaction},
		{"other domain", OpMetadataChange, "", func(tx *Transaction) { must(t, tx.SetDomain("com.example", `{}`)) },
			[]string{blindAppend, `{"domainMetadata":{"domain":"com.other","configuration":"{}","removed":false}}`}, nil},
		{"txn app id", OpAppend, "", func(tx *Transaction) { tx.SetTxn("stream", 3); appendOne(tx) },
			[]string{blindAppend, `{"txn":{"appId":"stream","version":3}}`}, ErrConcurrentTransaction},
		{"other app id", OpAppend, "", func(tx *Transaction) { tx.SetTxn("stream", 3); appendOne(tx) },
			[]string{blindAppend, `{"txn":{"appId":"other","version":9}}`}, nil},
		{"non-blind add matches predicate", OpMerge, "", func(tx *Transaction) { tx.ReadWhere("p = 'a'", inA); appendOne(tx) },
			[]string{nonBlindWrite, addInA}, ErrConcurrentAppend},
		{"non-blind add outside predicate", OpMerge, "", func(tx *Transaction) { tx.ReadWhere("p = 'a'", inA); appendOne(tx) },
			[]string{nonBlindWrite, addInC}, nil},
		{"blind append matching predicate, WriteSerializable", OpMerge, "", func(tx *Transaction) { tx.ReadWhere("p = 'a'", inA); appendOne(tx) },
			[]string{blindAppend, addInA}, nil},
		{"blind append matching predicate, Serializable", OpMerge, "Serializable", func(tx *Transaction) { tx.ReadWhere("p = 'a'", inA); appendOne(tx) },
			[]string{blindAppend, addInA}, ErrConcurrentAppend},
		{"non-blind add, whole table read", OpMerge, "", func(tx *Transaction) { tx.ReadWholeTable(); appendOne(tx) },
			[]string{nonBlindWrite, addInC}, ErrConcurrentAppend},
		{"read file removed", OpMerge, "", func(tx *Transaction) { tx.ReadFiles(fileAt(tx, "p=a/f1.parquet")); appendOne(tx) },
			[]string{nonBlindWrite, removeF1}, ErrConcurrentDeleteRead},
		{"read file compacted away (dataChange=false counts)", OpMerge, "", func(tx *Transaction) { tx.ReadFiles(fileAt(tx, "p=a/f1.parquet")); appendOne(tx) },
			[]string{compaction, removeF1NoData, `{"add":{"path":"p=a/c.parquet","partitionValues":{"p":"a"},"size":1,"modificationTime":1,"dataChange":false}}`}, ErrConcurrentDeleteRead},
		{"compaction of unread files adding a file the predicate matches (only data changes count)", OpMerge, "", func(tx *Transaction) {
			tx.ReadWhere("p = 'a'", inA)
			appendOne(tx)
		}, []string{compaction, removeF2, `{"add":{"path":"p=a/c.parquet","partitionValues":{"p":"a"},"size":1,"modificationTime":1,"dataChange":false}}`}, nil},
		{"unread file removed", OpMerge, "", func(tx *Transaction) { tx.ReadFiles(fileAt(tx, "p=a/f1.parquet")); appendOne(tx) },
			[]string{nonBlindWrite, removeF2}, nil},
		{"whole table read, anything removed", OpMerge, "", func(tx *Transaction) { tx.ReadWholeTable(); appendOne(tx) },
			[]string{nonBlindWrite, removeF2}, ErrConcurrentDeleteRead},
		{"both remove the same file", OpMerge, "", func(tx *Transaction) { tx.Remove(true, fileAt(tx, "p=a/f1.parquet")) },
			[]string{nonBlindWrite, removeF1}, ErrConcurrentDeleteDelete},
		{"compaction vs blind append", OpRewrite, "", compactF1,
			[]string{blindAppend, addInA}, nil},
		{"compaction vs compaction of the same file", OpRewrite, "", compactF1,
			[]string{compaction, removeF1NoData}, ErrConcurrentDeleteDelete},
		{"append vs anything", OpAppend, "", appendOne,
			[]string{nonBlindWrite, removeF1, removeF2, addInA}, nil},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			b := testTable(t).Partitioned("p").Prop(PropCheckpointInterval, "1000")
			if c.isolation != "" {
				b.Prop(PropIsolationLevel, c.isolation)
			}
			if c.kind == OpMetadataChange {
				b.Protocol(Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{FeatureDomainMetadata}})
			}
			tbl, _ := b.Create()
			appendFiles(t, tbl, dataFile("p=a/f1.parquet", 10, "a"), dataFile("p=b/f2.parquet", 20, "b"))
			snap, err := tbl.Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := snap.Begin(c.kind, TxnOptions{Operation: "TEST", Retry: RetryPolicy{Backoff: noBackoff}})
			if err != nil {
				t.Fatal(err)
			}
			c.txn(tx)
			if err := tbl.Store().PutIfAbsent(ctx, CommitKey(2), []byte(strings.Join(c.winner, "\n")+"\n")); err != nil {
				t.Fatal(err)
			}
			res, err := tx.Commit(ctx)
			if c.want == nil {
				if err != nil {
					t.Fatalf("compatible winner: %v", err)
				}
				if res.Version != 3 || len(res.Winners) != 1 || res.Winners[0] != 2 {
					t.Fatalf("result %+v", res)
				}
				return
			}
			var ce *ConflictError
			if !errors.Is(err, c.want) || !errors.Is(err, ErrConcurrentModification) || !errors.As(err, &ce) || ce.WinnerVersion != 2 {
				t.Fatalf("err = %v, want %v from winner 2", err, c.want)
			}
			if _, err := tbl.Store().Stat(ctx, CommitKey(3)); err == nil {
				t.Fatal("a conflicting transaction still committed")
			}
		})
	}
}

func appendOne(tx *Transaction) { tx.Add(dataFile("p=a/mine.parquet", 1, "a")) }

func compactF1(tx *Transaction) {
	f := fileAt(tx, "p=a/f1.parquet")
	tx.ReadFiles(f)
	tx.Remove(false, f)
	out := dataFile("p=a/compacted.parquet", 10, "a")
	out.DataChange = false
	tx.Add(out)
}

func fileAt(tx *Transaction, path string) *AddFile {
	for _, f := range tx.Snapshot().Files() {
		if f.Path == path {
			return f
		}
	}
	panic("no file " + path)
}

func must(t *testing.T, err error) {
	t.Helper()
	if err != nil {
		t.Fatal(err)
	}
}

func noBackoff(int) (d timeDuration) { return 0 }

func metadataLine(t *testing.T) string {
	return fmt.Sprintf(`{"metaData":{"id":"x","format":{"provider":"parquet","options":{}},"schemaString":%q,"partitionColumns":["p"],"configuration":{"a":"b"}}}`,
		`{"type":"struct","fields":[{"name":"id","type":"long","nullable":true,"metadata":{}},{"name":"name","type":"string","nullable":true,"metadata":{}},{"name":"p","type":"string","nullable":true,"metadata":{}}]}`)
}

func TestConflicts_RetriesSucceedAfterSeveralCompatibleWinners(t *testing.T) {
	tbl, _ := testTable(t).Create()
	ctx := context.Background()
	snap, _ := tbl.Latest(ctx)
	tx, _ := snap.Begin(OpAppend, TxnOptions{Operation: "WRITE", Retry: RetryPolicy{Backoff: noBackoff}})
	tx.Add(dataFile("mine.parquet", 1))
	for i := 1; i <= 3; i++ {
		appendFiles(t, tbl, dataFile(fmt.Sprintf("w%d.parquet", i), 1))
	}
	res, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 4 || len(res.Winners) != 3 {
		t.Fatalf("result %+v", res)
	}
	latest, _ := tbl.Latest(ctx)
	if latest.NumFiles() != 4 {
		t.Fatalf("%d files", latest.NumFiles())
	}
}

func TestConflicts_RetryPolicyBoundsAttempts(t *testing.T) {
	tbl, _ := testTable(t).Create()
	ctx := context.Background()
	snap, _ := tbl.Latest(ctx)
	// A store on which every conditional write loses: the transaction must give up.
	losing := &alwaysLosingStore{Store: tbl.Store()}
	tx, _ := snap.Begin(OpAppend, TxnOptions{Operation: "WRITE", Retry: RetryPolicy{MaxAttempts: 3, Backoff: noBackoff}})
	tx.table = NewTable(losing)
	tx.Add(dataFile("mine.parquet", 1))
	_, err := tx.Commit(ctx)
	if !errors.Is(err, ErrCommitRetriesExhausted) || losing.calls != 3 {
		t.Fatalf("err = %v after %d attempts", err, losing.calls)
	}
}

func TestConflicts_ICTIsRebasedAboveTheWinner(t *testing.T) {
	b := testTable(t).Prop(PropEnableICT, "true")
	tbl, _ := b.Create()
	ctx := context.Background()
	snap, _ := tbl.Latest(ctx)
	tx, _ := snap.Begin(OpAppend, TxnOptions{Operation: "WRITE", Retry: RetryPolicy{Backoff: noBackoff}})
	tx.Add(dataFile("mine.parquet", 1))
	future := testEpoch.Add(24 * 3600e9).UnixMilli()
	winner := fmt.Sprintf(`{"commitInfo":{"inCommitTimestamp":%d,"timestamp":%d,"operation":"WRITE","isBlindAppend":true}}`, future, future)
	must(t, tbl.Store().PutIfAbsent(ctx, CommitKey(1), []byte(winner+"\n")))
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if ci := commitInfoOf(t, tbl, 2); ci.InCommitTimestamp == nil || *ci.InCommitTimestamp != future+1 {
		t.Fatalf("rebased ICT %v, want %d", ci.InCommitTimestamp, future+1)
	}
}
