package merge

import (
	"math/rand/v2"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// TestSortedKeys_EveryFormFindsExactlyTheTuplesInRange checks the typed forms of the batch's sorted
// keys (longs, strings, packed tuples) against a brute-force scan of the tuples, over random
// ranges: a file survives pruning exactly when some batch key lies within all of its key ranges.
func TestSortedKeys_EveryFormFindsExactlyTheTuplesInRange(t *testing.T) {
	rng := rand.New(rand.NewPCG(7, 13))
	long := types.Primitive(types.TypeLong)
	str := types.Primitive(types.TypeString)
	date := types.Primitive(types.TypeDate)
	boolean := types.Primitive(types.TypeBoolean)
	strs := []string{"", "a", "a\x00", "a\x00b", "ab", "b", "\x00", "\x00\x00", "zz", "é"}
	value := func(typ types.DataType) types.Value {
		if rng.IntN(12) == 0 {
			return nil
		}
		switch typ {
		case long:
			return rng.Int64N(41) - 20
		case date:
			return types.Date(rng.IntN(9) - 4)
		case boolean:
			return rng.IntN(2) == 0
		}
		return strs[rng.IntN(len(strs))]
	}
	for _, keyTypes := range [][]types.DataType{{long}, {str}, {date}, {long, str}, {str, long, boolean}, {date, date}} {
		for round := range 200 {
			idx := make([]int, len(keyTypes))
			for j := range idx {
				idx[j] = j
			}
			var rows []types.Struct
			for range rng.IntN(30) {
				r := make(types.Struct, len(keyTypes)+1)
				for j, typ := range keyTypes {
					r[j] = value(typ)
				}
				rows = append(rows, r)
			}
			live := func(n int) bool { return n%7 != 3 }
			sk, err := newSortedKeys(&srcRows{rows: rows}, idx, keyTypes, live)
			if err != nil {
				t.Fatal(err)
			}
			if sk.kind == sortedBoxed {
				t.Fatalf("key types %v: boxed keys, want a typed form", keyTypes)
			}
			distinct := map[string]bool{}
			for n, r := range rows {
				if k, ok := keyOf(r, idx); ok && live(n) {
					distinct[k] = true
				}
			}
			if sk.count() != len(distinct) {
				t.Fatalf("key types %v round %d: %d sorted keys, want %d distinct", keyTypes, round, sk.count(), len(distinct))
			}
			for range 20 {
				ranges := make([]colRange, len(keyTypes))
				for j, typ := range keyTypes {
					ranges[j] = colRange{lo: value(typ), hi: value(typ)}
				}
				want := false
				for n, r := range rows {
					if _, ok := keyOf(r, idx); !ok || !live(n) {
						continue
					}
					inside := true
					for j := range keyTypes {
						if c, _ := types.Compare(r[j], ranges[j].lo); ranges[j].lo != nil && c < 0 {
							inside = false
						}
						if c, _ := types.Compare(r[j], ranges[j].hi); ranges[j].hi != nil && c > 0 {
							inside = false
						}
					}
					want = want || inside
				}
				if got := sk.anyInRanges(ranges); got != want {
					t.Fatalf("key types %v, rows %v, ranges %+v: anyInRanges %v, want %v", keyTypes, rows, ranges, got, want)
				}
			}
		}
	}
}

func TestSortedKeys_LongsInCountsTheKeysOfARange(t *testing.T) {
	sk := &sortedKeys{kind: sortedLongs, longs: []int64{-5, 0, 3, 4, 9, 20}}
	for _, c := range []struct {
		lo, hi int64
		want   int
	}{{-10, 100, 6}, {0, 4, 3}, {1, 2, 0}, {4, 4, 1}, {5, 19, 1}, {21, 30, 0}, {9, 3, 0}} {
		if got := sk.longsIn(c.lo, c.hi); got != c.want {
			t.Errorf("longsIn(%d, %d) = %d, want %d", c.lo, c.hi, got, c.want)
		}
	}
}
