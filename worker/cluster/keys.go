package cluster

import (
	"math/bits"
	"math/rand/v2"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// The sort never compares boxed values: each clustering value is mapped once to an order-preserving
// 64-bit key (normalize), range ids are binary searches over sampled uint64 bounds, and rows are sorted
// by their curve position (a uint64) alone.

// normalize maps a value to a uint64 whose unsigned order follows types.Compare: exactly for integers,
// dates and timestamps, monotonically (ties allowed) for floats, decimals and strings (whose first 8
// bytes decide). Ties only make two rows share a range id, which costs clustering precision, never
// correctness. Nulls map to 0 and so take the first range, as in Delta's range_partition_id. It is the
// key parquetio.SortKeys computes at column speed, so both paths may feed one sort.
func normalize(v types.Value) uint64 { return parquetio.KeyOf(v) }

// keySampler keeps a uniform sample of one column's normalized non-null keys (reservoir sampling,
// deterministic for a seed and input order).
type keySampler struct {
	size int
	seen int64
	keys []uint64
	rng  *rand.Rand
}

func newKeySampler(size int, seed uint64) *keySampler {
	return &keySampler{size: size, rng: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))}
}

func (s *keySampler) add(k uint64) {
	if k == 0 {
		return // null
	}
	s.seen++
	if len(s.keys) < s.size {
		s.keys = append(s.keys, k)
		return
	}
	if j := s.rng.Int64N(s.seen); j < int64(s.size) {
		s.keys[j] = k
	}
}

// DefaultRanges is the number of range ids per column, as Delta's spark.databricks.io.skipping.mdc.rangeId.max.
const DefaultRanges = 1000

// keyRanges maps a column's normalized keys to range ids in [0, len(bounds)]: an approximate rank, so
// that the curve sees every column on the same scale whatever its type or skew (Delta's
// range_partition_id). Bound i is the inclusive upper bound of range i; nulls (key 0) take range 0. A
// lookup table over the bounds' span narrows each search to the few bounds sharing a key's top bits:
// range ids are computed for every row of every clustering run.
type keyRanges struct {
	bounds []uint64
	base   uint64   // bounds[0]
	shift  uint     // (k-base)>>shift indexes lut
	lut    []uint32 // lut[i]: the first bound whose (bound-base)>>shift is ≥ i
}

// newKeyRanges picks up to maxRanges-1 bounds at evenly spaced quantiles of the sample, collapsing
// duplicate bounds (heavy hitters) instead of creating empty ranges.
func newKeyRanges(sample []uint64, maxRanges int) keyRanges {
	sorted := slices.Clone(sample)
	slices.Sort(sorted)
	n := min(maxRanges-1, len(sorted))
	var r keyRanges
	for i := 1; i <= n; i++ {
		b := sorted[(i*len(sorted))/(n+1)]
		if len(r.bounds) > 0 && r.bounds[len(r.bounds)-1] == b {
			continue
		}
		r.bounds = append(r.bounds, b)
	}
	if len(r.bounds) > 0 {
		r.base = r.bounds[0]
		span := r.bounds[len(r.bounds)-1] - r.base
		r.shift = uint(max(0, bits.Len64(span)-16))
		n := int(span>>r.shift) + 2
		r.lut = make([]uint32, n)
		b := 0
		for i := range r.lut {
			for b < len(r.bounds) && (r.bounds[b]-r.base)>>r.shift < uint64(i) {
				b++
			}
			r.lut[i] = uint32(b)
		}
	}
	return r
}

// id is the number of bounds strictly below k.
func (r keyRanges) id(k uint64) uint32 {
	if len(r.bounds) == 0 || k <= r.base {
		return 0
	}
	p := (k - r.base) >> r.shift
	if p+1 >= uint64(len(r.lut)) {
		i, _ := slices.BinarySearch(r.bounds, k)
		return uint32(i)
	}
	lo, hi := r.lut[p], r.lut[p+1]
	i, _ := slices.BinarySearch(r.bounds[lo:hi], k)
	return lo + uint32(i)
}

func (r keyRanges) bits() int {
	n := len(r.bounds) + 1
	b := 1
	for 1<<b < n {
		b++
	}
	return b
}

// positioner turns a row's normalized keys into its curve position.
type positioner struct {
	ranges []keyRanges
	shift  []uint // drops low bits of a range id when the curve has fewer bits per column
	curve  Curve
	width  int // bits of a position: columns × bits per column
}

// newPositioner builds per-column ranges from the samples and the curve over them: Hilbert (or Z-order
// for one column) for liquid clustering, Z-order for ZORDER BY.
func newPositioner(samples []*keySampler, zorder bool) (*positioner, error) {
	p := &positioner{}
	bits := 1
	for _, s := range samples {
		r := newKeyRanges(s.keys, DefaultRanges)
		p.ranges = append(p.ranges, r)
		bits = max(bits, r.bits())
	}
	var err error
	if zorder {
		p.curve, err = NewZOrder(len(samples), min(bits, 64/len(samples)))
		bits = min(bits, 64/len(samples))
	} else {
		bits = min(bits, MaxRangeBits)
		p.curve, err = NewCurve(len(samples), bits)
	}
	for _, r := range p.ranges {
		p.shift = append(p.shift, uint(max(0, r.bits()-bits)))
	}
	p.width = len(samples) * bits
	return p, err
}

// position computes the curve position of one row from its keys (one per column).
func (p *positioner) position(keys []uint64, point []uint32) uint64 {
	for c, k := range keys {
		point[c] = p.ranges[c].id(k) >> p.shift[c]
	}
	return p.curve.Index(point)
}
