package cluster

import (
	"fmt"
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// DefaultRanges is the number of range ids per column, as Delta's spark.databricks.io.skipping.mdc.rangeId.max.
const DefaultRanges = 1000

// Ranges maps a column's values to range ids in [0, NumRanges()): an approximate rank, so that the curve sees
// every column on the same scale whatever its type or skew (Delta's range_partition_id). Bound i is the
// inclusive upper bound of range i; nulls sort first and take range 0.
type Ranges struct {
	bounds []types.Value
}

// NewRanges picks up to maxRanges-1 bounds at evenly spaced quantiles of a sample of non-null values.
func NewRanges(sample []types.Value, maxRanges int) (*Ranges, error) {
	if maxRanges < 1 {
		return nil, fmt.Errorf("need at least one range, got %d", maxRanges)
	}
	sorted := make([]types.Value, 0, len(sample))
	for _, v := range sample {
		if v != nil {
			sorted = append(sorted, v)
		}
	}
	var cmpErr error
	slices.SortFunc(sorted, func(a, b types.Value) int {
		c, err := types.Compare(a, b)
		if err != nil && cmpErr == nil {
			cmpErr = err
		}
		return c
	})
	if cmpErr != nil {
		return nil, fmt.Errorf("sample values are not comparable: %w", cmpErr)
	}
	r := &Ranges{}
	n := maxRanges - 1
	if n > len(sorted) {
		n = len(sorted)
	}
	for i := 1; i <= n; i++ {
		// The bound closing range i-1: the value at quantile i/(n+1).
		b := sorted[(i*len(sorted))/(n+1)]
		if len(r.bounds) > 0 {
			if c, _ := types.Compare(r.bounds[len(r.bounds)-1], b); c == 0 {
				continue // heavy hitters collapse duplicate bounds instead of creating empty ranges
			}
		}
		r.bounds = append(r.bounds, b)
	}
	return r, nil
}

// NumRanges is the number of distinct range ids.
func (r *Ranges) NumRanges() int { return len(r.bounds) + 1 }

// Bits is the number of bits a range id needs.
func (r *Ranges) Bits() int {
	if r.NumRanges() <= 1 {
		return 1
	}
	return bits.Len(uint(r.NumRanges() - 1))
}

// ID returns the range id of v: the number of bounds strictly below it; nulls and incomparable values
// (which a valid column never holds) take range 0.
func (r *Ranges) ID(v types.Value) uint32 {
	if v == nil {
		return 0
	}
	lo, hi := 0, len(r.bounds)
	for lo < hi {
		mid := (lo + hi) / 2
		c, err := types.Compare(r.bounds[mid], v)
		if err != nil {
			return 0
		}
		if c < 0 {
			lo = mid + 1
		} else {
			hi = mid
		}
	}
	return uint32(lo)
}

// Sampler keeps a uniform random sample of a stream of values (reservoir sampling), deterministic for a given
// seed and input order.
type Sampler struct {
	size   int
	seen   int64
	values []types.Value
	rng    *rand.Rand
}

// NewSampler returns a sampler that keeps up to size values.
func NewSampler(size int, seed uint64) *Sampler {
	return &Sampler{size: size, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

// Add offers one value; nulls are ignored (they have their own range).
func (s *Sampler) Add(v types.Value) {
	if v == nil {
		return
	}
	s.seen++
	if len(s.values) < s.size {
		s.values = append(s.values, v)
		return
	}
	if j := s.rng.Int64N(s.seen); j < int64(s.size) {
		s.values[j] = v
	}
}

// Values returns the sample.
func (s *Sampler) Values() []types.Value { return s.values }
