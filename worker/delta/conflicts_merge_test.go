package delta

import (
	"context"
	"errors"
	"strings"
	"testing"
)

// TestReadKeysWhere_BlindAppendOfAKeyConflicts: a MERGE's key predicate conflicts with a concurrent
// blind append of a file that may hold a key, under the default WriteSerializable, while an append
// elsewhere and a plain ReadWhere keep Spark's rule (blind appends are compatible).
func TestReadKeysWhere_BlindAppendOfAKeyConflicts(t *testing.T) {
	const (
		blindAppend = `{"commitInfo":{"operation":"WRITE","isBlindAppend":true}}`
		addInA      = `{"add":{"path":"p=a/new.parquet","partitionValues":{"p":"a"},"size":1,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":1}"}}`
		addInC      = `{"add":{"path":"p=c/new.parquet","partitionValues":{"p":"c"},"size":1,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":1}"}}`
	)
	inA := func(f *AddFile) bool { v, _ := f.PartitionValues.Get("p"); return v.Value == "a" }
	cases := []struct {
		name   string
		read   func(tx *Transaction)
		winner string
		want   error
	}{
		{"key predicate, blind append of a matching file", func(tx *Transaction) { tx.ReadKeysWhere("keys in p = 'a'", inA) }, addInA, ErrConcurrentAppend},
		{"key predicate, blind append elsewhere", func(tx *Transaction) { tx.ReadKeysWhere("keys in p = 'a'", inA) }, addInC, nil},
		{"plain predicate, blind append of a matching file", func(tx *Transaction) { tx.ReadWhere("p = 'a'", inA) }, addInA, nil},
	}
	ctx := context.Background()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			tbl, _ := testTable(t).Partitioned("p").Prop(PropCheckpointInterval, "1000").Create()
			appendFiles(t, tbl, dataFile("p=a/f1.parquet", 10, "a"), dataFile("p=b/f2.parquet", 20, "b"))
			snap, err := tbl.Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			tx, err := snap.Begin(OpMerge, TxnOptions{Operation: "MERGE", Retry: RetryPolicy{Backoff: noBackoff}})
			if err != nil {
				t.Fatal(err)
			}
			c.read(tx)
			appendOne(tx)
			if err := tbl.Store().PutIfAbsent(ctx, CommitKey(2), []byte(strings.Join([]string{blindAppend, c.winner}, "\n")+"\n")); err != nil {
				t.Fatal(err)
			}
			res, err := tx.Commit(ctx)
			if c.want == nil {
				if err != nil || res.Version != 3 {
					t.Fatalf("compatible winner: %v %+v", err, res)
				}
				return
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("err = %v, want %v", err, c.want)
			}
			if _, err := tbl.Store().Stat(ctx, CommitKey(3)); err == nil {
				t.Fatal("a conflicting merge still committed")
			}
		})
	}
}
