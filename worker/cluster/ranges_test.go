package cluster

import (
	"math/big"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

func TestKeyRanges_AreApproximateRanksThatRespectOrder(t *testing.T) {
	var sample []uint64
	for i := int64(0); i < 10000; i++ {
		sample = append(sample, normalize(i))
	}
	r := newKeyRanges(sample, 100)
	if n := len(r.bounds) + 1; n != 100 || r.bits() != 7 {
		t.Fatalf("%d ranges, %d bits; want 100 and 7", n, r.bits())
	}
	prev := uint32(0)
	counts := make([]int, len(r.bounds)+1)
	for i := int64(0); i < 10000; i++ {
		id := r.id(normalize(i))
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
	if r.id(normalize(nil)) != 0 {
		t.Fatal("nulls must take range 0")
	}
}

func TestKeyRanges_HandleStringsDecimalsTimestampsAndSkew(t *testing.T) {
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
		var keys []uint64
		for _, v := range tc.sample {
			keys = append(keys, normalize(v))
		}
		r := newKeyRanges(keys, 1000)
		if lo, hi := r.id(normalize(tc.lo)), r.id(normalize(tc.hi)); lo > hi {
			t.Errorf("%s: id(lo)=%d > id(hi)=%d", tc.name, lo, hi)
		}
		if n := len(r.bounds) + 1; n > len(tc.sample)+1 {
			t.Errorf("%s: %d ranges from %d values", tc.name, n, len(tc.sample))
		}
	}
}

func TestKeySampler_IsDeterministicForASeed(t *testing.T) {
	run := func(seed uint64) []uint64 {
		s := newKeySampler(10, seed)
		for i := int64(0); i < 1000; i++ {
			s.add(normalize(i))
			s.add(normalize(nil))
		}
		return s.keys
	}
	a, b, c := run(1), run(1), run(2)
	if len(a) != 10 {
		t.Fatalf("sample has %d keys", len(a))
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
