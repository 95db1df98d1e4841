package merge

import (
	"encoding/binary"
	"fmt"
	"math"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// keyOf encodes the key columns of a row as a map key; ok is false when any key value is null
// (null keys never match, as in SQL's equality). Values of one Delta type encode alike wherever
// they come from (source reader or target file), so equal keys give equal strings.
func keyOf(row types.Struct, idx []int) (string, bool) {
	var b []byte
	for _, i := range idx {
		v := row[i]
		if v == nil {
			return "", false
		}
		b = appendValue(b, v)
	}
	return string(b), true
}

func appendValue(b []byte, v types.Value) []byte {
	switch x := v.(type) {
	case bool:
		if x {
			return append(b, 'b', 1)
		}
		return append(b, 'b', 0)
	case int8, int16, int32, int64:
		n, _ := types.AsInt64(x)
		return binary.BigEndian.AppendUint64(append(b, 'i'), uint64(n))
	case float32:
		return appendFloat(b, float64(x))
	case float64:
		return appendFloat(b, x)
	case string:
		return append(binary.AppendUvarint(append(b, 's'), uint64(len(x))), x...)
	case []byte:
		return append(binary.AppendUvarint(append(b, 'y'), uint64(len(x))), x...)
	case types.DecimalValue:
		s := x.Rat().RatString()
		return append(binary.AppendUvarint(append(b, 'd'), uint64(len(s))), s...)
	case types.Date:
		return binary.BigEndian.AppendUint64(append(b, 'D'), uint64(x))
	case types.Timestamp:
		return binary.BigEndian.AppendUint64(append(b, 'T'), uint64(x))
	case types.TimestampNTZ:
		return binary.BigEndian.AppendUint64(append(b, 'N'), uint64(x))
	}
	s := fmt.Sprintf("%T:%v", v, v)
	return append(binary.AppendUvarint(append(b, '?'), uint64(len(s))), s...)
}

// appendFloat normalises -0 to 0 and every NaN to one NaN, as Spark normalises join keys.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		f = math.NaN()
	case f == 0:
		f = 0
	}
	return binary.BigEndian.AppendUint64(append(b, 'f'), math.Float64bits(f))
}

// describeKey renders a key for messages: "id=7, region=eu".
func describeKey(row types.Struct, idx []int, schema *types.StructType) string {
	parts := make([]string, len(idx))
	for j, i := range idx {
		parts[j] = fmt.Sprintf("%s=%v", schema.Fields[i].Name, row[i])
	}
	return strings.Join(parts, ", ")
}

// sortedKeys are the batch's distinct non-null key tuples in order, for the per-file binary search
// of dynamic file pruning. comparable is false when a key type has no order (then files are pruned
// by partition only).
type sortedKeys struct {
	tuples     []types.Struct // one value per key column
	comparable bool
}

func newSortedKeys(rows []types.Struct, idx []int, live func(int) bool) (*sortedKeys, error) {
	sk := &sortedKeys{comparable: true}
	seen := map[string]bool{}
	for n, r := range rows {
		if !live(n) {
			continue
		}
		k, ok := keyOf(r, idx)
		if !ok || seen[k] {
			continue
		}
		seen[k] = true
		t := make(types.Struct, len(idx))
		for j, i := range idx {
			t[j] = r[i]
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
		return len(sk.tuples) > 0
	}
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
