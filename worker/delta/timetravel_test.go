package delta

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"testing"
	"time"
)

func TestTimeTravel_ByVersionAndByFileTimestamp(t *testing.T) {
	tbl, _ := testTable(t).Create()
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		appendFiles(t, tbl, dataFile(string(rune('a'+i))+".parquet", 1))
	}
	dir := tbl.Store().Location()[len("file://"):]
	// Commit file times 10:00, 10:10, 10:05 (clock skew: goes backwards), 10:30.
	times := []time.Time{at(10, 0), at(10, 10), at(10, 5), at(10, 30)}
	for v, tm := range times {
		must(t, os.Chtimes(filepath.Join(dir, CommitKey(Version(v))), tm, tm))
	}
	cases := []struct {
		at   time.Time
		want Version
	}{
		{at(10, 0), 0}, {at(10, 9), 0}, {at(10, 10), 1},
		// Version 2's file time is behind version 1's; it counts as 10:10:00.001.
		{at(10, 10).Add(time.Millisecond), 2}, {at(10, 29), 2}, {at(10, 30), 3},
	}
	for _, c := range cases {
		snap, err := tbl.AtTime(ctx, c.at)
		if err != nil {
			t.Errorf("at %s: %v", c.at.Format("15:04:05.000"), err)
			continue
		}
		if snap.Version() != c.want || snap.NumFiles() != int(c.want) {
			t.Errorf("at %s: version %d with %d files, want %d", c.at.Format("15:04:05.000"), snap.Version(), snap.NumFiles(), c.want)
		}
	}
	var oor *TimestampOutOfRangeError
	if _, err := tbl.AtTime(ctx, at(9, 59)); !errors.As(err, &oor) || oor.EarliestVersion != 0 {
		t.Errorf("before the first commit: err = %v", err)
	}
	if _, err := tbl.AtTime(ctx, at(11, 0)); !errors.As(err, &oor) || oor.LatestVersion != 3 {
		t.Errorf("after the last commit: err = %v", err)
	}
}

func TestTimeTravel_UsesInCommitTimestampsWhenEnabled(t *testing.T) {
	b := testTable(t).Prop(PropEnableICT, "true")
	tbl, _ := b.Create()
	ctx := context.Background()
	for i := 1; i <= 3; i++ {
		b.clock.Advance(time.Minute)
		appendFiles(t, tbl, dataFile(string(rune('a'+i))+".parquet", 1))
	}
	// File times are meaningless under ICT: scramble them.
	dir := tbl.Store().Location()[len("file://"):]
	for v := 0; v <= 3; v++ {
		must(t, os.Chtimes(filepath.Join(dir, CommitKey(Version(v))), at(1, v), at(1, v)))
	}
	for v := 0; v <= 3; v++ {
		tm := testEpoch.Add(time.Duration(v) * time.Minute)
		query := tm.Add(30 * time.Second)
		if v == 3 {
			query = tm // after the latest commit would be refused
		}
		snap, err := tbl.AtTime(ctx, query)
		if err != nil || snap.Version() != Version(v) {
			t.Fatalf("at ICT of v%d + 30s: %v, %v", v, snapVersion(snap), err)
		}
		if !snap.Timestamp().Equal(tm) {
			t.Fatalf("v%d timestamp %v, want %v", v, snap.Timestamp(), tm)
		}
	}
}

func TestTimeTravel_CleanedUpVersionsNameTheEarliestRecoverable(t *testing.T) {
	tbl, _ := testTable(t).Create()
	ctx := context.Background()
	for i := 1; i <= 4; i++ {
		appendFiles(t, tbl, dataFile(string(rune('a'+i))+".parquet", 1))
	}
	s3, _ := tbl.At(ctx, 3)
	must(t, tbl.Checkpoint(ctx, s3))
	for v := 0; v < 3; v++ {
		must(t, tbl.Store().Delete(ctx, CommitKey(Version(v))))
	}
	var nf *VersionNotFoundError
	if _, err := tbl.At(ctx, 1); !errors.As(err, &nf) || nf.Earliest != 3 || nf.Latest != 4 {
		t.Fatalf("err = %v", err)
	}
	if snap, err := tbl.At(ctx, 3); err != nil || snap.NumFiles() != 3 {
		t.Fatalf("at 3: %v %v", snapVersion(snap), err)
	}
}

func at(h, m int) time.Time { return time.Date(2026, 3, 1, h, m, 0, 0, time.UTC) }

func snapVersion(s *Snapshot) Version {
	if s == nil {
		return NoVersion
	}
	return s.Version()
}
