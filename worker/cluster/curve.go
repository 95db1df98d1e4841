package cluster

import "fmt"

// Curve maps a point of per-column range ids to a position along a space-filling curve. Rows sorted by the
// position land in files whose value ranges are compact boxes in every clustering column.
type Curve interface {
	// Index returns the curve position of the point; len(point) must equal the curve's dimensions and every
	// coordinate must be below 1<<bits.
	Index(point []uint32) uint64
	// Dimensions is the number of columns the curve interleaves.
	Dimensions() int
}

// MaxRangeBits bounds bits per dimension so that a position fits in 64 bits for up to 4 columns.
const MaxRangeBits = 16

// NewCurve returns the curve Delta uses for the given number of columns: Z-order for one column (where it is
// the identity and Hilbert would be too) and Hilbert for two to four.
func NewCurve(dims, bits int) (Curve, error) {
	if dims < 1 || dims > 4 {
		return nil, fmt.Errorf("clustering needs 1 to 4 columns, got %d", dims)
	}
	if bits < 1 || bits > MaxRangeBits {
		return nil, fmt.Errorf("curve bits per column must be in [1, %d], got %d", MaxRangeBits, bits)
	}
	if dims == 1 {
		return ZOrderCurve{dims: 1, bits: bits}, nil
	}
	return Hilbert{dims: dims, bits: bits}, nil
}

// ZOrderCurve (type; the ZOrder function is OPTIMIZE ZORDER BY) interleaves the coordinates' bits, most significant first, column 0 first (Delta's interleave_bits).
type ZOrderCurve struct{ dims, bits int }

// NewZOrder returns a Z-order curve; Z-ORDER BY uses it for any number of columns.
func NewZOrder(dims, bits int) (ZOrderCurve, error) {
	if dims < 1 || dims*bits > 64 || bits < 1 {
		return ZOrderCurve{}, fmt.Errorf("z-order of %d columns × %d bits does not fit 64 bits", dims, bits)
	}
	return ZOrderCurve{dims: dims, bits: bits}, nil
}

// Dimensions implements Curve.
func (z ZOrderCurve) Dimensions() int { return z.dims }

// Index implements Curve.
func (z ZOrderCurve) Index(point []uint32) uint64 {
	var idx uint64
	for b := z.bits - 1; b >= 0; b-- {
		for d := 0; d < z.dims; d++ {
			idx = idx<<1 | uint64(point[d]>>uint(b)&1)
		}
	}
	return idx
}

// Hilbert is the n-dimensional Hilbert curve, computed with Skilling's transpose algorithm ("Programming the
// Hilbert curve", AIP Conf. Proc. 707, 2004): consecutive positions are always neighbouring cells, so files cut
// from a Hilbert-sorted run are compact in every column, unlike Z-order's long jumps.
type Hilbert struct{ dims, bits int }

// Dimensions implements Curve.
func (h Hilbert) Dimensions() int { return h.dims }

// Index implements Curve.
func (h Hilbert) Index(point []uint32) uint64 {
	var x [4]uint32
	copy(x[:], point[:h.dims])
	n := h.dims
	m := uint32(1) << uint(h.bits-1)
	// Inverse undo of the excess work.
	for q := m; q > 1; q >>= 1 {
		p := q - 1
		for i := 0; i < n; i++ {
			if x[i]&q != 0 {
				x[0] ^= p
			} else {
				t := (x[0] ^ x[i]) & p
				x[0] ^= t
				x[i] ^= t
			}
		}
	}
	// Gray encode.
	for i := 1; i < n; i++ {
		x[i] ^= x[i-1]
	}
	var t uint32
	for q := m; q > 1; q >>= 1 {
		if x[n-1]&q != 0 {
			t ^= q - 1
		}
	}
	for i := 0; i < n; i++ {
		x[i] ^= t
	}
	// The transposed form holds the index's bits column by column; interleave them, most significant first.
	var idx uint64
	for b := h.bits - 1; b >= 0; b-- {
		for i := 0; i < n; i++ {
			idx = idx<<1 | uint64(x[i]>>uint(b)&1)
		}
	}
	return idx
}

// maxTableBits bounds the curves tabulated by tabulate: 2^20 positions of 4 bytes, a 4 MiB table.
const maxTableBits = 20

// curveTable is a curve with every position precomputed, indexed by the coordinates' bits
// concatenated: one load instead of Skilling's loops per row, which took a tenth of a large FULL
// run's CPU time. Positions are the curve's own, so the layout does not change.
type curveTable struct {
	Curve
	bits uint
	pos  []uint32
}

// tabulate returns a Hilbert curve as a table when its positions fit maxTableBits and computing them
// all costs less than computing one per row (rows at least twice the table's entries); otherwise c
// itself (Z-order's interleaving is cheap already). The table is filled by up to workers goroutines:
// it sits between reading the keys and positioning the rows, with nothing to overlap it.
func tabulate(c Curve, rows int64, workers int) Curve {
	h, ok := c.(Hilbert)
	if !ok {
		return c
	}
	bits := h.bits
	total := h.dims * bits
	if total > maxTableBits || rows < 2<<total {
		return c
	}
	t := curveTable{Curve: c, bits: uint(bits), pos: make([]uint32, 1<<total)}
	dims := c.Dimensions()
	mask := uint32(1)<<bits - 1
	parallelChunks(splitChunks(len(t.pos), workers), func(_, lo, hi int) {
		point := make([]uint32, dims)
		for k := lo; k < hi; k++ {
			for d := range dims {
				point[d] = uint32(k) >> (uint(dims-1-d) * t.bits) & mask
			}
			t.pos[k] = uint32(c.Index(point))
		}
	})
	return t
}

// Index implements Curve.
func (t curveTable) Index(point []uint32) uint64 {
	var k uint32
	for _, c := range point {
		k = k<<t.bits | c
	}
	return uint64(t.pos[k])
}
