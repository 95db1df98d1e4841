package layoutstats

import (
	"slices"
	"testing"
)

func box2(xlo, xhi, ylo, yhi int64) Box {
	return Box{Bounds: []Bounds{i64(xlo, xhi), i64(ylo, yhi)}}
}

var defaults = OverlapOptions{MinOverlapThreshold: 0.75, MinOffendingFiles: 4}

func TestOverlapGroups_FindsFilesStackedOverACommonRegion(t *testing.T) {
	boxes := []Box{
		// A clean 2x2 grid of clustered files.
		box2(0, 49, 0, 49), box2(50, 99, 0, 49), box2(0, 49, 50, 99), box2(50, 99, 50, 99),
		// Four files from later appends, all stacked over the lower-left region. In rank space (boundaries
		// 0,1,48,49,50,99) the inner ranges [1,2] lie inside [0,3], so every pair scores 1.
		box2(0, 49, 0, 49), box2(0, 49, 1, 48), box2(1, 48, 0, 49), box2(1, 48, 1, 48),
	}
	groups, err := OverlapGroups(boxes, defaults)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 1 {
		t.Fatalf("groups = %v, want one group", groups)
	}
	// The lower-left grid file is stacked under them too; the other grid files are not.
	want := []int{0, 4, 5, 6, 7}
	if !slices.Equal(groups[0], want) {
		t.Fatalf("group = %v, want %v", groups[0], want)
	}
}

func TestOverlapGroups_IgnoresAWideFileOverDisjointNarrowOnes(t *testing.T) {
	boxes := []Box{box2(0, 100, 0, 100)}
	for i := int64(0); i < 10; i++ {
		boxes = append(boxes, box2(i*10, i*10+9, i*10, i*10+9))
	}
	groups, err := OverlapGroups(boxes, defaults)
	if err != nil {
		t.Fatal(err)
	}
	if len(groups) != 0 {
		t.Fatalf("a wide file over disjoint narrow files formed groups %v", groups)
	}
}

func TestOverlapGroups_NeedsMinOffendingFilesAndAScoreAboveTheThreshold(t *testing.T) {
	three := []Box{box2(0, 10, 0, 10), box2(0, 10, 0, 10), box2(0, 10, 0, 10)}
	if g, _ := OverlapGroups(three, defaults); len(g) != 0 {
		t.Fatalf("three stacked files formed %v with minOffendingFiles 4", g)
	}
	if g, _ := OverlapGroups(three, OverlapOptions{MinOverlapThreshold: 0.75, MinOffendingFiles: 3}); len(g) != 1 {
		t.Fatalf("three stacked files with minOffendingFiles 3: %v", g)
	}
	// Shifted by half in one column: each pair scores at most 0.5 on that column, below 0.75.
	shifted := []Box{box2(0, 10, 0, 10), box2(5, 15, 0, 10), box2(10, 20, 0, 10), box2(15, 25, 0, 10)}
	if g, _ := OverlapGroups(shifted, defaults); len(g) != 0 {
		t.Fatalf("half-shifted files formed %v", g)
	}
}

func TestOverlap1D_TreatsPointRangesAsOverlappedWhenInside(t *testing.T) {
	cases := []struct {
		a, b rankedRange
		want float64
	}{
		{rankedRange{3, 3}, rankedRange{0, 10}, 1},
		{rankedRange{11, 11}, rankedRange{0, 10}, 0},
		{rankedRange{5, 5}, rankedRange{5, 5}, 1},
		{rankedRange{0, 10}, rankedRange{10, 20}, 0},
		{rankedRange{0, 10}, rankedRange{5, 25}, 0.5},
		{rankedRange{0, 4}, rankedRange{0, 100}, 1},
	}
	for _, tc := range cases {
		if got := overlap1D(tc.a, tc.b, false); got != tc.want {
			t.Errorf("overlap1D(%v, %v) = %v, want %v", tc.a, tc.b, got, tc.want)
		}
	}
}

func TestOverlapGroups_SkipsFilesWithoutBoundsAndRejectsBadOptions(t *testing.T) {
	boxes := []Box{box2(0, 10, 0, 10), box2(0, 10, 0, 10), box2(0, 10, 0, 10), {Bounds: []Bounds{{}, i64(0, 10)}}}
	if g, _ := OverlapGroups(boxes, defaults); len(g) != 0 {
		t.Fatalf("a file without statistics joined a group: %v", g)
	}
	for _, o := range []OverlapOptions{{MinOverlapThreshold: 0.25, MinOffendingFiles: 4}, {MinOverlapThreshold: 1.1, MinOffendingFiles: 4}, {MinOverlapThreshold: 0.75, MinOffendingFiles: 1}} {
		if _, err := OverlapGroups(boxes, o); err == nil {
			t.Errorf("options %+v accepted", o)
		}
	}
}

func TestOverlapGroups_SizeAwareMergesStacksOfSimilarFilesOnly(t *testing.T) {
	// A clean grid, then four appends that each span the whole range (fresh data clustered on its own).
	var boxes []Box
	for x := int64(0); x < 4; x++ {
		for y := int64(0); y < 4; y++ {
			boxes = append(boxes, box2(x*25, x*25+24, y*25, y*25+24))
		}
	}
	for range 4 {
		boxes = append(boxes, box2(0, 99, 0, 99))
	}
	cases := []struct {
		name      string
		sizeAware bool
		want      []int
	}{
		// By the shorter range, every wide file covers every grid file: a grid file is pulled in.
		{"by the shorter range", false, []int{0, 16, 17, 18, 19}},
		// Size-aware, a wide file overlaps only the other wide files: the grid stays as it is.
		{"size-aware", true, []int{16, 17, 18, 19}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			opts := defaults
			opts.SizeAware = tc.sizeAware
			groups, err := OverlapGroups(boxes, opts)
			if err != nil {
				t.Fatal(err)
			}
			if len(groups) != 1 || !slices.Equal(groups[0], tc.want) {
				t.Fatalf("groups = %v, want [%v]", groups, tc.want)
			}
		})
	}
}
