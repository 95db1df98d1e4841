package cluster

import (
	"cmp"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/layoutstats"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// synthetic builds layout models over the square [0, side)² of two int64 clustering columns a, b:
// ZCubes as grids of equal files, and new unclustered whole-range files, all of the target size
// unless said otherwise.
type synthetic struct {
	m    *layoutModel
	side int64
	n    int
}

const syntheticTarget = 1 << 20

func newSynthetic() *synthetic {
	return &synthetic{side: 1 << 20, m: &layoutModel{names: []string{"a", "b"}, target: syntheticTarget, dims: 2,
		bounds: make([][]layoutstats.Bounds, 2), indexOf: map[*delta.AddFile]int{}}}
}

func (s *synthetic) add(f *delta.AddFile, a, b layoutstats.Bounds) *delta.AddFile {
	s.m.indexOf[f] = len(s.m.files)
	s.m.files = append(s.m.files, f)
	s.m.bounds[0] = append(s.m.bounds[0], a)
	s.m.bounds[1] = append(s.m.bounds[1], b)
	s.m.total += f.Size
	return f
}

// zcube adds a ZCube of files as FULL cuts them: uniform random points sorted along the Hilbert
// curve, cut into equal pieces, each piece's bounding box a file.
func (s *synthetic) zcube(id string, files int) {
	const bits, perFile = 10, 400
	curve := Hilbert{dims: 2, bits: bits}
	r := rand.New(rand.NewPCG(uint64(len(s.m.files)), uint64(files)))
	type point struct {
		a, b int64
		pos  uint64
	}
	pts := make([]point, files*perFile)
	for i := range pts {
		a, b := r.Int64N(s.side), r.Int64N(s.side)
		cell := []uint32{uint32(a * (1 << bits) / s.side), uint32(b * (1 << bits) / s.side)}
		pts[i] = point{a, b, curve.Index(cell)}
	}
	slices.SortFunc(pts, func(x, y point) int { return cmp.Compare(x.pos, y.pos) })
	for k := range files {
		s.n++
		piece := pts[k*perFile : (k+1)*perFile]
		ba := layoutstats.Bounds{Min: piece[0].a, Max: piece[0].a}
		bb := layoutstats.Bounds{Min: piece[0].b, Max: piece[0].b}
		for _, p := range piece {
			ba.Min, ba.Max = min(ba.Min.(int64), p.a), max(ba.Max.(int64), p.a)
			bb.Min, bb.Max = min(bb.Min.(int64), p.b), max(bb.Max.(int64), p.b)
		}
		f := &delta.AddFile{Path: fmt.Sprintf("%s-%03d.parquet", id, s.n), Size: syntheticTarget, ClusteringProvider: table.LiquidProvider,
			Tags: map[string]string{TagZCubeID: id, TagZCubeZOrderBy: `["a","b"]`}}
		s.add(f, ba, bb)
	}
}

// appended adds an unclustered file of size bytes over the whole square.
func (s *synthetic) appended(size int64) *delta.AddFile {
	s.n++
	whole := layoutstats.Bounds{Min: int64(0), Max: s.side - 1}
	return s.add(&delta.AddFile{Path: fmt.Sprintf("new-%03d.parquet", s.n), Size: size}, whole, whole)
}

func TestSchedule_TakesTheFullWhenTheYoungZCubeIsALargeShareOfTheTable(t *testing.T) {
	// A FULL ZCube of 64 files and a young one of 36 over the same square (over a third of the
	// table), and this run's new file on top: re-merging the young ZCube with the new file meets the
	// bound, but the next append breaks it again, while a FULL, 101 files, keeps the table within it
	// for several appends: per cycle, the FULL is cheaper.
	s := newSynthetic()
	s.zcube("old", 64)
	s.zcube("young", 36)
	sel := &selection{files: []*delta.AddFile{s.appended(syntheticTarget * 8 / 10)}}
	e, err := s.m.escalate(sel, 0.04)
	if err != nil {
		t.Fatal(err)
	}
	if e == nil || !e.full || len(sel.files) != 101 {
		t.Fatalf("escalation %+v, %d files selected; want every file (a FULL)", e, len(sel.files))
	}
	if len(e.alternatives) == 0 || e.alternatives[0].zcubes != 1 || e.alternatives[0].perCycle <= e.choice.perCycle {
		t.Fatalf("alternatives %v; want the young ZCube alone, dearer per cycle than the FULL (%v)", e.alternatives, e.choice)
	}
	if e.choice.absorbs < 1 {
		t.Fatalf("the FULL absorbs %d appends; a fresh FULL should absorb some", e.choice.absorbs)
	}
	msg := e.describe(0.045)
	for _, want := range []string{"every clustered file", "bytes/cycle", "alternatives: 1 ZCube(s)"} {
		if !strings.Contains(msg, want) {
			t.Fatalf("message %q does not say %q", msg, want)
		}
	}
}

func TestSchedule_MergesTheSmallYoungZCubesWhenTheyAreCheapPerCycle(t *testing.T) {
	// The same FULL ZCube under three stacked single-file ZCubes: merging them with the new file into
	// one layer costs 4 files' worth, where a FULL costs 68 and holds for only a few appends more.
	s := newSynthetic()
	s.zcube("old", 64)
	for i := range 3 {
		s.zcube(fmt.Sprintf("young%d", i), 1)
	}
	sel := &selection{files: []*delta.AddFile{s.appended(syntheticTarget * 8 / 10)}}
	e, err := s.m.escalate(sel, 0.04)
	if err != nil {
		t.Fatal(err)
	}
	if e == nil || e.full || e.zcubes > 3 {
		t.Fatalf("escalation %+v; want some of the young ZCubes, not the FULL", e)
	}
	for _, f := range sel.files {
		if strings.HasPrefix(f.Path, "old-") {
			t.Fatalf("file %s of the FULL ZCube was taken: %s", f.Path, e.describe(0.05))
		}
	}
	var full *candidate
	for i := range e.alternatives {
		if e.alternatives[i].full {
			full = &e.alternatives[i]
		}
	}
	if full == nil || full.perCycle <= e.choice.perCycle {
		t.Fatalf("alternatives %v; want the FULL among them, dearer per cycle than %v", e.alternatives, e.choice)
	}
}

func TestSchedule_NoEscalationWithinTheBound(t *testing.T) {
	s := newSynthetic()
	s.zcube("old", 64)
	sel := &selection{files: []*delta.AddFile{s.appended(syntheticTarget * 8 / 10)}}
	if e, err := s.m.escalate(sel, 0.05); err != nil || e != nil || len(sel.files) != 1 {
		t.Fatalf("escalation %+v, err %v, %d files; one whole-range file over 64 is within 0.05", e, err, len(sel.files))
	}
}

func TestAppendsAbsorbed_AgreesWithTheQualityOfTheLayoutWithTheAppendsLanded(t *testing.T) {
	// A ZCube of 16 files; n appended files over its whole range (its smallest to largest value) add
	// one to the depth at every probe. The forecast must be Quality's measure of the layout with the
	// n files really there, so the count under a floor is the last n that Quality keeps above it.
	s := newSynthetic()
	s.zcube("old", 16)
	col := s.m.bounds[0]
	lo, hi := col[0].Min.(int64), col[0].Max.(int64)
	for _, b := range col {
		lo, hi = min(lo, b.Min.(int64)), max(hi, b.Max.(int64))
	}
	measured := func(n int) float64 {
		files := slices.Clone(col)
		for range n {
			files = append(files, layoutstats.Bounds{Min: lo, Max: hi})
		}
		q, err := layoutstats.Quality("a", files)
		if err != nil {
			t.Fatal(err)
		}
		return q.SkippingEffectiveness
	}
	for _, want := range []int{0, 1, 3, 7} {
		floor := measured(want) - 1e-9
		n, err := layoutstats.AppendsAbsorbed(col, make([]bool, len(col)), 1, 2, layoutstats.Appends{Files: 1}, func(int) float64 { return floor }, 50)
		if err != nil || n != want {
			t.Fatalf("floor %.4f: absorbed %d (err %v), want %d (measured %.4f, then %.4f)", floor, n, err, want, measured(want), measured(want+1))
		}
	}
}
