package scaleout

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestBalance_PartitionsEveryItemOnceAndIsStable(t *testing.T) {
	weights := []int64{5, 1, 9, 9, 3, 3, 3, 7, 2, 0, 4}
	w := func(i int) int64 { return weights[i] }
	key := func(i int) string { return fmt.Sprintf("k%02d", i) }
	for count := 1; count <= 6; count++ {
		shares := Balance(len(weights), count, w, key)
		if len(shares) != count {
			t.Fatalf("count %d: %d shares", count, len(shares))
		}
		var all []int
		var loads []int64
		for _, s := range shares {
			all = append(all, s...)
			var l int64
			for _, i := range s {
				l += w(i)
			}
			loads = append(loads, l)
		}
		slices.Sort(all)
		for i := range weights {
			if i >= len(all) || all[i] != i {
				t.Fatalf("count %d: shares %v do not hold every item exactly once", count, shares)
			}
		}
		if len(all) != len(weights) {
			t.Fatalf("count %d: %d items assigned, want %d", count, len(all), len(weights))
		}
		// Greedy longest-first keeps every share within the heaviest item of the lightest one.
		if d := slices.Max(loads) - slices.Min(loads); count <= len(weights) && d > slices.Max(weights) {
			t.Fatalf("count %d: loads %v differ by %d, more than the heaviest item", count, loads, d)
		}
		if again := Balance(len(weights), count, w, key); !slices.EqualFunc(shares, again, slices.Equal[[]int]) {
			t.Fatalf("count %d: %v then %v: the assignment must be a pure function of the items", count, shares, again)
		}
	}
}

func TestContiguous_CutsConsecutiveRangesCoveringAll(t *testing.T) {
	weights := []int64{4, 4, 4, 4, 1, 1, 1, 1, 10, 2}
	for count := 1; count <= 12; count++ {
		r := Contiguous(len(weights), count, func(i int) int64 { return weights[i] })
		next := 0
		for s, lohi := range r {
			if lohi[0] != next || lohi[1] < lohi[0] {
				t.Fatalf("count %d: share %d is %v after %d: ranges must be consecutive", count, s, lohi, next)
			}
			next = lohi[1]
		}
		if next != len(weights) {
			t.Fatalf("count %d: ranges %v end at %d, want %d", count, r, next, len(weights))
		}
	}
}

func TestParseShare_RefusesIndexesOutsideTheCount(t *testing.T) {
	for _, bad := range []string{"", "3", "3/3", "-1/3", "0/0", "a/b", "0/101"} {
		if _, _, err := ParseShare(bad); err == nil {
			t.Errorf("ParseShare(%q) accepted", bad)
		}
	}
	if i, n, err := ParseShare("2/3"); err != nil || i != 2 || n != 3 {
		t.Fatalf("ParseShare(2/3) = %d, %d, %v", i, n, err)
	}
}

func TestRemoveStaleRuns_DeletesOnlyOldManifests(t *testing.T) {
	store, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	for _, run := range []string{"old", "new"} {
		if _, _, err := WriteManifest(ctx, store, &Manifest{RunID: run, Count: 1, Operation: "optimize"}); err != nil {
			t.Fatal(err)
		}
	}
	old := filepath.Join(strings.TrimPrefix(store.Location(), "file://"), ManifestKey("old", 0))
	if err := os.Chtimes(old, time.Now().Add(-2*StaleRunAge), time.Now().Add(-2*StaleRunAge)); err != nil {
		t.Fatal(err)
	}
	if n, err := RemoveStaleRuns(ctx, store, time.Now().Add(-StaleRunAge)); err != nil || n != 1 {
		t.Fatalf("removed %d (%v), want the old run's manifest", n, err)
	}
	if _, err := ReadManifest(ctx, store, "new", 0); err != nil {
		t.Fatalf("the recent run's manifest: %v", err)
	}
	if _, err := ReadManifest(ctx, store, "old", 0); !errors.Is(err, storage.ErrNotFound) {
		t.Fatalf("the stale manifest: %v", err)
	}
}
