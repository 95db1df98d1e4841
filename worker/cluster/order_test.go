package cluster

import (
	"cmp"
	"math/rand/v2"
	"slices"
	"testing"
)

// randomKeys returns n keys whose positions are random under mask, rows numbered in order.
func randomKeys(n int, mask uint64, seed uint64) []rowKey {
	rng := rand.New(rand.NewPCG(seed, 1))
	keys := make([]rowKey, n)
	for i := range keys {
		keys[i] = rowKey{pos: rng.Uint64() & mask, row: uint32(i), file: uint32(i % 7)}
	}
	return keys
}

func TestSortKeys_IsAStableSortWhateverTheWorkers(t *testing.T) {
	cases := []struct {
		name string
		n    int
		mask uint64
	}{
		{"empty", 0, 1<<20 - 1},
		{"one", 1, 1<<20 - 1},
		{"below one chunk", 1000, 1<<20 - 1},
		{"hilbert 2x10 bits", 3*minChunk + 17, 1<<20 - 1},
		{"few distinct positions", 2*minChunk + 5, 0x7},
		{"all equal", 2 * minChunk, 0},
		{"high bits only", 2*minChunk + 1, 0xfff0_0000_0000_0000},
		{"bits apart", 2*minChunk + 3, 0x8000_0000_0000_000f},
		{"full width", 2*minChunk + 9, ^uint64(0)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			want := randomKeys(tc.n, tc.mask, 7)
			slices.SortStableFunc(want, func(a, b rowKey) int { return cmp.Compare(a.pos, b.pos) })
			for _, workers := range []int{1, 2, 3, 8} {
				got := randomKeys(tc.n, tc.mask, 7)
				sortKeys(got, workers)
				if !slices.Equal(got, want) {
					t.Fatalf("%d workers: not the stable order by position", workers)
				}
			}
		})
	}
}

func TestCutOutputs_CutsByTheRowsFileSizes(t *testing.T) {
	// Rows of file 1 weigh three times those of file 0: 4 outputs of about 3 units.
	var sorted []rowKey
	for r := range 6 {
		sorted = append(sorted, rowKey{pos: uint64(r), row: uint32(r), file: uint32(r % 2)})
	}
	got := cutOutputs(sorted, []float64{1, 3}, 3)
	if want := []int{0, 2, 4, 5}; !slices.Equal(got, want) {
		t.Fatalf("starts %v, want %v", got, want)
	}
}

func BenchmarkSortKeys(b *testing.B) {
	keys := randomKeys(4<<20, 1<<20-1, 3)
	work := make([]rowKey, len(keys))
	for _, workers := range []int{1, 2} {
		b.Run(map[int]string{1: "1 worker", 2: "2 workers"}[workers], func(b *testing.B) {
			for b.Loop() {
				copy(work, keys)
				sortKeys(work, workers)
			}
		})
	}
}
