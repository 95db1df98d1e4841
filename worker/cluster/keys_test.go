package cluster

import (
	"math/rand/v2"
	"slices"
	"testing"
)

func TestKeyRanges_LookupTableAgreesWithABinarySearch(t *testing.T) {
	r := rand.New(rand.NewPCG(1, 2))
	cases := []struct {
		name   string
		sample func() uint64
	}{
		{"narrow integers (shared top bits)", func() uint64 { return 1<<63 + r.Uint64N(1_000_000) }},
		{"full range", r.Uint64},
		{"heavy hitters", func() uint64 { return 1<<40 + r.Uint64N(3) }},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sample := make([]uint64, 50_000)
			for i := range sample {
				sample[i] = tc.sample()
			}
			kr := newKeyRanges(sample, DefaultRanges)
			probes := append(slices.Clone(kr.bounds), 0, 1, ^uint64(0))
			for range 20_000 {
				probes = append(probes, tc.sample(), r.Uint64())
			}
			for _, b := range kr.bounds {
				probes = append(probes, b-1, b+1)
			}
			for _, k := range probes {
				want, _ := slices.BinarySearch(kr.bounds, k)
				if got := kr.id(k); got != uint32(want) {
					t.Fatalf("id(%d) = %d, want %d", k, got, want)
				}
			}
		})
	}
}
