package merge

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// TestPrepare_LongKeyBitsNeverHideAKey: the bit set over the integer keys' range that the
// columnar match tests before the map must say "maybe" for every key of the batch, whatever the
// range (negative keys, the ends of int64, ranges too wide for a bit set), and the index must find
// every live row of a key.
func TestPrepare_LongKeyBitsNeverHideAKey(t *testing.T) {
	rng := rand.New(rand.NewPCG(3, 5))
	schema := &types.StructType{Fields: []*types.StructField{{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: true}}}
	cases := [][]int64{
		{-5, 5, 0, 0, 3},
		{math.MinInt64, math.MaxInt64, 0},
		{math.MaxInt64, math.MaxInt64 - 1},
		{math.MinInt64, math.MinInt64 + 1000},
		{1, 1 << 40},
	}
	for range 20 {
		var ks []int64
		base := rng.Int64N(1<<50) - 1<<49
		for range rng.IntN(500) + 1 {
			ks = append(ks, base+rng.Int64N(3000))
		}
		cases = append(cases, ks)
	}
	for _, ks := range cases {
		src := &srcRows{present: [][]bool{{true}}, files: []string{"batch"}}
		count := map[int64]int{}
		for _, k := range ks {
			src.rows = append(src.rows, types.Struct{k})
			src.fileOf = append(src.fileOf, 0)
			count[k]++
		}
		src.rows = append(src.rows, types.Struct{nil})
		src.fileOf = append(src.fileOf, 0)
		p, err := prepare(src, schema, 1, &Options{Keys: []string{"id"}}, "t")
		if err != nil {
			t.Fatal(err)
		}
		for k, n := range count {
			if _, ok := p.findLong(k); !ok {
				t.Fatalf("keys %v: the bit set hides key %d", ks, k)
			}
			first, got := p.lookup(types.Struct{k})
			if got != n || src.rows[first][0] != k {
				t.Fatalf("keys %v: lookup(%d) = row %d, %d rows; want %d rows", ks, k, first, got, n)
			}
		}
		// The sorted distinct keys read off the bits are those newSortedKeys sorts.
		if p.longBits != nil {
			sk, err := newSortedKeys(src, p.keyIdx, []types.DataType{schema.Fields[0].Type}, func(int) bool { return true })
			if err != nil {
				t.Fatal(err)
			}
			if got := p.distinctLongs(); !slices.Equal(got, sk.longs) {
				t.Fatalf("keys %v: distinct keys from the bits %v, sorted %v", ks, got, sk.longs)
			}
		}
		for range 200 {
			v := ks[0] + rng.Int64N(7000) - 3500
			if _, ok := count[v]; !ok {
				if _, n := p.lookup(types.Struct{v}); n != 0 {
					t.Fatalf("keys %v: lookup(%d) found %d rows of a key the batch lacks", ks, v, n)
				}
			}
		}
	}
}
