package delta

import (
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"reflect"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
)

// TestCheckpoint_RoundTripReproducesTheSnapshot writes a checkpoint for the latest version of
// every corpus table deltakeeper may checkpoint (DVs, column mapping, domains, txns, struct-only
// stats, V2 tables…), reloads the table from it and compares the two snapshots.
func TestCheckpoint_RoundTripReproducesTheSnapshot(t *testing.T) {
	dir, tables := conformanceTables(t)
	ctx := context.Background()
	written := 0
	for _, c := range tables {
		if c.Role == "negative" {
			continue
		}
		t.Run(c.Name, func(t *testing.T) {
			_, store := copyTable(t, dir, c)
			before, err := NewTable(store).Latest(ctx)
			if err != nil {
				t.Fatal(err)
			}
			if err := before.CheckOperation(OpCheckpoint); err != nil {
				t.Logf("not checkpointed: %v", err)
				return
			}
			// A clock at the oldest tombstone's time keeps every tombstone unexpired.
			now := before.Timestamp()
			for _, r := range before.Tombstones() {
				if r.DeletionTimestamp != nil && time.UnixMilli(*r.DeletionTimestamp).Before(now) {
					now = time.UnixMilli(*r.DeletionTimestamp)
				}
			}
			clock := newFakeClock(now)
			tbl := NewTable(store, WithClock(clock))
			if err := tbl.Checkpoint(ctx, before); err != nil {
				t.Fatalf("checkpoint: %v", err)
			}
			after, err := tbl.Latest(ctx)
			if err != nil {
				t.Fatalf("reload: %v", err)
			}
			if after.CheckpointVersion() != before.Version() || len(after.segment.deltas) != 0 {
				t.Fatalf("reload did not use the new checkpoint (checkpoint %d, %d deltas)", after.CheckpointVersion(), len(after.segment.deltas))
			}
			compareSnapshots(t, before, after)
			written++
		})
	}
	if written < 50 {
		t.Fatalf("only %d tables were checkpointed", written)
	}
}

func compareSnapshots(t *testing.T, a, b *Snapshot) {
	t.Helper()
	if a.Version() != b.Version() {
		t.Errorf("version %d vs %d", a.Version(), b.Version())
	}
	if !reflect.DeepEqual(a.Protocol().ReaderFeatureSet(), b.Protocol().ReaderFeatureSet()) || !reflect.DeepEqual(a.Protocol().WriterFeatureSet(), b.Protocol().WriterFeatureSet()) ||
		a.Protocol().MinReaderVersion != b.Protocol().MinReaderVersion || a.Protocol().MinWriterVersion != b.Protocol().MinWriterVersion {
		t.Errorf("protocol %+v vs %+v", a.Protocol(), b.Protocol())
	}
	am, bm := a.Metadata(), b.Metadata()
	if am.ID != bm.ID || am.SchemaString != bm.SchemaString || !reflect.DeepEqual(am.PartitionColumns, bm.PartitionColumns) ||
		!maps.Equal(am.Configuration, bm.Configuration) || am.Name != bm.Name || !reflect.DeepEqual(am.CreatedTime, bm.CreatedTime) {
		t.Errorf("metadata %+v vs %+v", am, bm)
	}
	if !reflect.DeepEqual(a.Txns(), b.Txns()) {
		t.Errorf("txns %+v vs %+v", a.Txns(), b.Txns())
	}
	if !reflect.DeepEqual(a.Domains(), b.Domains()) {
		t.Errorf("domains %+v vs %+v", a.Domains(), b.Domains())
	}
	if a.NumFiles() != b.NumFiles() {
		t.Fatalf("%d vs %d files", a.NumFiles(), b.NumFiles())
	}
	for i, fa := range a.Files() {
		fb := b.Files()[i]
		sa, sb := *fa, *fb
		sa.Stats, sb.Stats = "", ""
		if !reflect.DeepEqual(sa, sb) {
			t.Errorf("file %d:\n %+v\n %+v", i, sa, sb)
			continue
		}
		statsA, okA, errA := a.Stats(fa)
		statsB, okB, errB := b.Stats(fb)
		if errA != nil || errB != nil || okA != okB || okA && !sameStats(statsA, statsB) {
			t.Errorf("file %s stats differ:\n %s\n %s", fa.Path, fa.Stats, fb.Stats)
		}
	}
	if len(a.Tombstones()) != len(b.Tombstones()) {
		t.Fatalf("%d vs %d tombstones", len(a.Tombstones()), len(b.Tombstones()))
	}
	for i, ra := range a.Tombstones() {
		rb := b.Tombstones()[i]
		if ra.Key() != rb.Key() || !reflect.DeepEqual(ra.DeletionTimestamp, rb.DeletionTimestamp) || !reflect.DeepEqual(ra.Size, rb.Size) ||
			!reflect.DeepEqual(ra.PartitionValues, rb.PartitionValues) {
			t.Errorf("tombstone %d: %+v vs %+v", i, ra, rb)
		}
	}
}

// sameStats compares the statistics the checkpoint keeps: numRecords and tightBounds always; column
// statistics for the columns present in both (struct stats cover the stats columns only).
func sameStats(a, b *FileStats) bool {
	if !reflect.DeepEqual(a.NumRecords, b.NumRecords) || a.HasTightBounds() != b.HasTightBounds() {
		return false
	}
	for _, ca := range a.Columns {
		cb, ok := b.Column(ca.Path...)
		if !ok {
			continue
		}
		if !reflect.DeepEqual(ca.NullCount, cb.NullCount) || !sameValue(ca.Min, cb.Min) || !sameValue(ca.Max, cb.Max) {
			return false
		}
	}
	return true
}

func sameValue(a, b any) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	return fmt.Sprint(a) == fmt.Sprint(b)
}

func TestCheckpoint_HonoursStatsFormatProperties(t *testing.T) {
	ctx := context.Background()
	for _, c := range []struct {
		name                 string
		asJSON, asStruct     string
		wantJSON, wantStruct bool
	}{
		{"defaults", "", "", true, false},
		{"struct too", "true", "true", true, true},
		{"struct only", "false", "true", false, true},
		{"json off, struct unset: struct anyway", "false", "", false, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			b := testTable(t).Partitioned("p").Prop(PropCheckpointInterval, "1000")
			if c.asJSON != "" {
				b.Prop(PropWriteStatsAsJSON, c.asJSON)
			}
			if c.asStruct != "" {
				b.Prop(PropWriteStatsAsStruct, c.asStruct)
			}
			tbl, _ := b.Create()
			appendFiles(t, tbl, dataFile("p=a/1.parquet", 3, "a"), dataFile("p=b/2.parquet", 4, "b"))
			snap, _ := tbl.Latest(ctx)
			must(t, tbl.Checkpoint(ctx, snap))
			r, err := tbl.Store().Open(ctx, ClassicCheckpointKey(1))
			must(t, err)
			defer r.Close()
			pf, err := parquetio.Open(ctx, r)
			must(t, err)
			schema, err := pf.Schema()
			must(t, err)
			addType := schema.Field("add").Type
			hasParsed := containsField(addType, "stats_parsed")
			if hasParsed != c.wantStruct || containsField(addType, "partitionValues_parsed") != c.wantStruct {
				t.Fatalf("stats_parsed/partitionValues_parsed present = %v, want %v (%s)", hasParsed, c.wantStruct, addType)
			}
			after, err := tbl.Latest(ctx)
			must(t, err)
			compareSnapshots(t, snap, after)
			for _, f := range after.Files() {
				if n, ok := NumRecords(f.Stats); !ok || n == 0 {
					t.Errorf("stats lost for %s: %q", f.Path, f.Stats)
				}
			}
			var lc LastCheckpoint
			data, err := tbl.Store().Get(ctx, LastCheckpointKey)
			must(t, err)
			must(t, json.Unmarshal(data, &lc))
			if lc.Version != 1 || lc.Size != 4 || lc.NumOfAddFiles == nil || *lc.NumOfAddFiles != 2 || lc.SizeInBytes == nil || *lc.SizeInBytes == 0 {
				t.Fatalf("_last_checkpoint %s", data)
			}
		})
	}
}

func containsField(t any, name string) bool {
	type fielder interface {
		FieldIndex(string) int
	}
	if f, ok := t.(fielder); ok {
		return f.FieldIndex(name) >= 0
	}
	return false
}

func TestCheckpoint_WrittenEveryIntervalAndExpiredTombstonesDropped(t *testing.T) {
	b := testTable(t).Prop(PropCheckpointInterval, "3")
	tbl, _ := b.Create()
	ctx := context.Background()
	for i := 0; i < 3; i++ {
		snap, _ := tbl.Latest(ctx)
		tx, _ := snap.Begin(OpAppend, TxnOptions{Operation: "WRITE"})
		tx.Add(dataFile(fmt.Sprintf("f%d.parquet", i), 1))
		res, err := tx.Commit(ctx)
		must(t, err)
		if res.Checkpointed != (res.Version == 3) || res.CheckpointErr != nil {
			t.Fatalf("v%d: checkpointed=%v err=%v", res.Version, res.Checkpointed, res.CheckpointErr)
		}
	}
	snap, _ := tbl.Latest(ctx)
	if snap.CheckpointVersion() != 3 {
		t.Fatalf("latest snapshot built from checkpoint %d", snap.CheckpointVersion())
	}
	// A tombstone older than delta.deletedFileRetentionDuration is left out of the next checkpoint.
	mustCommit(t, tbl, OpMerge, "DELETE", func(tx *Transaction) { tx.Remove(true, tx.Snapshot().Files()[0]) })
	b.clock.Advance(8 * 24 * time.Hour)
	snap, _ = tbl.Latest(ctx)
	if len(snap.Tombstones()) != 1 {
		t.Fatalf("%d tombstones before the checkpoint", len(snap.Tombstones()))
	}
	must(t, tbl.Checkpoint(ctx, snap))
	after, _ := tbl.Latest(ctx)
	if len(after.Tombstones()) != 0 || after.NumFiles() != 2 {
		t.Fatalf("after checkpoint: %d tombstones, %d files", len(after.Tombstones()), after.NumFiles())
	}
}

func TestCheckpoint_LastCheckpointOnlyMovesForward(t *testing.T) {
	tbl, _ := testTable(t).Create()
	ctx := context.Background()
	appendFiles(t, tbl, dataFile("a.parquet", 1))
	appendFiles(t, tbl, dataFile("b.parquet", 1))
	s2, _ := tbl.Latest(ctx)
	s1, _ := tbl.At(ctx, 1)
	must(t, tbl.Checkpoint(ctx, s2))
	must(t, tbl.Checkpoint(ctx, s1))
	lc, ok, err := readLastCheckpoint(ctx, tbl.Store())
	if err != nil || !ok || lc.Version != 2 {
		t.Fatalf("_last_checkpoint %+v %v %v", lc, ok, err)
	}
}
