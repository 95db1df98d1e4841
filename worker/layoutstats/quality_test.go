package layoutstats

import (
	"math"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

func i64(lo, hi int64) Bounds { return Bounds{Min: lo, Max: hi} }

func near(a, b float64) bool { return math.Abs(a-b) < 1e-9 }

func TestQuality_MatchesHandComputedValues(t *testing.T) {
	cases := []struct {
		name                           string
		files                          []Bounds
		avgDepth                       float64
		maxDepth                       int64
		overlap, skipping, coveragePct float64
		numFiles, withStats            int64
		status                         string
	}{
		{
			// Fabric's example: one clustered file plus ten appended files spanning the full range.
			name: "one clustered file plus ten full-range appends",
			files: append([]Bounds{i64(0, 100)}, i64(0, 100), i64(0, 100), i64(0, 100), i64(0, 100), i64(0, 100),
				i64(0, 100), i64(0, 100), i64(0, 100), i64(0, 100), i64(0, 100)),
			avgDepth: 11, maxDepth: 11, overlap: 1, skipping: 0, coveragePct: 100, numFiles: 11, withStats: 11, status: StatusOK,
		},
		{
			// Boundaries 0,5,10,15,20,30 give 11 probes; depths 1,1,2,2,2,1,1,0,1,1,1: 13 over 10 covered probes.
			name:     "two overlapping files and one apart",
			files:    []Bounds{i64(0, 10), i64(5, 15), i64(20, 30)},
			avgDepth: 1.3, maxDepth: 2, overlap: 0.15, skipping: 0.85, coveragePct: 100.0 / 3, numFiles: 3, withStats: 3, status: StatusOK,
		},
		{
			name:     "perfectly disjoint files",
			files:    []Bounds{i64(0, 9), i64(10, 19), i64(20, 29), i64(30, 39)},
			avgDepth: 1, maxDepth: 1, overlap: 0, skipping: 1, coveragePct: 9.0 / 39 * 100, numFiles: 4, withStats: 4, status: StatusOK,
		},
		{
			name:     "files without statistics",
			files:    []Bounds{{}, {Min: int64(1)}, i64(3, 3)},
			avgDepth: 1, maxDepth: 1, overlap: 0, skipping: 1, coveragePct: 100, numFiles: 3, withStats: 1, status: StatusOK,
		},
		{
			name:   "no statistics at all",
			files:  []Bounds{{}, {}},
			status: StatusNoStats, numFiles: 2, withStats: 0,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			q, err := Quality("c", tc.files)
			if err != nil {
				t.Fatal(err)
			}
			if q.Status != tc.status || q.NumFiles != tc.numFiles || q.NumFilesWithStats != tc.withStats {
				t.Fatalf("status/files = %s/%d/%d, want %s/%d/%d", q.Status, q.NumFiles, q.NumFilesWithStats, tc.status, tc.numFiles, tc.withStats)
			}
			if tc.status == StatusNoStats {
				return
			}
			if !near(q.AvgDepth, tc.avgDepth) || q.MaxDepth != tc.maxDepth || !near(q.OverlapRatio, tc.overlap) ||
				!near(q.SkippingEffectiveness, tc.skipping) || !near(q.AvgCoveragePct, tc.coveragePct) {
				t.Fatalf("got depth %.4f/%d overlap %.4f skipping %.4f coverage %.4f; want %.4f/%d %.4f %.4f %.4f",
					q.AvgDepth, q.MaxDepth, q.OverlapRatio, q.SkippingEffectiveness, q.AvgCoveragePct,
					tc.avgDepth, tc.maxDepth, tc.overlap, tc.skipping, tc.coveragePct)
			}
		})
	}
}

func TestQuality_UsesRankSpaceForStrings(t *testing.T) {
	// Ranks: a=0 b=1 c=2 z=3. Widths 1 and 2 of a table width of 3.
	q, err := Quality("s", []Bounds{{Min: "a", Max: "b"}, {Min: "c", Max: "z"}})
	if err != nil {
		t.Fatal(err)
	}
	if !near(q.AvgCoveragePct, (1.0/3+1.0/3)/2*100) {
		t.Fatalf("coverage %.4f, want rank-space 33.33", q.AvgCoveragePct)
	}
	if q.SkippingEffectiveness != 1 {
		t.Fatalf("disjoint string ranges: skipping %.3f, want 1", q.SkippingEffectiveness)
	}
}

func TestQuality_MeasuredSkippingAgreesWithTheEstimateOnCleanLayouts(t *testing.T) {
	var disjoint, stacked []Bounds
	for i := int64(0); i < 20; i++ {
		disjoint = append(disjoint, i64(i*10, i*10+9))
		stacked = append(stacked, i64(0, 199))
	}
	for _, tc := range []struct {
		files []Bounds
		want  float64
	}{{disjoint, 1}, {stacked, 0}} {
		q, err := Quality("c", tc.files)
		if err != nil {
			t.Fatal(err)
		}
		if !near(q.MeasuredSkipping, tc.want) || !near(q.SkippingEffectiveness, tc.want) {
			t.Fatalf("measured %.3f, estimate %.3f, want %.1f", q.MeasuredSkipping, q.SkippingEffectiveness, tc.want)
		}
	}
}

func TestQuality_HandlesTimestampsDatesAndDecimals(t *testing.T) {
	for _, files := range [][]Bounds{
		{{Min: types.Timestamp(0), Max: types.Timestamp(100)}, {Min: types.Timestamp(50), Max: types.Timestamp(150)}},
		{{Min: types.Date(0), Max: types.Date(100)}, {Min: types.Date(50), Max: types.Date(150)}},
	} {
		q, err := Quality("t", files)
		if err != nil {
			t.Fatal(err)
		}
		// Boundaries 0,50,100,150 → probes depths 1,1,2,2,2,1,1 → 10/7.
		if !near(q.AvgDepth, 10.0/7) || !near(q.AvgCoveragePct, 100.0/1.5) {
			t.Fatalf("%T: depth %.4f coverage %.4f", files[0].Min, q.AvgDepth, q.AvgCoveragePct)
		}
	}
	if _, err := Quality("bad", []Bounds{{Min: int64(1), Max: int64(2)}, {Min: "a", Max: "b"}}); err == nil {
		t.Fatal("mixed types accepted")
	}
}
