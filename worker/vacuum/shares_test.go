package vacuum

import (
	"maps"
	"slices"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// strays are unreferenced objects in the places a split can get wrong: before the first and after the
// last file name of the root, in a directory the pinned snapshot does not know, under hidden directories.
var strays = []string{
	"0000.parquet", "aaa.parquet", "part-00000-0.parquet", "zzz.parquet", "sub/dir/x.parquet",
	"order_date=2099-12-31/late.parquet", "order_date=2024-01-01/orphan.parquet",
	"_change_data/cdc-00000.parquet", "_delta_index/index.bin", "_hidden/x.parquet", ".staging.parquet",
	"order_date=2024-01-01/_SUCCESS", "order_date=2024-01-01/_tmp/y.parquet",
}

// sharedTable writes a demo table, compacts it (its inputs become tombstones) and adds the strays. It
// returns the version before the compaction, which a scale-out run would have pinned.
func sharedTable(t *testing.T, store storage.Store, files int, partitioned bool) (*delta.Table, delta.Version) {
	t.Helper()
	tbl := delta.NewTable(store)
	if _, err := table.WriteDemoData(t.Context(), tbl, table.DemoOptions{Files: files, RowsPerFile: 50, Partitioned: partitioned, Seed: 3}, nil); err != nil {
		t.Fatal(err)
	}
	pinned := latest(t, tbl).Version()
	if _, err := optimize.Run(t.Context(), tbl, optimize.Options{}, nil); err != nil {
		t.Fatal(err)
	}
	for _, key := range strays {
		if err := store.Put(t.Context(), key, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	return tbl, pinned
}

func TestVacuumShares_PartitionTheTableAndTheirUnionIsTheSinglePodVacuum(t *testing.T) {
	cases := []struct {
		name        string
		files       int
		partitioned bool
		counts      []int
	}{
		// Six days of four files: whole directories balanced over the shares.
		{"partitioned", 24, true, []int{2, 3, 4}},
		// Two days of four files and one of one: with 3 or 4 shares a day is more than a share's part
		// and is cut into key ranges.
		{"skewed", 9, true, []int{3, 4}},
		{"unpartitioned", 12, false, []int{2, 3, 5}},
	}
	for _, b := range backends {
		for _, c := range cases {
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				store := b.open(t)
				tbl, pinned := sharedTable(t, store, c.files, c.partitioned)
				rule := hiddenRule(latest(t, tbl))
				want := map[string]bool{} // every key outside hidden directories
				for key := range stored(t, store) {
					if hiddenDirSkip(key, rule) == "" {
						want[key] = true
					}
				}
				single := dryRunSample(t, tbl, nil)
				if len(single) < c.files {
					t.Fatalf("the single-pod vacuum finds only %d candidates: %v", len(single), single)
				}
				for _, n := range c.counts {
					listedBy := map[string]int{}
					deletedBy := map[string]int{}
					for i := range n {
						plan, err := planShares(at(t, tbl, pinned), i, n)
						if err != nil {
							t.Fatal(err)
						}
						var listed int
						if err := plan.list(t.Context(), store, rule, func(obj storage.ObjectInfo) {
							if _, dup := listedBy[obj.Key]; dup {
								t.Errorf("%d shares: %s listed by share %d and by share %d", n, obj.Key, listedBy[obj.Key], i)
							}
							listedBy[obj.Key] = i
							listed++
						}); err != nil {
							t.Fatal(err)
						}
						if listed == 0 {
							t.Errorf("%d shares: share %d lists nothing; the split is not spread", n, i)
						}
						for key := range dryRunSample(t, tbl, &Share{Index: i, Count: n, Version: pinned}) {
							if _, dup := deletedBy[key]; dup {
								t.Errorf("%d shares: %s is a candidate of share %d and of share %d", n, key, deletedBy[key], i)
							}
							deletedBy[key] = i
						}
					}
					if got := slices.Sorted(maps.Keys(listedBy)); !slices.Equal(got, slices.Sorted(maps.Keys(want))) {
						t.Errorf("%d shares listed %q\nthe table holds %q", n, got, slices.Sorted(maps.Keys(want)))
					}
					if got := slices.Sorted(maps.Keys(deletedBy)); !slices.Equal(got, slices.Sorted(maps.Keys(single))) {
						t.Errorf("%d shares' candidates %q\nsingle pod's         %q", n, got, slices.Sorted(maps.Keys(single)))
					}
				}
			})
		}
	}
}

func TestVacuumShares_OnlyShareZeroRemovesLeftoversAndListsTheLog(t *testing.T) {
	store := localStore(t)
	tbl, pinned := sharedTable(t, store, 12, false)
	rule := hiddenRule(latest(t, tbl))
	for i := range 3 {
		plan, err := planShares(at(t, tbl, pinned), i, 3)
		if err != nil {
			t.Fatal(err)
		}
		if plan.ownsRest() != (i == 0) {
			t.Errorf("share %d owns the rest: %v", i, plan.ownsRest())
		}
		if err := plan.list(t.Context(), store, rule, func(obj storage.ObjectInfo) {
			if hiddenDirSkip(obj.Key, rule) != "" {
				t.Errorf("share %d listed %s, under a hidden directory", i, obj.Key)
			}
		}); err != nil {
			t.Fatal(err)
		}
	}
}

// dryRunSample is every candidate of a dry-run vacuum with retention 0 (optionally one share's).
func dryRunSample(t *testing.T, tbl *delta.Table, s *Share) map[string]bool {
	t.Helper()
	var zero time.Duration
	rep := vacuumAt(t, tbl, Options{Retention: &zero, AllowShortRetention: true, DryRun: true, SampleSize: 1 << 20, Share: s}, time.Minute)
	out := map[string]bool{}
	for _, key := range rep.Sample {
		out[key] = true
	}
	if int64(len(out)) != rep.FilesToDelete {
		t.Fatalf("the sample holds %d of %d candidates", len(out), rep.FilesToDelete)
	}
	return out
}

func at(t *testing.T, tbl *delta.Table, v delta.Version) *delta.Snapshot {
	t.Helper()
	snap, err := tbl.At(t.Context(), v)
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

// Lite mode needs no listing; a share takes the expired tombstones in its part of the key space.
func TestVacuumShares_LiteModeSplitsTheExpiredTombstones(t *testing.T) {
	store := localStore(t)
	tbl, pinned := sharedTable(t, store, 24, true)
	sample := func(s *Share) map[string]bool {
		rep := vacuumAt(t, tbl, Options{Mode: Lite, DryRun: true, SampleSize: 1 << 20, Share: s}, 8*24*time.Hour)
		out := map[string]bool{}
		for _, key := range rep.Sample {
			out[key] = true
		}
		return out
	}
	single := sample(nil)
	if len(single) == 0 {
		t.Fatal("no expired tombstones to split")
	}
	union := map[string]bool{}
	for i := range 3 {
		part := sample(&Share{Index: i, Count: 3, Version: pinned})
		if len(part) == 0 {
			t.Errorf("share %d of a lite vacuum has no tombstones", i)
		}
		for key := range part {
			if union[key] {
				t.Errorf("%s is in two shares", key)
			}
			union[key] = true
		}
	}
	if !maps.Equal(union, single) {
		t.Fatalf("the shares' tombstones %v\nsingle pod's %v", slices.Sorted(maps.Keys(union)), slices.Sorted(maps.Keys(single)))
	}
}
