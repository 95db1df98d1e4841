package delta

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"
)

// dayTable makes a table with commits 0..12, one per day (file times day 0..12), checkpoints at
// 5 and 10, and log retention of 3 days.
func dayTable(t *testing.T, b *tableBuilder) (*Table, string) {
	t.Helper()
	b.Prop(PropLogRetentionDuration, "interval 3 days").Prop(PropCheckpointInterval, "1000")
	tbl, _ := b.Create()
	ctx := context.Background()
	for i := 1; i <= 12; i++ {
		appendFiles(t, tbl, dataFile(fmt.Sprintf("f%02d.parquet", i), 1))
		if i == 5 || i == 10 {
			s, _ := tbl.Latest(ctx)
			must(t, tbl.Checkpoint(ctx, s))
		}
	}
	dir := strings.TrimPrefix(tbl.Location(), "file://")
	day0 := time.Date(2026, 1, 1, 12, 0, 0, 0, time.UTC)
	entries, _ := os.ReadDir(filepath.Join(dir, "_delta_log"))
	for _, e := range entries {
		if f, ok := parseLogFile(storageInfo(LogDir + e.Name())); ok {
			tm := day0.AddDate(0, 0, int(f.version))
			must(t, os.Chtimes(filepath.Join(dir, "_delta_log", e.Name()), tm, tm))
		}
	}
	return tbl, dir
}

func TestCleanupLog_KeepsNewestExpiredCheckpointAndEverythingAfter(t *testing.T) {
	b := testTable(t)
	tbl, _ := dayTable(t, b)
	ctx := context.Background()
	before, _ := tbl.Latest(ctx)
	// Day 14 minus 3 days = day 11; checkpoint 10 (day 10) is the newest one not after it.
	b.clock.Set(time.Date(2026, 1, 15, 9, 0, 0, 0, time.UTC))
	res, err := tbl.CleanupLog(ctx)
	must(t, err)
	if res.OldestKept != 10 || !res.Cutoff.Equal(time.Date(2026, 1, 12, 0, 0, 0, 0, time.UTC)) {
		t.Fatalf("result %+v", res)
	}
	var want []string
	for v := 0; v < 10; v++ {
		if v == 5 {
			want = append(want, ClassicCheckpointKey(5))
		}
		want = append(want, CommitKey(Version(v)))
	}
	if !slices.Equal(res.Deleted, want) {
		t.Fatalf("deleted %v\nwant %v", res.Deleted, want)
	}
	after, err := tbl.Latest(ctx)
	must(t, err)
	compareSnapshots(t, before, after)
	if s, err := tbl.At(ctx, 10); err != nil || s.NumFiles() != 10 {
		t.Fatalf("at 10: %v", err)
	}
	var nf *VersionNotFoundError
	if _, err := tbl.At(ctx, 9); !errors.As(err, &nf) || nf.Earliest != 10 {
		t.Fatalf("at 9: %v", err)
	}
	// Running again deletes nothing more.
	res, err = tbl.CleanupLog(ctx)
	must(t, err)
	if len(res.Deleted) != 0 {
		t.Fatalf("second run deleted %v", res.Deleted)
	}
}

func TestCleanupLog_RespectsRetentionAndSwitches(t *testing.T) {
	ctx := context.Background()
	// Jan 10 minus 3 days = Jan 7: checkpoint 5 (Jan 6 12:00) is kept, only 0..4 go.
	b := testTable(t)
	tbl, _ := dayTable(t, b)
	b.clock.Set(time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC))
	res, err := tbl.CleanupLog(ctx)
	must(t, err)
	if res.OldestKept != 5 || len(res.Deleted) != 5 {
		t.Fatalf("result %+v", res)
	}
	// Too early: no checkpoint is older than the cutoff.
	b2 := testTable(t)
	tbl2, _ := dayTable(t, b2)
	b2.clock.Set(time.Date(2026, 1, 6, 0, 0, 0, 0, time.UTC))
	if res, err := tbl2.CleanupLog(ctx); err != nil || len(res.Deleted) != 0 || res.Skipped == "" {
		t.Fatalf("early: %+v %v", res, err)
	}
	// Disabled.
	b3 := testTable(t).Prop(PropEnableExpiredLogCleanup, "false")
	tbl3, _ := dayTable(t, b3)
	b3.clock.Set(time.Date(2027, 1, 1, 0, 0, 0, 0, time.UTC))
	if res, err := tbl3.CleanupLog(ctx); err != nil || len(res.Deleted) != 0 || !strings.Contains(res.Skipped, PropEnableExpiredLogCleanup) {
		t.Fatalf("disabled: %+v %v", res, err)
	}
}

func TestCleanupLog_CheckpointProtectionRemovesProtectedVersionsOnlyAllAtOnce(t *testing.T) {
	ctx := context.Background()
	protocol := Protocol{MinReaderVersion: 1, MinWriterVersion: 7, WriterFeatures: []string{FeatureAppendOnly, FeatureInvariants, FeatureCheckpointProtection}}
	b := testTable(t).Protocol(protocol).Prop(PropCheckpointProtectionVersion, "8")
	tbl, _ := dayTable(t, b)
	b.clock.Set(time.Date(2026, 1, 10, 0, 0, 0, 0, time.UTC)) // newest expired checkpoint: 5 < 8
	res, err := tbl.CleanupLog(ctx)
	must(t, err)
	if len(res.Deleted) != 0 || !strings.Contains(res.Skipped, "checkpointProtection") {
		t.Fatalf("partial truncation of protected versions: %+v", res)
	}
	b.clock.Set(time.Date(2026, 1, 15, 0, 0, 0, 0, time.UTC)) // checkpoint 10 ≥ 8: all at once
	res, err = tbl.CleanupLog(ctx)
	must(t, err)
	if res.OldestKept != 10 || len(res.Deleted) != 11 {
		t.Fatalf("result %+v", res)
	}
}

func TestCleanupLog_KeepsSidecarsOfRemainingCheckpoints(t *testing.T) {
	dir, tables := conformanceTables(t)
	var c conformanceTable
	for _, x := range tables {
		if x.Name == "v2-checkpoints-parquet-with-sidecars" {
			c = x
		}
	}
	root, store := copyTable(t, dir, c)
	ctx := context.Background()
	tbl := NewTable(store, WithClock(newFakeClock(time.Date(2035, 1, 1, 0, 0, 0, 0, time.UTC))))
	before, err := tbl.Latest(ctx)
	must(t, err)
	res, err := tbl.CleanupLog(ctx)
	must(t, err)
	if res.OldestKept != 6 {
		t.Fatalf("result %+v", res)
	}
	left, _ := os.ReadDir(filepath.Join(root, "_delta_log", "_sidecars"))
	var names []string
	for _, e := range left {
		if !strings.HasPrefix(e.Name(), ".") {
			names = append(names, e.Name())
		}
	}
	if len(names) != 2 || !strings.HasPrefix(names[0], v20(6)) || !strings.HasPrefix(names[1], v20(6)) {
		t.Fatalf("sidecars left: %v", names)
	}
	after, err := tbl.Latest(ctx)
	must(t, err)
	compareSnapshots(t, before, after)
}
