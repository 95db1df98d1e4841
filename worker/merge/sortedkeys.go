package merge

import (
	"bytes"
	"cmp"
	"fmt"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// sortedKeys are the batch's distinct non-null key tuples in order, for the per-file binary search
// of dynamic file pruning. They are held in the tightest form the key's types allow, because a
// batch of a million rows sorted as boxed tuples costs more than the rest of a merge:
//   - one integral, date or timestamp column: a sorted, deduplicated []int64;
//   - one string or binary column: a sorted, deduplicated []string;
//   - several columns of such types (or booleans): one packed byte string per tuple whose byte order
//     is the tuple's order (orderedEncoding), sorted as strings;
//   - anything else (decimals, floats): boxed tuples sorted by types.Compare.
//
// comparable is false when a key type has no order (then files are pruned by partition only).
type sortedKeys struct {
	longs      []int64
	strs       []string // one string column, or packed tuples when packed is set
	packed     []ordKind
	tuples     []types.Struct
	kind       sortedKind
	comparable bool
}

type sortedKind uint8

const (
	sortedLongs sortedKind = iota + 1
	sortedStrings
	sortedPacked
	sortedBoxed
)

// count is the number of distinct keys.
func (sk *sortedKeys) count() int {
	switch sk.kind {
	case sortedLongs:
		return len(sk.longs)
	case sortedStrings, sortedPacked:
		return len(sk.strs)
	}
	return len(sk.tuples)
}

// newSortedKeys collects the distinct non-null keys of the live rows. types are the key columns'
// types, in key order.
func newSortedKeys(src *srcRows, idx []int, keyTypes []types.DataType, live func(int) bool) (*sortedKeys, error) {
	rows := src.len()
	sk := &sortedKeys{comparable: true}
	kinds := make([]ordKind, len(keyTypes))
	packable := true
	for j, t := range keyTypes {
		if kinds[j] = ordKindOf(t); kinds[j] == ordNone {
			packable = false
		}
	}
	switch {
	case len(idx) == 1 && kinds[0] == ordLong:
		sk.kind = sortedLongs
		sk.longs = make([]int64, 0, rows)
		for n := range rows {
			if v, ok := src.ordinal(n, idx[0]); ok && live(n) {
				sk.longs = append(sk.longs, v)
			}
		}
		slices.Sort(sk.longs)
		sk.longs = slices.Compact(sk.longs)
		return sk, nil
	case len(idx) == 1 && kinds[0] == ordBytes:
		sk.kind = sortedStrings
		sk.strs = make([]string, 0, rows)
		for n := range rows {
			if s, ok := bytesValue(src.value(n, idx[0])); ok && live(n) {
				sk.strs = append(sk.strs, s)
			}
		}
		slices.Sort(sk.strs)
		sk.strs = slices.Compact(sk.strs)
		return sk, nil
	case packable:
		sk.kind, sk.packed = sortedPacked, kinds
		sk.strs = make([]string, 0, rows)
		var b []byte
	next:
		for n := range rows {
			if !live(n) {
				continue
			}
			b = b[:0]
			for j, i := range idx {
				var ok bool
				if b, ok = appendOrdered(b, kinds[j], src.value(n, i)); !ok {
					continue next // a null key never matches
				}
			}
			sk.strs = append(sk.strs, string(b))
		}
		slices.Sort(sk.strs)
		sk.strs = slices.Compact(sk.strs)
		return sk, nil
	}
	return newBoxedKeys(sk, src, idx, live)
}

// newBoxedKeys is the general path: boxed tuples, deduplicated by keyOf and sorted by types.Compare.
func newBoxedKeys(sk *sortedKeys, src *srcRows, idx []int, live func(int) bool) (*sortedKeys, error) {
	sk.kind = sortedBoxed
	seen := map[string]bool{}
	for n := range src.len() {
		if !live(n) {
			continue
		}
		k, ok := src.keyOf(n, idx)
		if !ok || seen[k] {
			continue
		}
		seen[k] = true
		t := make(types.Struct, len(idx))
		for j, i := range idx {
			t[j] = src.value(n, i)
		}
		sk.tuples = append(sk.tuples, t)
	}
	if len(sk.tuples) > 0 {
		for _, v := range sk.tuples[0] {
			if _, err := types.Compare(v, v); err != nil {
				sk.comparable = false
			}
		}
	}
	if !sk.comparable {
		return sk, nil
	}
	var cmpErr error
	slices.SortFunc(sk.tuples, func(a, b types.Struct) int {
		for j := range a {
			c, err := types.Compare(a[j], b[j])
			if err != nil && cmpErr == nil {
				cmpErr = err
			}
			if c != 0 {
				return c
			}
		}
		return 0
	})
	if cmpErr != nil {
		return nil, fmt.Errorf("sort the batch's keys: %w", cmpErr)
	}
	return sk, nil
}

// colRange is what a target file says about one key column: [lo, hi] (nil bound: unknown), or
// noneMatch when the file holds no non-null value of it (all null, or a null partition value).
type colRange struct {
	lo, hi    types.Value
	noneMatch bool
}

// anyInRanges reports whether some key tuple lies within every column's range: a binary search on
// the first column's bounds, then a check of the other columns over the candidates.
func (sk *sortedKeys) anyInRanges(r []colRange) bool {
	for _, c := range r {
		if c.noneMatch {
			return false
		}
	}
	if !sk.comparable {
		return sk.count() > 0
	}
	switch sk.kind {
	case sortedLongs:
		return sk.anyLong(r[0])
	case sortedStrings:
		return sk.anyString(r[0])
	case sortedPacked:
		return sk.anyPacked(r)
	}
	return sk.anyBoxed(r)
}

func (sk *sortedKeys) anyLong(r colRange) bool {
	lo, hasLo := ordinal(r.lo)
	hi, hasHi := ordinal(r.hi)
	return anyBetween(sk.longs, lo, hasLo, hi, hasHi)
}

// longsIn counts the distinct integer keys within [lo, hi] (sortedLongs only).
func (sk *sortedKeys) longsIn(lo, hi int64) int {
	start, _ := slices.BinarySearch(sk.longs, lo)
	end, found := slices.BinarySearch(sk.longs, hi)
	if found {
		end++
	}
	return max(end-start, 0)
}

func (sk *sortedKeys) anyString(r colRange) bool {
	lo, hasLo := bytesValue(r.lo)
	hi, hasHi := bytesValue(r.hi)
	return anyBetween(sk.strs, lo, hasLo, hi, hasHi)
}

// anyBetween reports whether the sorted keys hold one in [lo, hi]; a bound that is missing (no
// statistic, or one of another type) does not limit that side.
func anyBetween[T cmp.Ordered](keys []T, lo T, hasLo bool, hi T, hasHi bool) bool {
	start := 0
	if hasLo {
		start, _ = slices.BinarySearch(keys, lo)
	}
	if start == len(keys) {
		return false
	}
	return !hasHi || keys[start] <= hi
}

// anyPacked searches the packed tuples: every tuple at or after the first column's lower bound, up
// to the first whose first column passes the upper bound, is checked column by column in encoded
// form (the encoding preserves each column's order, so bytes compare as the values do).
func (sk *sortedKeys) anyPacked(r []colRange) bool {
	lo := make([][]byte, len(r))
	hi := make([][]byte, len(r))
	for j, c := range r {
		if b, ok := appendOrdered(nil, sk.packed[j], c.lo); ok {
			lo[j] = b
		}
		if b, ok := appendOrdered(nil, sk.packed[j], c.hi); ok {
			hi[j] = b
		}
	}
	start := 0
	if lo[0] != nil {
		start, _ = slices.BinarySearch(sk.strs, string(lo[0]))
	}
	for _, t := range sk.strs[start:] {
		rest := []byte(t)
		inside := true
		for j, k := range sk.packed {
			var comp []byte
			comp, rest = splitOrdered(k, rest)
			if hi[j] != nil && bytes.Compare(comp, hi[j]) > 0 {
				if j == 0 {
					return false // every later tuple starts above the range too
				}
				inside = false
				break
			}
			if j > 0 && lo[j] != nil && bytes.Compare(comp, lo[j]) < 0 {
				inside = false
				break
			}
		}
		if inside {
			return true
		}
	}
	return false
}

func (sk *sortedKeys) anyBoxed(r []colRange) bool {
	start := 0
	if r[0].lo != nil {
		start, _ = slices.BinarySearchFunc(sk.tuples, r[0].lo, func(t types.Struct, lo types.Value) int {
			c, _ := types.Compare(t[0], lo)
			return c
		})
	}
	for _, t := range sk.tuples[start:] {
		if r[0].hi != nil {
			if c, _ := types.Compare(t[0], r[0].hi); c > 0 {
				return false
			}
		}
		if inRanges(t, r) {
			return true
		}
	}
	return false
}

func inRanges(t types.Struct, r []colRange) bool {
	for j := 1; j < len(r); j++ {
		if r[j].lo != nil {
			if c, err := types.Compare(t[j], r[j].lo); err == nil && c < 0 {
				return false
			}
		}
		if r[j].hi != nil {
			if c, err := types.Compare(t[j], r[j].hi); err == nil && c > 0 {
				return false
			}
		}
	}
	return true
}
