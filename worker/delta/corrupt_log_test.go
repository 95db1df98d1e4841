package delta

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"testing"
)

// threeAppends makes a table with commits 0..3 (three files) and returns it.
func threeAppends(t *testing.T) *Table {
	tbl, _ := testTable(t).Prop(PropCheckpointInterval, "1000").Create()
	for i := 1; i <= 3; i++ {
		appendFiles(t, tbl, dataFile(fmt.Sprintf("f%d.parquet", i), 1))
	}
	return tbl
}

// TestLoad_UnreadableLastCommitIsCorruptionNamingTheFile: an empty, blank, garbage or truncated
// commit file is never an empty commit. Latest refuses naming the file; versions below it stay
// readable.
func TestLoad_UnreadableLastCommitIsCorruptionNamingTheFile(t *testing.T) {
	ctx := context.Background()
	add := `{"add":{"path":"g.parquet","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true}}`
	for _, c := range []struct{ name, content, want string }{
		{"zero bytes", "", "has no actions (0 bytes)"},
		{"blank lines only", "\n  \n\n", "has no actions (5 bytes)"},
		{"garbage", "\x00\x01not json at all", "line 1: invalid action"},
		{"truncated last line", `{"commitInfo":{"operation":"WRITE"}}` + "\n" + add[:40], "line 2: invalid action"},
		{"an array instead of an action", "[1,2]\n", "line 1: invalid action"},
		{"two actions on one line", add + add + "\n", "line 1: invalid action"},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := threeAppends(t)
			must(t, tbl.Store().PutIfAbsent(ctx, CommitKey(4), []byte(c.content)))
			_, err := tbl.Latest(ctx)
			if !errors.Is(err, ErrCorruptTable) || !strings.Contains(err.Error(), "00000000000000000004.json") || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("Latest: err = %v, want ErrCorruptTable naming commit 4 and %q", err, c.want)
			}
			if _, err := tbl.State(ctx, NoVersion); !errors.Is(err, ErrCorruptTable) {
				t.Fatalf("State: err = %v", err)
			}
			snap, err := tbl.At(ctx, 3)
			if err != nil || snap.NumFiles() != 3 {
				t.Fatalf("At(3) below the bad commit: %v", err)
			}
			// A writer racing onto the bad version must not take it for a compatible empty winner.
			tx, err := snap.Begin(OpAppend, TxnOptions{Operation: "WRITE", NoAutoCheckpoint: true})
			must(t, err)
			tx.Add(dataFile("late.parquet", 1))
			if _, err := tx.Commit(ctx); !errors.Is(err, ErrCorruptTable) {
				t.Fatalf("commit over a corrupt winner: err = %v", err)
			}
		})
	}
}

// TestLoad_CorruptCommitBelowACheckpointDoesNotMatter: the checkpoint stands for it.
func TestLoad_CorruptCommitBelowACheckpointDoesNotMatter(t *testing.T) {
	ctx := context.Background()
	tbl := threeAppends(t)
	snap, err := tbl.Latest(ctx)
	must(t, err)
	must(t, tbl.Checkpoint(ctx, snap))
	must(t, tbl.Store().Put(ctx, CommitKey(2), nil))
	if s, err := tbl.Latest(ctx); err != nil || s.NumFiles() != 3 {
		t.Fatalf("latest: %v", err)
	}
	if _, err := tbl.At(ctx, 2); !errors.Is(err, ErrCorruptTable) {
		t.Fatalf("At(2), which needs the bad commit: err = %v", err)
	}
}

func TestDecodeLogFile_LongLinesAreStreamedLikeShortOnes(t *testing.T) {
	huge := strings.Repeat("x", commitInfoFieldLimit+1) // a line far longer than the read buffer
	ci := `{"commitInfo":{"timestamp":7,"operation":"WRITE","operationParameters":{"predicate":"` + huge + `","mode":"Append"},"txnId":"t-1","isBlindAppend":true,"engineInfo":"e\"` + huge + `\\"}}`
	add := `{"add":{"path":"a.parquet","partitionValues":{"p":"1"},"size":3,"modificationTime":4,"dataChange":true,"stats":"{\"numRecords\":2,\"pad\":\"` + huge + `\"}"}}`
	content := ci + "\n" + add + "\n" + `{"cdc":{"path":"` + huge + `"}}` + "\n" + `{"remove":{"path":"b.parquet","dataChange":true}}`
	actions, err := parseActions("x.json", []byte(content))
	if err != nil {
		t.Fatal(err)
	}
	if len(actions) != 4 || *actions[2] != (Action{}) {
		t.Fatalf("%d actions", len(actions))
	}
	got := actions[0].CommitInfo
	if got == nil || got.TxnID != "t-1" || !got.BlindAppend() || *got.Timestamp != 7 || got.Operation != "WRITE" {
		t.Fatalf("commitInfo %v", got != nil)
	}
	// The oversized free-form fields were dropped whole, the small ones kept.
	if got.OperationParameters != nil || got.EngineInfo != "" {
		t.Fatalf("operationParameters %d/%q, engineInfo of %d bytes", len(got.OperationParameters["predicate"]), got.OperationParameters["mode"], len(got.EngineInfo))
	}
	a := actions[1].Add
	if a == nil || a.Path != "a.parquet" || a.Size != 3 || len(a.Stats) < 3*logLineBuffer {
		t.Fatalf("add of %d bytes of stats", len(a.Stats))
	}
	if actions[3].Remove == nil || actions[3].Remove.Path != "b.parquet" {
		t.Fatalf("remove %+v", actions[3])
	}
	for _, bad := range []string{
		ci[:len(ci)-1],          // ends inside the action
		ci + "x",                // text after it
		add[:len(add)-2] + "]}", // mismatched bracket
		strings.Replace(ci, `"timestamp":7`, `"timestamp":7x`, 1), // bad literal
	} {
		if _, err := parseActions("x.json", []byte(bad)); !errors.Is(err, ErrCorruptTable) || !strings.Contains(err.Error(), "x.json line 1") {
			t.Errorf("malformed long line: err = %.300v", err)
		}
	}
}

// TestLoad_EmptyCheckpointIsCorruption: a 0-byte checkpoint is skipped when the commits allow
// it, and otherwise refused as corruption naming the file.
func TestLoad_EmptyCheckpointIsCorruption(t *testing.T) {
	ctx := context.Background()
	tbl := tenCommits(t)
	must(t, tbl.Store().Put(ctx, ClassicCheckpointKey(5), nil))
	if snap, err := tbl.Latest(ctx); err != nil || snap.NumFiles() != 10 || snap.CheckpointVersion() != NoVersion {
		t.Fatalf("with the commits before it: %v", err)
	}
	for v := 0; v < 5; v++ {
		must(t, tbl.Store().Delete(ctx, CommitKey(Version(v))))
	}
	_, err := tbl.Latest(ctx)
	if !errors.Is(err, ErrCorruptTable) || !strings.Contains(err.Error(), ClassicCheckpointKey(5)+" is empty") || !strings.Contains(err.Error(), tbl.Location()) {
		t.Fatalf("err = %v", err)
	}
}
