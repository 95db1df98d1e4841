package layoutstats

import (
	"math"
	"testing"
)

func TestForecastWithCopies_CountsOnlyTheFilesTheRunLeaves(t *testing.T) {
	// Four disjoint files and one spanning them all; the wide one is merged away and every narrow
	// file gets one copy: eight files, two deep everywhere, as Quality measures that layout.
	files := []Bounds{{int64(0), int64(9)}, {int64(10), int64(19)}, {int64(20), int64(29)}, {int64(30), int64(39)}, {int64(0), int64(39)}}
	merged := []bool{false, false, false, false, true}
	got, err := ForecastWithCopies("c", files, merged, []int{1, 1, 1, 1, 0})
	if err != nil {
		t.Fatal(err)
	}
	// Two files deep at every probe among eight: overlap ratio 1/7.
	if math.Abs(got-6.0/7) > 1e-9 {
		t.Fatalf("forecast %.4f, want 6/7", got)
	}
	var after []Bounds
	for _, f := range files[:4] {
		after = append(after, f, f)
	}
	want, err := Quality("c", after)
	if err != nil {
		t.Fatal(err)
	}
	if math.Abs(got-want.SkippingEffectiveness) > 1e-9 {
		t.Fatalf("forecast %.4f, Quality of the layout %.4f", got, want.SkippingEffectiveness)
	}
	if _, err := ForecastWithCopies("c", files, merged, []int{1}); err == nil {
		t.Fatal("mismatched copy counts accepted")
	}
}
