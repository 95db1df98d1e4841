package delta

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"testing"
)

// TestConformance_RowCountsOnlyKeepsEverythingButColumnStatistics loads every table of the shared
// corpus in full and with row counts only: the lean snapshot must have the same version and the same
// live files in the same order, every field equal but Stats, which is exactly the full statistics'
// numRecords (or empty when they have none). Tables the full load refuses, the lean one refuses too.
func TestConformance_RowCountsOnlyKeepsEverythingButColumnStatistics(t *testing.T) {
	dir, tables := conformanceTables(t)
	ctx := context.Background()
	var compared, withCounts int
	for _, c := range tables {
		tbl := NewTable(conformanceStore(t, dir, c))
		full, ferr := tbl.Latest(ctx)
		lean, lerr := tbl.LatestWith(ctx, LoadOptions{RowCountsOnly: true})
		if ferr != nil || lerr != nil {
			if (ferr == nil) != (lerr == nil) {
				t.Errorf("%s/%s: full load error %v, row-counts-only load error %v", c.Source, c.Name, ferr, lerr)
			}
			continue
		}
		if why := leanDiff(full, lean); why != "" {
			t.Errorf("%s/%s: %s", c.Source, c.Name, why)
		}
		compared++
		for _, f := range lean.Files() {
			if f.Stats != "" {
				withCounts++
			}
		}
	}
	if compared == 0 || withCounts == 0 {
		t.Fatalf("compared %d tables with %d row counts: the corpus did not exercise the lean load", compared, withCounts)
	}
	t.Logf("%d tables compared, %d files with row counts", compared, withCounts)
}

// leanDiff describes how a row-counts-only snapshot differs from the full one beyond the statistics.
func leanDiff(full, lean *Snapshot) string {
	if full.Version() != lean.Version() || full.NumFiles() != lean.NumFiles() || full.TotalBytes() != lean.TotalBytes() {
		return fmt.Sprintf("lean v%d %d files %d bytes, full v%d %d files %d bytes", lean.Version(), lean.NumFiles(), lean.TotalBytes(),
			full.Version(), full.NumFiles(), full.TotalBytes())
	}
	if !lean.LoadOptions().RowCountsOnly || full.LoadOptions().RowCountsOnly {
		return "the snapshots do not report how they were loaded"
	}
	if len(full.Tombstones()) != len(lean.Tombstones()) {
		return fmt.Sprintf("%d tombstones, full %d", len(lean.Tombstones()), len(full.Tombstones()))
	}
	for i, ff := range full.Files() {
		lf := lean.Files()[i]
		want := ""
		if n, ok := NumRecords(ff.Stats); ok {
			want = fmt.Sprintf(`{"numRecords":%d}`, n)
		}
		if lf.Stats != want {
			return fmt.Sprintf("file %s: stats %q, want %q (full: %.80q)", ff.Path, lf.Stats, want, ff.Stats)
		}
		a, b := *ff, *lf
		a.Stats, b.Stats = "", ""
		if !reflect.DeepEqual(a, b) {
			return fmt.Sprintf("file %d differs beyond its statistics:\n full %+v\n lean %+v", i, a, b)
		}
		if got, ok := lean.File(ff.Key()); !ok || got != lf {
			return fmt.Sprintf("file %s is not found by its key in the lean snapshot", ff.Path)
		}
	}
	return ""
}

// TestRowCountsOnly_ReplaysCheckpointAndCommits covers both decoders on one table: files from a
// checkpoint and from JSON commits after it, with and without numRecords, removed and re-added.
func TestRowCountsOnly_ReplaysCheckpointAndCommits(t *testing.T) {
	ctx := context.Background()
	tbl, _ := testTable(t).Partitioned("p").Create()
	appendFiles(t, tbl, dataFile("p=a/1.parquet", 10, "a"), dataFile("p=a/2.parquet", 20, "a"), dataFile("p=b/3.parquet", 30, "b"))
	noCount := dataFile("p=b/4.parquet", 40, "b")
	noCount.Stats = `{"minValues":{"id":0},"maxValues":{"id":4},"nullCount":{"id":0}}`
	countLater := dataFile("p=b/5.parquet", 50, "b")
	countLater.Stats = `{"minValues":{"id":0},"numRecords":50}`
	appendFiles(t, tbl, noCount, countLater)
	snap, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := tbl.Checkpoint(ctx, snap); err != nil {
		t.Fatal(err)
	}
	appendFiles(t, tbl, dataFile("p=c/6.parquet", 60, "c"))
	mustCommit(t, tbl, OpMerge, "DELETE", func(tx *Transaction) {
		f, _ := snap.File(FileKey{Path: "p=a/2.parquet"})
		tx.Remove(true, f)
	})
	full, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	lean, err := tbl.LatestWith(ctx, LoadOptions{RowCountsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if lean.CheckpointVersion() == NoVersion || lean.NumFiles() != 5 {
		t.Fatalf("lean snapshot from checkpoint %d with %d files, want a checkpoint and 5 files", lean.CheckpointVersion(), lean.NumFiles())
	}
	if why := leanDiff(full, lean); why != "" {
		t.Fatal(why)
	}
	got := map[string]string{}
	for _, f := range lean.Files() {
		got[f.Path] = f.Stats
	}
	want := map[string]string{"p=a/1.parquet": `{"numRecords":10}`, "p=b/3.parquet": `{"numRecords":30}`, "p=b/4.parquet": "",
		"p=b/5.parquet": `{"numRecords":50}`, "p=c/6.parquet": `{"numRecords":60}`}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("lean statistics %v, want %v", got, want)
	}
}

// TestRowCountsOnly_RefusesWhatWouldLoseStatistics: a lean snapshot cannot parse column statistics,
// write a checkpoint, or commit a live file again (its statistics would become its row count); it
// can remove files and add new ones, which is what compaction does.
func TestRowCountsOnly_RefusesWhatWouldLoseStatistics(t *testing.T) {
	ctx := context.Background()
	tbl, _ := testTable(t).Create()
	appendFiles(t, tbl, dataFile("1.parquet", 10), dataFile("2.parquet", 20))
	lean, err := tbl.LatestWith(ctx, LoadOptions{RowCountsOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	f, _ := lean.File(FileKey{Path: "1.parquet"})
	if _, _, err := lean.Stats(f); err == nil || !strings.Contains(err.Error(), "row counts only") {
		t.Fatalf("Stats on a lean snapshot: %v, want a refusal", err)
	}
	if err := tbl.Checkpoint(ctx, lean); err == nil || !strings.Contains(err.Error(), "row counts only") {
		t.Fatalf("checkpoint of a lean snapshot: %v, want a refusal", err)
	}
	if _, err := tbl.Store().Stat(ctx, ClassicCheckpointKey(lean.Version())); err == nil {
		t.Fatal("the refused checkpoint was written")
	}
	tx, err := lean.Begin(OpRewrite, TxnOptions{Operation: "OPTIMIZE", NoAutoCheckpoint: true})
	if err != nil {
		t.Fatal(err)
	}
	tagged := *f
	tagged.Tags = map[string]string{"k": "v"}
	tx.Add(&tagged)
	if _, err := tx.Commit(ctx); err == nil || !strings.Contains(err.Error(), "row counts only") {
		t.Fatalf("re-adding a live file from a lean snapshot: %v, want a refusal", err)
	}
	tx, err = lean.Begin(OpRewrite, TxnOptions{Operation: "OPTIMIZE", NoAutoCheckpoint: true})
	if err != nil {
		t.Fatal(err)
	}
	g, _ := lean.File(FileKey{Path: "2.parquet"})
	tx.RemoveKeepingRowCounts(false, f, g)
	out := dataFile("3.parquet", 30)
	out.DataChange = false
	tx.Add(out)
	res, err := tx.Commit(ctx)
	if err != nil {
		t.Fatalf("compaction commit from a lean snapshot: %v", err)
	}
	var removes []string
	for _, a := range readCommit(t, tbl, res.Version) {
		if a.Remove != nil {
			removes = append(removes, a.Remove.Path+" "+a.Remove.Stats)
		}
	}
	if want := []string{`1.parquet {"numRecords":10}`, `2.parquet {"numRecords":20}`}; !reflect.DeepEqual(removes, want) {
		t.Fatalf("removes %q, want %q", removes, want)
	}
}

// TestRemoveKeepingRowCounts_FromFullSnapshot: removes keep numRecords alone, whatever else the
// statistics held, and nothing when they hold no count.
func TestRemoveKeepingRowCounts_FromFullSnapshot(t *testing.T) {
	tbl, _ := testTable(t).Create()
	noCount := dataFile("2.parquet", 20)
	noCount.Stats = `{"minValues":{"id":0}}`
	appendFiles(t, tbl, dataFile("1.parquet", 10), noCount)
	res := mustCommit(t, tbl, OpMerge, "DELETE", func(tx *Transaction) {
		snap := tx.Snapshot()
		tx.RemoveKeepingRowCounts(true, snap.Files()...)
	})
	got := map[string]string{}
	for _, a := range readCommit(t, tbl, res.Version) {
		if a.Remove != nil {
			got[a.Remove.Path] = a.Remove.Stats
		}
	}
	if want := map[string]string{"1.parquet": `{"numRecords":10}`, "2.parquet": ""}; !reflect.DeepEqual(got, want) {
		t.Fatalf("remove statistics %v, want %v", got, want)
	}
}

// TestChunkedBuffer_JoinsWritesInOrder: writes of every size, across chunk boundaries, come back
// byte for byte.
func TestChunkedBuffer_JoinsWritesInOrder(t *testing.T) {
	var b chunkedBuffer
	var want []byte
	for i := range 3000 {
		p := []byte(strings.Repeat(string(rune('a'+i%26)), i%997))
		if i%500 == 0 {
			p = make([]byte, 3*maxCommitChunk/2) // one write larger than a chunk
			p[0], p[len(p)-1] = byte(i), byte(i>>8)
		}
		if n, err := b.Write(p); n != len(p) || err != nil {
			t.Fatalf("Write: %d, %v", n, err)
		}
		want = append(want, p...)
	}
	if len(b.chunks) < 2 {
		t.Fatalf("%d chunks: the test did not cross a chunk boundary", len(b.chunks))
	}
	if got := b.Bytes(); string(got) != string(want) {
		t.Fatalf("got %d bytes, want %d (contents differ)", len(got), len(want))
	}
}
