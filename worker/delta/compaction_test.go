package delta

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"
)

// The history of a table with deletion vectors, as Databricks writes one (DELETEs replace a file's
// DV, so the same path is removed and re-added with another DV), one commit per entry.
const (
	dvA = `{"storageType":"i","pathOrInlineDv":"wi5b=000010000siXQKl0rr91000f55c8Xg0@@D72lkbi5=-{L","sizeInBytes":40,"cardinality":6}`
	dvB = `{"storageType":"u","pathOrInlineDv":"ab^-aqEH.-t@S}K{vb[*k^","offset":4,"sizeInBytes":40,"cardinality":8}`
)

func cAdd(path, dv string) string {
	if dv != "" {
		dv = `,"deletionVector":` + dv
	}
	return `{"add":{"path":"` + path + `","partitionValues":{},"size":10,"modificationTime":1,"dataChange":true,"stats":"{\"numRecords\":20}"` + dv + `}}`
}

func cRemove(path, dv string) string {
	if dv != "" {
		dv = `,"deletionVector":` + dv
	}
	return `{"remove":{"path":"` + path + `","deletionTimestamp":5,"dataChange":true` + dv + `}}`
}

var dvHistory = [][]string{
	1: {cRemove("f1", ""), cAdd("f1", dvA)},
	2: {cRemove("f1", dvA), cAdd("f1", dvB), cAdd("f4", "")},
	3: {cRemove("f2", ""), cAdd("f5", "")},
	4: {cRemove("f1", dvB), cAdd("f6", "")},
	5: {cAdd("f7", "")},
}

// liveAt is what a replay of the commits gives at each version.
var liveAt = [][]string{
	0: {"f1", "f2", "f3"},
	1: {"f1+i", "f2", "f3"},
	2: {"f1+u", "f2", "f3", "f4"},
	3: {"f1+u", "f3", "f4", "f5"},
	4: {"f3", "f4", "f5", "f6"},
	5: {"f3", "f4", "f5", "f6", "f7"},
}

// dvTable writes the table of dvHistory by hand: protocol with deletion vectors, commit 0 adding
// f1..f3, then the history.
func dvTable(t *testing.T) *Table {
	t.Helper()
	ctx := context.Background()
	tbl := NewTable(newTestStore(t), WithClock(newFakeClock(testEpoch)))
	zero := []string{
		`{"commitInfo":{"operation":"CREATE TABLE"}}`,
		`{"protocol":{"minReaderVersion":3,"minWriterVersion":7,"readerFeatures":["deletionVectors"],"writerFeatures":["deletionVectors"]}}`,
		`{"metaData":{"id":"t","format":{"provider":"parquet","options":{}},"schemaString":"{\"type\":\"struct\",\"fields\":[{\"name\":\"id\",\"type\":\"long\",\"nullable\":true,\"metadata\":{}}]}","partitionColumns":[],"configuration":{"delta.enableDeletionVectors":"true","delta.checkpointInterval":"3"}}}`,
		cAdd("f1", ""), cAdd("f2", ""), cAdd("f3", ""),
	}
	putCommit(t, tbl, 0, zero)
	for v := 1; v < len(dvHistory); v++ {
		putCommit(t, tbl, Version(v), append([]string{fmt.Sprintf(`{"commitInfo":{"operation":"DELETE","txnId":"v%d"}}`, v)}, dvHistory[v]...))
	}
	if _, err := tbl.Latest(ctx); err != nil {
		t.Fatal(err)
	}
	return tbl
}

func putCommit(t *testing.T, tbl *Table, v Version, lines []string) {
	t.Helper()
	must(t, tbl.Store().PutIfAbsent(context.Background(), CommitKey(v), []byte(strings.Join(lines, "\n")+"\n")))
}

func putCompaction(t *testing.T, tbl *Table, from, to Version, lines []string) string {
	t.Helper()
	key := fmt.Sprintf("%s%020d.%020d.compacted.json", LogDir, from, to)
	must(t, tbl.Store().Put(context.Background(), key, []byte(strings.Join(lines, "\n")+"\n")))
	return key
}

// liveKeys renders a snapshot's live files as "path" or "path+<DV storage type>", sorted.
func liveKeys(s *Snapshot) []string {
	var out []string
	for _, f := range s.Files() {
		k := f.Path
		if f.DeletionVector != nil {
			k += "+" + f.DeletionVector.StorageType
		}
		out = append(out, k)
	}
	slices.Sort(out)
	return out
}

// databricksCompaction is the shape found in a DBR 16 table: the actions of commits 1..4 newest
// first, not reconciled (f1 with DV B, and with DV A, both added and removed).
func databricksCompaction() []string {
	var lines []string
	for v := 4; v >= 1; v-- {
		lines = append(lines, dvHistory[v]...)
	}
	return lines
}

// reconciledCompaction is commits 1..4 reconciled as the protocol asks: one action per key.
func reconciledCompaction() []string {
	return []string{cRemove("f1", ""), cRemove("f1", dvA), cRemove("f1", dvB), cRemove("f2", ""), cAdd("f4", ""), cAdd("f5", ""), cAdd("f6", "")}
}

func TestCompaction_CommitsThatExistAreTheRecordAtEveryVersion(t *testing.T) {
	ctx := context.Background()
	for name, lines := range map[string][]string{"databricks shape": databricksCompaction(), "reconciled": reconciledCompaction()} {
		t.Run(name, func(t *testing.T) {
			tbl := dvTable(t)
			putCompaction(t, tbl, 1, 4, lines)
			putCompaction(t, tbl, 2, 3, lines[:2]) // a narrower (bogus) one must not matter either
			for v := range liveAt {
				snap, err := tbl.At(ctx, Version(v))
				if err != nil {
					t.Fatalf("at %d: %v", v, err)
				}
				if got := liveKeys(snap); !slices.Equal(got, liveAt[v]) {
					t.Errorf("at %d: live %v, want %v", v, got, liveAt[v])
				}
				if snap.segment.compacted {
					t.Errorf("at %d: a compaction file was used although the commits exist", v)
				}
			}
			// A checkpoint of the latest version is exact, and so is every read after it.
			snap, err := tbl.Latest(ctx)
			must(t, err)
			must(t, tbl.Checkpoint(ctx, snap))
			putCommit(t, tbl, 6, []string{`{"commitInfo":{}}`, cAdd("f8", "")})
			snap, err = tbl.Latest(ctx)
			must(t, err)
			if got, want := liveKeys(snap), append(slices.Clone(liveAt[5]), "f8"); snap.CheckpointVersion() != 5 || !slices.Equal(got, want) {
				t.Fatalf("after the checkpoint: live %v, want %v (checkpoint %d)", got, want, snap.CheckpointVersion())
			}
		})
	}
}

func TestCompaction_AnUnreconciledFileAloneIsRefusedNotGuessed(t *testing.T) {
	ctx := context.Background()
	tbl := dvTable(t)
	key := putCompaction(t, tbl, 1, 4, databricksCompaction())
	for v := 1; v <= 4; v++ {
		must(t, tbl.Store().Delete(ctx, CommitKey(Version(v))))
	}
	_, err := tbl.Latest(ctx)
	if !errors.Is(err, ErrCorruptTable) || !strings.Contains(err.Error(), key) || !strings.Contains(err.Error(), "f1 (deletion vector") {
		t.Fatalf("err = %v, want ErrCorruptTable naming %s and the key listed twice", err, key)
	}
	if s, err := tbl.At(ctx, 0); err != nil || !slices.Equal(liveKeys(s), liveAt[0]) {
		t.Fatalf("at 0: %v", err)
	}
}

func TestCompaction_AReconciledFileStandsInForGoneCommitsButIsNeverCheckpointed(t *testing.T) {
	ctx := context.Background()
	tbl := dvTable(t)
	key := putCompaction(t, tbl, 1, 4, reconciledCompaction())
	for v := 1; v <= 4; v++ {
		must(t, tbl.Store().Delete(ctx, CommitKey(Version(v))))
	}
	snap, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if got := liveKeys(snap); !slices.Equal(got, liveAt[5]) || !snap.segment.compacted {
		t.Fatalf("live %v, want %v", got, liveAt[5])
	}
	if ts := snap.Tombstones(); len(ts) != 4 {
		t.Fatalf("%d tombstones, want 4", len(ts))
	}
	// The versions inside the range are gone with their commits.
	for v := 1; v <= 4; v++ {
		if _, err := tbl.At(ctx, Version(v)); err == nil {
			t.Fatalf("at %d: a version inside the compacted range was reconstructed", v)
		}
	}
	// No checkpoint is written from it, by hand or after a commit.
	if err := tbl.Checkpoint(ctx, snap); !errors.Is(err, ErrLogGap) || !strings.Contains(err.Error(), key) {
		t.Fatalf("Checkpoint: err = %v", err)
	}
	// delta.checkpointInterval is 3: the commit of version 6 tries its automatic checkpoint.
	tx, err := snap.Begin(OpAppend, TxnOptions{Operation: "WRITE"})
	must(t, err)
	tx.Add(dataFile("f9", 1))
	res, err := tx.Commit(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if res.Version != 6 || res.Checkpointed || !errors.Is(res.CheckpointErr, ErrLogGap) {
		t.Fatalf("automatic checkpoint at %d: checkpointed=%v err=%v", res.Version, res.Checkpointed, res.CheckpointErr)
	}
	for info, err := range tbl.Store().List(ctx, LogDir, "") {
		must(t, err)
		if f, ok := parseLogFile(info); ok && f.kind == kindCheckpointClassic {
			t.Fatalf("a checkpoint was written: %s", info.Key)
		}
	}
}
