package cluster_test

import (
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// driftedTable is a table clustered by a, b with FULL into one large ZCube, then three appends each
// clustered incrementally without the quality bound into a ZCube of its own that spans the whole key
// space (three whole-range files stacked over every region, too few for auto-recluster's groups of
// four; new data not aligned to the base, NoRegions, as the escalation exists for). It returns the FULL ZCube's files and the drifted ZCubes' files.
func driftedTable(t *testing.T) (f *fixture, base, drifted []*delta.AddFile) {
	t.Helper()
	f = newFixture(t, nil)
	f.appendFiles(eventRows(80_000, 0, 1), 6)
	f.clusterBy("a", "b")
	f.optimize(small(func(o *cluster.Options) { o.Full = true }))
	base = f.latest().Files()
	if len(base) < 32 {
		t.Fatalf("FULL wrote %d files, want a ZCube of at least 32", len(base))
	}
	isBase := map[delta.FileKey]bool{}
	for _, a := range base {
		isBase[a.Key()] = true
	}
	for i := range 3 {
		f.appendFiles(eventRows(1_500, 80_000+1_500*i, uint64(20+i)), 3)
		if op := f.optimize(small(func(o *cluster.Options) { o.NoRegions = true })); op.FilesRemoved != 3 || op.FilesAdded != 1 {
			t.Fatalf("drift cycle %d: %+v, want the 3 appended files clustered on their own", i, op)
		}
	}
	for _, a := range f.latest().Files() {
		if !isBase[a.Key()] {
			drifted = append(drifted, a)
		}
	}
	if len(drifted) != 3 {
		t.Fatalf("%d files besides the FULL ZCube, want 3 whole-range ones", len(drifted))
	}
	return f, base, drifted
}

// small are opts at a 32 KiB target: enough files for a FULL ZCube whose quality a few whole-range
// files visibly lower.
func small(mod func(*cluster.Options)) cluster.Options {
	return opts(func(o *cluster.Options) {
		o.TargetFileSize = 32 << 10
		if mod != nil {
			mod(o)
		}
	})
}

func TestOptimize_EscalatesDriftedZCubesAndLeavesTheRestUntouched(t *testing.T) {
	f, base, drifted := driftedTable(t)
	cubes := map[string]bool{}
	for _, a := range drifted {
		id, _ := zcubeOf(t, a)
		cubes[id] = true
	}
	if len(cubes) != 3 {
		t.Fatalf("the drifted files form %d ZCubes, want 3", len(cubes))
	}
	f.appendFiles(eventRows(1_500, 84_500, 30), 3)
	before := f.rows()
	qBefore := f.quality("a", "b")

	// Four whole-range files over a FULL ZCube of ~50 files put the layout ~0.1 below FULL; merging
	// the young ZCubes among themselves brings it within 0.09 without touching the FULL ZCube.
	op := f.optimize(small(func(o *cluster.Options) { o.MaxQualityGap = 0.09; o.NoRegions = true }))
	if op.Outcome != result.Succeeded || !strings.Contains(op.Message, "escalated:") || !strings.Contains(op.Message, "below FULL") {
		t.Fatalf("op = %+v, want an escalation that says why", op)
	}
	sameRows(t, before, f.rows())
	snap := f.latest()
	for _, a := range base {
		if _, ok := snap.File(a.Key()); !ok {
			t.Fatalf("file %s of the FULL ZCube (%d files) was rewritten; only the drifted ZCubes should be: %s", a.Path, len(base), op.Message)
		}
	}
	gone := 0
	for _, a := range drifted {
		if _, ok := snap.File(a.Key()); !ok {
			gone++
		}
	}
	if gone == 0 || op.FilesRemoved != int64(3+gone) {
		t.Fatalf("%d drifted files reclustered, %d files removed; want the 3 appended files and the escalated ZCubes", gone, op.FilesRemoved)
	}
	qAfter := f.quality("a", "b")
	for _, c := range []string{"a", "b"} {
		if qAfter[c].SkippingEffectiveness <= qBefore[c].SkippingEffectiveness {
			t.Fatalf("column %s: skipping %.3f after the escalation, %.3f before", c, qAfter[c].SkippingEffectiveness, qBefore[c].SkippingEffectiveness)
		}
	}
}

func TestOptimize_DoesNotEscalateWithinTheBound(t *testing.T) {
	f, _, drifted := driftedTable(t)
	f.appendFiles(eventRows(1_500, 84_500, 30), 3)
	before := f.rows()
	op := f.optimize(small(func(o *cluster.Options) { o.MaxQualityGap = 0.9; o.NoRegions = true }))
	if op.Outcome != result.Succeeded || op.FilesRemoved != 3 || strings.Contains(op.Message, "escalated") {
		t.Fatalf("op = %+v, want only the 3 appended files rewritten under a 0.9 bound", op)
	}
	sameRows(t, before, f.rows())
	for _, a := range drifted {
		if _, ok := f.latest().File(a.Key()); !ok {
			t.Fatalf("file %s was rewritten although the layout is within the bound", a.Path)
		}
	}
}

func TestOptimize_RefusesAMaxQualityGapOutsideItsRange(t *testing.T) {
	f := newFixture(t, nil)
	f.appendFiles(eventRows(100, 0, 1), 1)
	f.clusterBy("a")
	for _, gap := range []float64{-0.1, 1.5} {
		op, err := cluster.Optimize(f.ctx, f.tbl, f.latest(), opts(func(o *cluster.Options) { o.MaxQualityGap = gap }), nil)
		if err == nil || op.Outcome != result.Refused || op.Reason != result.ReasonBadArgument || !strings.Contains(err.Error(), "max quality gap") {
			t.Fatalf("max quality gap %v: op = %+v, err = %v; want a refusal naming it", gap, op, err)
		}
	}
}
