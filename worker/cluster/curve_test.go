package cluster

import (
	"testing"
)

// grid enumerates every point of a dims-dimensional grid with side 1<<bits.
func grid(dims, bits int, visit func([]uint32)) {
	side := uint32(1) << uint(bits)
	p := make([]uint32, dims)
	var rec func(d int)
	rec = func(d int) {
		if d == dims {
			visit(p)
			return
		}
		for v := uint32(0); v < side; v++ {
			p[d] = v
			rec(d + 1)
		}
	}
	rec(0)
}

func TestCurves_AreBijectionsOnSmallGrids(t *testing.T) {
	cases := []struct{ dims, bits int }{{1, 6}, {2, 1}, {2, 4}, {3, 3}, {4, 2}, {4, 3}}
	for _, tc := range cases {
		curve, err := NewCurve(tc.dims, tc.bits)
		if err != nil {
			t.Fatal(err)
		}
		size := uint64(1) << uint(tc.dims*tc.bits)
		seen := make([]bool, size)
		grid(tc.dims, tc.bits, func(p []uint32) {
			i := curve.Index(p)
			if i >= size {
				t.Fatalf("%T %dx%d bits: index %d out of range for %v", curve, tc.dims, tc.bits, i, p)
			}
			if seen[i] {
				t.Fatalf("%T %dx%d bits: index %d hit twice (at %v)", curve, tc.dims, tc.bits, i, p)
			}
			seen[i] = true
		})
	}
}

// The defining property of the Hilbert curve: consecutive positions are neighbouring cells (distance 1).
func TestHilbert_ConsecutiveIndicesAreNeighbours(t *testing.T) {
	for _, tc := range []struct{ dims, bits int }{{2, 5}, {3, 3}, {4, 2}} {
		curve := Hilbert{dims: tc.dims, bits: tc.bits}
		size := 1 << uint(tc.dims*tc.bits)
		at := make([][]uint32, size)
		grid(tc.dims, tc.bits, func(p []uint32) { at[curve.Index(p)] = append([]uint32(nil), p...) })
		for i := 1; i < size; i++ {
			dist := 0
			for d := 0; d < tc.dims; d++ {
				diff := int(at[i][d]) - int(at[i-1][d])
				if diff < 0 {
					diff = -diff
				}
				dist += diff
			}
			if dist != 1 {
				t.Fatalf("%dD %d bits: positions %d %v and %d %v are %d apart", tc.dims, tc.bits, i-1, at[i-1], i, at[i], dist)
			}
		}
	}
}

func TestZOrder_InterleavesMostSignificantBitsFirst(t *testing.T) {
	z, err := NewZOrder(2, 2)
	if err != nil {
		t.Fatal(err)
	}
	// x=0b10, y=0b01 → bits x1 y1 x0 y0 = 1 0 0 1.
	if got := z.Index([]uint32{2, 1}); got != 0b1001 {
		t.Fatalf("Index(2,1) = %b, want 1001", got)
	}
	one, _ := NewCurve(1, 10)
	if got := one.Index([]uint32{777}); got != 777 {
		t.Fatalf("one-column curve must be the identity, got %d", got)
	}
}

func TestNewCurve_RejectsUnsupportedShapes(t *testing.T) {
	for _, tc := range []struct{ dims, bits int }{{0, 10}, {5, 10}, {2, 0}, {2, 17}} {
		if _, err := NewCurve(tc.dims, tc.bits); err == nil {
			t.Errorf("NewCurve(%d, %d) accepted", tc.dims, tc.bits)
		}
	}
}

// The tabulated Hilbert curve gives every point the position Skilling's algorithm gives it, so a
// large run's layout is the one a small run (computed per row) would have.
func TestTabulatedHilbert_EqualsTheComputedCurve(t *testing.T) {
	for _, tc := range []struct{ dims, bits int }{{2, 10}, {2, 7}, {3, 6}, {4, 5}} {
		curve := Hilbert{dims: tc.dims, bits: tc.bits}
		table := tabulate(curve, 4<<(tc.dims*tc.bits), 3)
		if _, ok := table.(curveTable); !ok {
			t.Fatalf("%dx%d bits: not tabulated (%T)", tc.dims, tc.bits, table)
		}
		grid(tc.dims, tc.bits, func(p []uint32) {
			if got, want := table.Index(p), curve.Index(p); got != want {
				t.Fatalf("%dx%d bits: table gives %d for %v, the curve %d", tc.dims, tc.bits, got, p, want)
			}
		})
	}
	if c := tabulate(Hilbert{dims: 2, bits: 10}, 1000, 2); c != (Hilbert{dims: 2, bits: 10}) {
		t.Fatalf("a run of 1000 rows tabulated the curve (%T)", c)
	}
	if c := tabulate(Hilbert{dims: 3, bits: 10}, 1<<40, 2); c != (Hilbert{dims: 3, bits: 10}) {
		t.Fatalf("a 30-bit curve was tabulated (%T)", c)
	}
}
