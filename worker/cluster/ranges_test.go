package cluster

import (
	"math/big"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

func TestRanges_AreApproximateRanksThatRespectOrder(t *testing.T) {
	var sample []types.Value
	for i := int64(0); i < 10000; i++ {
		sample = append(sample, i)
	}
	r, err := NewRanges(sample, 100)
	if err != nil {
		t.Fatal(err)
	}
	if r.NumRanges() != 100 || r.Bits() != 7 {
		t.Fatalf("NumRanges=%d Bits=%d, want 100 and 7", r.NumRanges(), r.Bits())
	}
	prev := uint32(0)
	counts := make([]int, r.NumRanges())
	for i := int64(0); i < 10000; i++ {
		id := r.ID(i)
		if id < prev {
			t.Fatalf("range id decreased at %d", i)
		}
		prev = id
		counts[id]++
	}
	for id, c := range counts {
		if c < 80 || c > 120 {
			t.Fatalf("range %d holds %d of 10000 uniform values, want about 100", id, c)
		}
	}
	if r.ID(nil) != 0 {
		t.Fatal("nulls must take range 0")
	}
}

func TestRanges_HandleStringsDecimalsTimestampsAndSkew(t *testing.T) {
	dec := func(u int64) types.Value { return types.DecimalValue{Unscaled: big.NewInt(u), Scale: 2} }
	cases := []struct {
		name   string
		sample []types.Value
		lo, hi types.Value
	}{
		{"strings", []types.Value{"b", "d", "a", "c", "e"}, "a", "e"},
		{"decimals", []types.Value{dec(5), dec(-3), dec(100), dec(7)}, dec(-3), dec(100)},
		{"timestamps", []types.Value{types.Timestamp(30), types.Timestamp(10), types.Timestamp(20)}, types.Timestamp(10), types.Timestamp(30)},
		{"one heavy hitter", []types.Value{int32(7), int32(7), int32(7), int32(7), int32(9)}, int32(7), int32(9)},
	}
	for _, tc := range cases {
		r, err := NewRanges(tc.sample, 1000)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if r.ID(tc.lo) > r.ID(tc.hi) {
			t.Errorf("%s: ID(lo)=%d > ID(hi)=%d", tc.name, r.ID(tc.lo), r.ID(tc.hi))
		}
		if r.NumRanges() > len(tc.sample)+1 {
			t.Errorf("%s: %d ranges from %d values", tc.name, r.NumRanges(), len(tc.sample))
		}
	}
	if _, err := NewRanges([]types.Value{int32(1), "x"}, 10); err == nil {
		t.Error("mixed-type sample accepted")
	}
}

func TestSampler_IsDeterministicForASeed(t *testing.T) {
	run := func(seed uint64) []types.Value {
		s := NewSampler(10, seed)
		for i := int64(0); i < 1000; i++ {
			s.Add(i)
			s.Add(nil)
		}
		return s.Values()
	}
	a, b, c := run(1), run(1), run(2)
	if len(a) != 10 {
		t.Fatalf("sample has %d values", len(a))
	}
	same := true
	for i := range a {
		if a[i] != b[i] {
			t.Fatal("same seed, different sample")
		}
		same = same && a[i] == c[i]
	}
	if same {
		t.Fatal("different seeds gave the same sample")
	}
}
