package cluster_test

import (
	"fmt"
	"math"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// boundsOf are the live files' bounds on the columns, as "min..max" in the order-preserving key space
// (the form PlanFull's bounds and the statistics' values can be compared in), sorted.
func statBounds(t *testing.T, f *fixture, cols ...string) [][]string {
	t.Helper()
	snap := f.latest()
	out := make([][]string, len(cols))
	for _, a := range snap.Files() {
		st, ok, err := snap.Stats(a)
		if err != nil || !ok {
			t.Fatalf("statistics of %s: %v", a.Path, err)
		}
		for c, name := range cols {
			cs, ok := st.Column(name)
			if !ok || cs.Min == nil {
				out[c] = append(out[c], "none")
				continue
			}
			out[c] = append(out[c], fmt.Sprintf("%d..%d", keyInt(cs.Min), keyInt(cs.MaxUpperBound())))
		}
	}
	for c := range out {
		slices.Sort(out[c])
	}
	return out
}

func keyInt(v types.Value) int64 { return int64(parquetio.KeyOf(v) ^ 1<<63) }

func TestPlanFull_IsTheLayoutFullWrites(t *testing.T) {
	for _, cols := range [][]string{{"a", "b"}, {"a", "ts"}} {
		t.Run(fmt.Sprint(cols), func(t *testing.T) {
			f := newFixture(t, nil)
			f.appendFiles(eventRows(30_000, 0, 1), 4)
			f.clusterBy(cols...)
			f.optimize(small(func(o *cluster.Options) { o.Full = true }))
			for i := range 3 { // drifted ZCubes, and unclustered files left for FULL
				f.appendFiles(eventRows(2_000, 30_000+2_000*i, uint64(40+i)), 3)
				if i < 2 {
					f.optimize(small(func(o *cluster.Options) { o.MaxQualityGap = 1 }))
				}
			}
			opts := small(func(o *cluster.Options) { o.Full = true })
			plan, err := cluster.PlanFull(f.ctx, f.latest(), opts)
			if err != nil {
				t.Fatal(err)
			}
			planned, err := plan.Quality()
			if err != nil {
				t.Fatal(err)
			}
			f.optimize(opts)
			snap := f.latest()
			if plan.Files != snap.NumFiles() || plan.Files < 8 {
				t.Fatalf("planned %d files, FULL wrote %d", plan.Files, snap.NumFiles())
			}
			if plan.Rows != 36_000 {
				t.Fatalf("planned %d rows, the table has 36000", plan.Rows)
			}
			got := make([][]string, len(cols))
			for c := range cols {
				for _, b := range plan.Bounds[c] {
					if b.Min == nil {
						got[c] = append(got[c], "none")
						continue
					}
					got[c] = append(got[c], fmt.Sprintf("%d..%d", b.Min.(int64), b.Max.(int64)))
				}
				slices.Sort(got[c])
			}
			want := statBounds(t, f, cols...)
			for c := range cols {
				if !slices.Equal(got[c], want[c]) {
					t.Fatalf("column %s: planned bounds %v, FULL's files have %v", cols[c], got[c], want[c])
				}
			}
			q := f.quality(cols...)
			for _, pq := range planned {
				if d := math.Abs(pq.SkippingEffectiveness - q[pq.Column].SkippingEffectiveness); d > 1e-12 {
					t.Fatalf("column %s: planned skipping %.6f, FULL's %.6f", pq.Column, pq.SkippingEffectiveness, q[pq.Column].SkippingEffectiveness)
				}
			}
		})
	}
}
