package cluster_test

import (
	"math"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

func TestOptimize_FullClusteringKeepsRowsAndMarksFilesLikeSpark(t *testing.T) {
	f := newFixture(t, nil)
	f.appendFiles(eventRows(30_000, 0, 1), 12)
	f.clusterBy("a", "b")
	before := f.rows()

	op := f.optimize(opts(func(o *cluster.Options) { o.Full = true }))
	if op.Outcome != result.Succeeded || op.FilesRemoved != 12 || op.FilesAdded < 4 {
		t.Fatalf("op = %+v, want 12 files rewritten into several", op)
	}
	sameRows(t, before, f.rows())
	snap := f.latest()
	cubes := map[string]bool{}
	for _, a := range snap.Files() {
		id, by := zcubeOf(t, a)
		cubes[id] = true
		if !slices.Equal(by, []string{"a", "b"}) {
			t.Fatalf("file %s clustered by %v, want [a b]", a.Path, by)
		}
		if a.DataChange {
			t.Fatalf("file %s has dataChange=true; clustering must not look like new data", a.Path)
		}
	}
	if len(cubes) != 1 {
		t.Fatalf("one run wrote %d ZCubes, want 1", len(cubes))
	}
	if ci := snap.CommitInfo(); ci == nil || ci.Operation != "OPTIMIZE" || ci.OperationParameters["clusterBy"] != `["a","b"]` {
		t.Fatalf("commitInfo = %+v", ci)
	}
	// A perfect grid of k files on two columns lets a point query skip all but one slab of √k files.
	k := float64(op.FilesAdded)
	ideal := (k - math.Sqrt(k)) / (k - 1)
	for c, q := range f.quality("a", "b") {
		if q.SkippingEffectiveness < 0.9*ideal {
			t.Fatalf("column %s: skipping effectiveness %.3f over %d files, want ≥ 0.9 × %.3f (a grid)", c, q.SkippingEffectiveness, op.FilesAdded, ideal)
		}
	}
}

func TestOptimize_IncrementalRewritesOnlyTheNewFiles(t *testing.T) {
	f := newFixture(t, nil)
	f.appendFiles(eventRows(30_000, 0, 1), 6)
	f.clusterBy("a", "b")
	f.optimize(opts(nil))
	clustered := f.latest().Files()

	f.appendFiles(eventRows(1_000, 30_000, 2), 3)
	before := f.rows()
	op := f.optimize(opts(nil))
	if op.Outcome != result.Succeeded || op.FilesRemoved != 3 {
		t.Fatalf("op = %+v, want only the 3 appended files rewritten", op)
	}
	sameRows(t, before, f.rows())
	snap := f.latest()
	for _, a := range clustered {
		if _, ok := snap.File(a.Key()); !ok {
			t.Fatalf("already clustered file %s was rewritten by an incremental run", a.Path)
		}
	}
}

func TestOptimize_NothingToDoOnceClustered(t *testing.T) {
	f := newFixture(t, nil)
	f.appendFiles(eventRows(20_000, 0, 1), 4)
	f.clusterBy("a")
	f.optimize(opts(nil))
	if op := f.optimize(opts(nil)); op.Outcome != result.NothingToDo {
		t.Fatalf("second run: %+v, want nothing_to_do", op)
	}
}

func TestOptimize_AutoReclusterMergesStackedFilesOnlyWhenEnabled(t *testing.T) {
	for _, auto := range []bool{true, false} {
		t.Run(map[bool]string{true: "auto-recluster on", false: "auto-recluster off"}[auto], func(t *testing.T) {
			f := newFixture(t, nil)
			f.appendFiles(eventRows(20_000, 0, 1), 4)
			f.clusterBy("a", "b")
			f.optimize(opts(nil))
			merged := false
			for i := range 5 {
				// Each append spans the whole key space and is clustered on its own (not aligned to the
				// base) into one file of more than half the target size, so each run leaves one more
				// file stacked over every region.
				f.appendFiles(eventRows(2_000, 20_000+2_000*i, uint64(10+i)), 1)
				before := f.rows()
				op := f.optimize(opts(func(o *cluster.Options) { o.AutoRecluster = auto; o.NoRegions = true }))
				sameRows(t, before, f.rows())
				merged = merged || op.FilesRemoved > 1
			}
			if merged != auto {
				t.Fatalf("stacked clustered files merged = %v with auto-recluster %v", merged, auto)
			}
		})
	}
}

func TestOptimize_LeavesOtherProvidersFilesAlone(t *testing.T) {
	f := newFixture(t, nil)
	f.appendFiles(eventRows(5_000, 0, 1), 2)
	f.clusterBy("a")
	foreign := appendWithProvider(t, f, eventRows(1_000, 5_000, 2), "another-engine")
	before := f.rows()
	op := f.optimize(opts(func(o *cluster.Options) { o.Full = true }))
	if op.FilesRemoved != 2 {
		t.Fatalf("op = %+v, want the 2 unclustered files only", op)
	}
	sameRows(t, before, f.rows())
	for _, a := range foreign {
		if _, ok := f.latest().File(a.Key()); !ok {
			t.Fatalf("file %s of clustering provider %q was reclustered", a.Path, a.ClusteringProvider)
		}
	}
}

func TestOptimize_RefusesUnclusteredTables(t *testing.T) {
	f := newFixture(t, nil)
	f.appendFiles(eventRows(100, 0, 1), 1)
	op, err := cluster.Optimize(f.ctx, f.tbl, f.latest(), opts(nil), nil)
	if err == nil || op.Outcome != result.Refused || op.Reason != result.ReasonBadArgument {
		t.Fatalf("op = %+v, err = %v; want a refusal", op, err)
	}
}

func TestOptimize_DryRunWritesNothing(t *testing.T) {
	f := newFixture(t, nil)
	f.appendFiles(eventRows(1_000, 0, 1), 2)
	f.clusterBy("a")
	v := f.latest().Version()
	op := f.optimize(opts(func(o *cluster.Options) { o.DryRun = true }))
	if op.Outcome != result.Succeeded || f.latest().Version() != v {
		t.Fatalf("dry run: %+v, version %d → %d", op, v, f.latest().Version())
	}
}

func TestOptimize_NewClusteringColumnsReclusterEveryFileOnce(t *testing.T) {
	f := newFixture(t, nil)
	f.appendFiles(eventRows(12_000, 0, 1), 4)
	f.clusterBy("a")
	f.optimize(opts(nil))
	f.clusterBy("b", "s")
	before := f.rows()
	old := len(f.latest().Files())
	op := f.optimize(opts(nil))
	if op.Outcome != result.Succeeded || op.FilesRemoved != int64(old) {
		t.Fatalf("op = %+v, want all %d files clustered by a reclustered", op, old)
	}
	sameRows(t, before, f.rows())
	for _, a := range f.latest().Files() {
		if _, by := zcubeOf(t, a); !slices.Equal(by, []string{"b", "s"}) {
			t.Fatalf("file %s clustered by %v, want [b s]", a.Path, by)
		}
	}
	if op := f.optimize(opts(nil)); op.Outcome != result.NothingToDo {
		t.Fatalf("next run: %+v, want nothing to do", op)
	}
}
