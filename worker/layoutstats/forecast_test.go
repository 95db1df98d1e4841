package layoutstats

import (
	"math"
	"math/rand/v2"
	"testing"
)

func TestIdealSkipping_IsThePerfectGrid(t *testing.T) {
	cases := []struct {
		k, dims int
		want    float64
	}{
		{1, 2, 1},
		{4, 2, 2.0 / 3},      // a 2×2 grid: every value lies in 2 of 4 files
		{16, 2, 0.8},         // 4×4: (16 − 4) / 15
		{77, 1, 1},           // one column: disjoint ranges
		{64, 3, 1 - 15.0/63}, // 4×4×4: 16 files per value
	}
	for _, tc := range cases {
		if got := IdealSkipping(tc.k, tc.dims); !near(got, tc.want) {
			t.Errorf("IdealSkipping(%d, %d) = %v, want %v", tc.k, tc.dims, got, tc.want)
		}
	}
}

func TestForecastSkipping_NowIsQualitysSkippingEffectiveness(t *testing.T) {
	r := rand.New(rand.NewPCG(3, 4))
	for trial := 0; trial < 50; trial++ {
		files := make([]Bounds, 1+r.IntN(40))
		for i := range files {
			lo := r.Int64N(1000)
			files[i] = i64(lo, lo+r.Int64N(400))
			if r.IntN(10) == 0 {
				files[i] = Bounds{}
			}
		}
		q, err := Quality("c", files)
		if err != nil {
			t.Fatal(err)
		}
		now, forecast, err := ForecastSkipping(files, make([]bool, len(files)), 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		want := q.SkippingEffectiveness
		if q.Status == StatusNoStats {
			want = 1
		}
		if !near(now, want) || !near(forecast, now) {
			t.Fatalf("trial %d: now %v, forecast %v with nothing merged; Quality says %v", trial, now, forecast, want)
		}
	}
}

func TestForecastSkipping_PredictsMerges(t *testing.T) {
	stack := func(n int) []Bounds {
		var fs []Bounds
		for i := 0; i < n; i++ {
			fs = append(fs, i64(0, 1000))
		}
		return fs
	}
	all := func(n int) []bool {
		m := make([]bool, n)
		for i := range m {
			m[i] = true
		}
		return m
	}
	t.Run("two overlapping files into one equal the real layout", func(t *testing.T) {
		files := []Bounds{i64(0, 10), i64(5, 15), i64(20, 30)}
		_, got, err := ForecastSkipping(files, []bool{true, true, false}, 1, 2)
		if err != nil {
			t.Fatal(err)
		}
		real, err := Quality("c", []Bounds{i64(0, 15), i64(20, 30)})
		if err != nil {
			t.Fatal(err)
		}
		if !near(got, real.SkippingEffectiveness) {
			t.Fatalf("forecast %v, the merged layout measures %v", got, real.SkippingEffectiveness)
		}
	})
	t.Run("a stack of 16 whole-range files into a 4x4 grid reaches the ideal", func(t *testing.T) {
		now, got, err := ForecastSkipping(stack(16), all(16), 16, 2)
		if err != nil {
			t.Fatal(err)
		}
		if !near(now, 0) || !near(got, IdealSkipping(16, 2)) {
			t.Fatalf("now %v, forecast %v; want 0 and %v", now, got, IdealSkipping(16, 2))
		}
	})
	t.Run("whole-range files over disjoint ones: merging them helps, merging none does not", func(t *testing.T) {
		var files []Bounds
		for i := int64(0); i < 10; i++ {
			files = append(files, i64(i*100, i*100+99))
		}
		files = append(files, stack(3)...)
		merged := make([]bool, len(files))
		now, same, err := ForecastSkipping(files, merged, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		merged[10], merged[11], merged[12] = true, true, true
		_, better, err := ForecastSkipping(files, merged, 1, 1)
		if err != nil {
			t.Fatal(err)
		}
		if !near(now, same) || !(better > now) {
			t.Fatalf("now %v, nothing merged %v, three stacked files merged into one %v", now, same, better)
		}
	})
	t.Run("marks must match the files", func(t *testing.T) {
		if _, _, err := ForecastSkipping(stack(2), []bool{true}, 1, 2); err == nil {
			t.Fatal("want an error for one mark over two files")
		}
	})
}

func TestGridDepth_SmallCutsLieOneWay(t *testing.T) {
	cases := []struct {
		outputs, dims int
		want          float64
	}{
		{1, 2, 1}, {2, 2, 2}, {4, 2, 2}, {8, 2, 4}, {16, 2, 4}, {77, 2, math.Sqrt(77)}, {5, 1, 1},
	}
	for _, tc := range cases {
		if got := GridDepth(tc.outputs, tc.dims); !near(got, tc.want) {
			t.Errorf("GridDepth(%d, %d) = %v, want %v", tc.outputs, tc.dims, got, tc.want)
		}
	}
	if got, want := GridSkipping(8, 2), 1-3.0/7; !near(got, want) {
		t.Errorf("GridSkipping(8, 2) = %v, want %v", got, want)
	}
}
