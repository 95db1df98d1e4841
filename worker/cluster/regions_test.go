package cluster_test

import (
	"strconv"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// alignedTable is a table clustered by a, b with FULL into one ZCube of at least 16 files (the base).
func alignedTable(t *testing.T) (*fixture, map[string]*delta.AddFile) {
	t.Helper()
	f := newFixture(t, nil)
	f.appendFiles(eventRows(60_000, 0, 1), 6)
	f.clusterBy("a", "b")
	f.optimize(small(func(o *cluster.Options) { o.Full = true }))
	base := map[string]*delta.AddFile{}
	for _, a := range f.latest().Files() {
		base[a.Path] = a
	}
	if len(base) < 16 {
		t.Fatalf("FULL wrote %d files, want at least 16", len(base))
	}
	return f, base
}

// boxOf is a file's statistics box over a and b as normalized keys.
func boxOf(t *testing.T, snap *delta.Snapshot, a *delta.AddFile) (lo, hi [2]uint64) {
	t.Helper()
	st, ok, err := snap.Stats(a)
	if err != nil || !ok {
		t.Fatalf("statistics of %s: ok %v, %v", a.Path, ok, err)
	}
	for c, col := range []string{"a", "b"} {
		cs, ok := st.Column(col)
		if !ok || cs.Min == nil || cs.Max == nil {
			t.Fatalf("file %s has no bounds on %s", a.Path, col)
		}
		lo[c], hi[c] = parquetio.KeyOf(cs.Min), parquetio.KeyOf(cs.MaxUpperBound())
	}
	return lo, hi
}

func TestOptimize_CutsNewDataAlongTheBaseFilesAndMergesFullRegionLevels(t *testing.T) {
	f, base := alignedTable(t)
	const fanout = 3
	o := small(func(o *cluster.Options) { o.RegionFanout = fanout })
	for cycle := 1; cycle <= fanout+1; cycle++ {
		f.appendFiles(eventRows(6_000, 60_000+6_000*cycle, uint64(40+cycle)), 3)
		before := f.rows()
		op := f.optimize(o)
		if op.Outcome != result.Succeeded {
			t.Fatalf("cycle %d: %+v", cycle, op)
		}
		sameRows(t, before, f.rows())
		snap := f.latest()
		levels := map[string]int{}
		for _, a := range snap.Files() {
			if b, ok := base[a.Path]; ok {
				if b.Size != a.Size {
					t.Fatalf("cycle %d: base file %s changed", cycle, a.Path)
				}
				continue
			}
			region, ok := a.Tags[cluster.TagRegion]
			if !ok {
				t.Fatalf("cycle %d: file %s is neither a base file nor a piece (tags %v; %s)", cycle, a.Path, a.Tags, op.Message)
			}
			rb, ok := base[region]
			if !ok {
				t.Fatalf("cycle %d: piece %s names region %s, not a base file", cycle, a.Path, region)
			}
			// A row goes to the region whose box holds it, or, in a gap between the boxes, to the
			// nearest: a piece may stick out of its region's box, never by much.
			plo, phi := boxOf(t, snap, a)
			rlo, rhi := boxOf(t, snap, rb)
			for c := range 2 {
				slack := (rhi[c] - rlo[c]) / 2
				if plo[c] < rlo[c]-slack || phi[c] > rhi[c]+slack {
					t.Fatalf("cycle %d: piece %s [%v, %v] is not inside its region %s [%v, %v]", cycle, a.Path, plo, phi, region, rlo, rhi)
				}
			}
			lvl, _ := strconv.Atoi(a.Tags[cluster.TagRegionLevel])
			levels[region+"/"+a.Tags[cluster.TagRegionLevel]]++
			if cycle <= fanout && lvl != 0 {
				t.Fatalf("cycle %d: piece %s at level %d before any region level filled", cycle, a.Path, lvl)
			}
		}
		for k, n := range levels {
			if n >= fanout+1 {
				t.Fatalf("cycle %d: region level %s holds %d pieces, more than the fanout %d allows before merging", cycle, k, n, fanout)
			}
		}
		if cycle == fanout+1 {
			merged := 0
			for k, n := range levels {
				if k[len(k)-2:] == "/1" {
					merged += n
				}
			}
			if merged == 0 {
				t.Fatalf("cycle %d: no piece reached level 1 after %d cycles with fanout %d (%s)", cycle, cycle, fanout, op.Message)
			}
		}
		q := f.quality("a", "b")
		for _, c := range []string{"a", "b"} {
			if q[c].SkippingEffectiveness < 0.7 {
				t.Fatalf("cycle %d: skipping effectiveness on %s is %.3f with aligned pieces", cycle, c, q[c].SkippingEffectiveness)
			}
		}
	}
	if op := f.optimize(o); op.Outcome != result.NothingToDo {
		t.Fatalf("run without new data: %+v, want nothing to do (pieces are never small files)", op)
	}
}

func TestOptimize_UnalignedNewDataFormsItsOwnFiles(t *testing.T) {
	f, base := alignedTable(t)
	f.appendFiles(eventRows(6_000, 60_000, 50), 3)
	op := f.optimize(small(func(o *cluster.Options) { o.NoRegions = true }))
	if op.FilesRemoved != 3 || op.FilesAdded < 1 || op.FilesAdded > 6 {
		t.Fatalf("op = %+v, want the 3 appended files clustered into files of the target size", op)
	}
	for _, a := range f.latest().Files() {
		if _, ok := base[a.Path]; !ok && a.Tags[cluster.TagRegion] != "" {
			t.Fatalf("file %s carries a region tag without alignment", a.Path)
		}
	}
}

func TestOptimize_PiecesOfARewrittenBaseAreClusteredAgain(t *testing.T) {
	f, _ := alignedTable(t)
	f.appendFiles(eventRows(6_000, 60_000, 60), 3)
	f.optimize(small(nil))
	before := f.rows()
	// FULL makes a new base; every piece is rewritten with it.
	f.optimize(small(func(o *cluster.Options) { o.Full = true }))
	sameRows(t, before, f.rows())
	for _, a := range f.latest().Files() {
		if a.Tags[cluster.TagRegion] != "" {
			t.Fatalf("piece %s survived a FULL run", a.Path)
		}
	}
}

func TestOptimize_RefusesARegionFanoutBelowTwo(t *testing.T) {
	f, _ := alignedTable(t)
	op, err := cluster.Optimize(f.ctx, f.tbl, f.latest(), small(func(o *cluster.Options) { o.RegionFanout = 1 }), nil)
	if err == nil || op.Reason != result.ReasonBadArgument {
		t.Fatalf("fanout 1: %+v, %v; want a bad-argument refusal", op, err)
	}
}
