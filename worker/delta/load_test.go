package delta

import (
	"context"
	"fmt"
	"strings"
	"testing"
)

// tenCommits makes a table with commits 0..10 (10 files) and a checkpoint at 5.
func tenCommits(t *testing.T) *Table {
	tbl, _ := testTable(t).Prop(PropCheckpointInterval, "1000").Create()
	ctx := context.Background()
	for i := 1; i <= 10; i++ {
		appendFiles(t, tbl, dataFile(fmt.Sprintf("f%02d.parquet", i), 1))
		if i == 5 {
			s, _ := tbl.Latest(ctx)
			must(t, tbl.Checkpoint(ctx, s))
		}
	}
	return tbl
}

func TestLoad_LastCheckpointIsOnlyAHint(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name, hint string
	}{
		{"empty", ""},
		{"garbage", "{not json"},
		{"points at a missing checkpoint", `{"version":9,"size":3}`},
		{"points past the end of the log", `{"version":99,"size":3}`},
		{"older than the newest checkpoint", `{"version":2,"size":3}`},
	} {
		t.Run(c.name, func(t *testing.T) {
			tbl := tenCommits(t)
			must(t, tbl.Store().Put(ctx, LastCheckpointKey, []byte(c.hint)))
			snap, err := tbl.Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if snap.Version() != 10 || snap.NumFiles() != 10 {
				t.Fatalf("v%d with %d files", snap.Version(), snap.NumFiles())
			}
			if s, err := tbl.At(ctx, 3); err != nil || s.NumFiles() != 3 {
				t.Fatalf("at 3: %v", err)
			}
		})
	}
	tbl := tenCommits(t)
	must(t, tbl.Store().Delete(ctx, LastCheckpointKey))
	if snap, err := tbl.Latest(ctx); err != nil || snap.CheckpointVersion() != 5 {
		t.Fatalf("without a hint: %v", err)
	}
}

func TestLoad_CorruptCheckpointFallsBackWhenCommitsAllowIt(t *testing.T) {
	ctx := context.Background()
	tbl := tenCommits(t)
	must(t, tbl.Store().Put(ctx, ClassicCheckpointKey(5), []byte("not parquet")))
	snap, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.NumFiles() != 10 || snap.CheckpointVersion() != NoVersion {
		t.Fatalf("%d files from checkpoint %d", snap.NumFiles(), snap.CheckpointVersion())
	}
	// Without the commits before it there is nothing to fall back to: the error names the file.
	for v := 0; v < 5; v++ {
		must(t, tbl.Store().Delete(ctx, CommitKey(Version(v))))
	}
	if _, err := tbl.Latest(ctx); err == nil || !strings.Contains(err.Error(), "checkpoint 5") {
		t.Fatalf("err = %v", err)
	}
}

func TestLoad_CompactionFileStandsInForItsCommits(t *testing.T) {
	ctx := context.Background()
	tbl := tenCommits(t)
	before, _ := tbl.Latest(ctx)
	// A compaction file for 6..8 with the reconciled actions of those commits; then the
	// commits themselves disappear (as after cleanup of a compacted range).
	var lines []string
	for v := 6; v <= 8; v++ {
		for _, a := range readCommit(t, tbl, Version(v)) {
			if a.Add != nil {
				b, _ := jsonMarshal(Action{Add: a.Add})
				lines = append(lines, string(b))
			}
		}
	}
	must(t, tbl.Store().Put(ctx, fmt.Sprintf("%s%020d.%020d.compacted.json", LogDir, 6, 8), []byte(strings.Join(lines, "\n")+"\n")))
	for v := 6; v <= 8; v++ {
		must(t, tbl.Store().Delete(ctx, CommitKey(Version(v))))
	}
	after, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if len(after.segment.deltas) != 3 || after.segment.deltas[0].kind != kindCompaction {
		t.Fatalf("segment %+v", after.segment.deltas)
	}
	compareSnapshots(t, before, after)
}

func TestLoad_StateReadsNoFileActions(t *testing.T) {
	ctx := context.Background()
	tbl := tenCommits(t)
	st, err := tbl.State(ctx, NoVersion)
	if err != nil {
		t.Fatal(err)
	}
	if st.Version != 10 || st.Metadata.ID == "" || st.Protocol.MinWriterVersion != 2 {
		t.Fatalf("state %+v", st)
	}
	// Corrupt stats in a commit after the checkpoint cannot matter for State…
	must(t, tbl.Store().PutIfAbsent(ctx, CommitKey(11), []byte(`{"commitInfo":{"operation":"X"}}`+"\n"+`{"add":{"path":"x","partitionValues":{},"size":1,"modificationTime":1,"dataChange":true,"stats":"{broken"}}`+"\n")))
	if st, err := tbl.State(ctx, NoVersion); err != nil || st.Version != 11 {
		t.Fatalf("state after 11: %+v %v", st, err)
	}
}
