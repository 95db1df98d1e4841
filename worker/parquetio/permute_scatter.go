package parquetio

import (
	"fmt"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// scatter receives one leaf of one input, batch by batch, and appends each record's triplets and
// values to its row group's segment.
//
// Every segment is allocated once, on first use, for the rows the plan sends it (groupRows): growing
// thousands of small segments by doubling cost a third of the scatter's time in copies and left
// their slices up to half empty, which was memory the decoded table did not need. Fixed-width values
// and levels are sized exactly for records without repetition (a null takes a value slot it does not
// use); byte arrays by the bytes per value seen so far in this column.
type scatter struct {
	leaf      *leafDesc
	segs      []segment
	groupOf   []uint32 // the input's live rows → row group
	groupRows []int32  // row group → how many of the input's rows it receives
	rows      int
	cur       *segment
	skip      bool // the current record is left out (PermuteSubset)
	err       error

	binBytes, binVals int64 // byte-array values appended so far, to size the next segments
}

func (sc *scatter) capture(b *columnBatch) error {
	if sc.leaf.maxRep > 0 {
		return sc.captureRecords(b)
	}
	// Without repetition every triplet is a record: the loops below run per type, with no
	// per-value dispatch.
	if sc.rows+b.n > len(sc.groupOf) {
		sc.err = fmt.Errorf("more rows than the file's live rows")
		return sc.err
	}
	groups := sc.groupOf[sc.rows : sc.rows+b.n]
	sc.rows += b.n
	var defs []byte
	if sc.leaf.maxDef > 0 {
		defs = b.defs[:b.n]
	}
	vals := &b.valueSlices
	if b.idx != nil {
		vals = &b.src.valueSlices
	}
	maxDef := byte(sc.leaf.maxDef)
	switch sc.leaf.phys {
	case format.Boolean:
		scatterFixed(sc, groups, defs, maxDef, vals.bools, b.idx, func(v *valueSlices) *[]bool { return &v.bools })
	case format.Int32:
		scatterFixed(sc, groups, defs, maxDef, vals.i32, b.idx, func(v *valueSlices) *[]int32 { return &v.i32 })
	case format.Int64:
		scatterFixed(sc, groups, defs, maxDef, vals.i64, b.idx, func(v *valueSlices) *[]int64 { return &v.i64 })
	case format.Int96:
		scatterFixed(sc, groups, defs, maxDef, vals.i96, b.idx, func(v *valueSlices) *[]deprecated.Int96 { return &v.i96 })
	case format.Float:
		scatterFixed(sc, groups, defs, maxDef, vals.f32, b.idx, func(v *valueSlices) *[]float32 { return &v.f32 })
	case format.Double:
		scatterFixed(sc, groups, defs, maxDef, vals.f64, b.idx, func(v *valueSlices) *[]float64 { return &v.f64 })
	default:
		sc.scatterBytes(groups, defs, maxDef, vals, b.idx)
	}
	return nil
}

// scatterFixed appends one batch of fixed-width values, a record per triplet.
func scatterFixed[T any](sc *scatter, groups []uint32, defs []byte, maxDef byte, src []T, idx []int32, field func(*valueSlices) *[]T) {
	v := 0
	for t, g := range groups {
		defined := defs == nil || defs[t] == maxDef
		if g == skipRow {
			if defined {
				v++
			}
			continue
		}
		seg := sc.segment(g)
		seg.n++
		if defs != nil && (seg.defs != nil || !defined) {
			sc.level(seg, g, defs[t], maxDef)
		}
		if defined {
			i := v
			if idx != nil {
				i = int(idx[v])
			}
			d := field(&seg.vals)
			*d = append(*d, src[i])
			v++
		}
	}
}

// scatterBytes appends one batch of byte-array values, a record per triplet.
func (sc *scatter) scatterBytes(groups []uint32, defs []byte, maxDef byte, src *valueSlices, idx []int32) {
	if sc.binVals == 0 {
		sc.seedBinSize(src, idx)
	}
	v := 0
	for t, g := range groups {
		defined := defs == nil || defs[t] == maxDef
		if g == skipRow {
			if defined {
				v++
			}
			continue
		}
		seg := sc.segment(g)
		seg.n++
		if defs != nil && (seg.defs != nil || !defined) {
			sc.level(seg, g, defs[t], maxDef)
		}
		if defined {
			i := v
			if idx != nil {
				i = int(idx[v])
			}
			b := src.bin[src.binOff[i]:src.binOff[i+1]]
			if len(seg.vals.binOff) == 0 {
				seg.vals.binOff = append(seg.vals.binOff, uint32(len(seg.vals.bin)))
			}
			seg.vals.bin = append(seg.vals.bin, b...)
			seg.vals.binOff = append(seg.vals.binOff, uint32(len(seg.vals.bin)))
			sc.binBytes += int64(len(b))
			sc.binVals++
			v++
		}
	}
}

// seedBinSize estimates the bytes per value from the first batch, before any segment is sized: its
// values, or the dictionary entries its first indexes point to.
func (sc *scatter) seedBinSize(src *valueSlices, idx []int32) {
	if idx == nil {
		if n := len(src.binOff) - 1; n > 0 {
			sc.binBytes, sc.binVals = int64(src.binOff[n]-src.binOff[0]), int64(n)
		}
		return
	}
	for _, i := range idx[:min(len(idx), 256)] {
		sc.binBytes += int64(src.binOff[i+1] - src.binOff[i])
		sc.binVals++
	}
}

// level records a definition level of a record without repetition. A segment keeps none while all
// its values are defined (writeOutput then hands the encoder a run of maxDef): in a column without
// nulls they would be a byte per value of memory and copies for nothing.
func (sc *scatter) level(seg *segment, g uint32, d, maxDef byte) {
	if seg.defs == nil {
		if d == maxDef {
			return
		}
		seg.defs = make([]byte, seg.n-1, max(int(sc.groupRows[g]), seg.n))
		for i := range seg.defs {
			seg.defs[i] = maxDef
		}
	}
	seg.defs = append(seg.defs, d)
}

// segment returns row group g's segment, allocated for its rows on first use.
func (sc *scatter) segment(g uint32) *segment {
	seg := &sc.segs[g]
	if seg.sized {
		return seg
	}
	seg.sized = true
	n := int(sc.groupRows[g])
	if sc.leaf.maxRep > 0 || n == 0 {
		return seg
	}
	v := &seg.vals
	switch sc.leaf.phys {
	case format.Boolean:
		v.bools = make([]bool, 0, n)
	case format.Int32:
		v.i32 = make([]int32, 0, n)
	case format.Int64:
		v.i64 = make([]int64, 0, n)
	case format.Int96:
		v.i96 = make([]deprecated.Int96, 0, n)
	case format.Float:
		v.f32 = make([]float32, 0, n)
	case format.Double:
		v.f64 = make([]float64, 0, n)
	default:
		v.binOff = make([]uint32, 1, n+1)
		per := int64(16)
		if sc.binVals > 0 {
			per = sc.binBytes/sc.binVals + 1
		}
		// A tenth more than the average so far: byte arrays that vary around it rarely regrow.
		v.bin = make([]byte, 0, int64(n)*per*11/10+16)
	}
	return seg
}

// captureRecords is capture for leaves with repetition: a record spans several triplets, and may
// continue in the next batch.
func (sc *scatter) captureRecords(b *columnBatch) error {
	leaf := sc.leaf
	maxDef := byte(leaf.maxDef)
	vals := &b.valueSlices
	if b.idx != nil {
		vals = &b.src.valueSlices
	}
	v := 0
	for t := range b.n {
		if b.reps[t] == 0 {
			if sc.rows >= len(sc.groupOf) {
				sc.err = fmt.Errorf("more rows than the file's live rows")
				return sc.err
			}
			sc.cur, sc.skip = nil, sc.groupOf[sc.rows] == skipRow
			if !sc.skip {
				sc.cur = sc.segment(sc.groupOf[sc.rows])
			}
			sc.rows++
		}
		seg := sc.cur
		if seg == nil {
			if !sc.skip {
				sc.err = fmt.Errorf("a column starts inside a record")
				return sc.err
			}
			if leaf.maxDef == 0 || b.defs[t] == maxDef {
				v++
			}
			continue
		}
		seg.n++
		defined := true
		if leaf.maxDef > 0 {
			seg.defs = append(seg.defs, b.defs[t])
			defined = b.defs[t] == maxDef
		}
		seg.reps = append(seg.reps, b.reps[t])
		if defined {
			i := v
			if b.idx != nil {
				i = int(b.idx[v])
			}
			appendOne(&seg.vals, vals, leaf.phys, i)
			v++
		}
	}
	return nil
}

// appendOne appends value i of src.
func appendOne(dst, src *valueSlices, phys format.Type, i int) {
	switch phys {
	case format.Boolean:
		dst.bools = append(dst.bools, src.bools[i])
	case format.Int32:
		dst.i32 = append(dst.i32, src.i32[i])
	case format.Int64:
		dst.i64 = append(dst.i64, src.i64[i])
	case format.Int96:
		dst.i96 = append(dst.i96, src.i96[i])
	case format.Float:
		dst.f32 = append(dst.f32, src.f32[i])
	case format.Double:
		dst.f64 = append(dst.f64, src.f64[i])
	default:
		if len(dst.binOff) == 0 {
			dst.binOff = append(dst.binOff, uint32(len(dst.bin)))
		}
		dst.bin = append(dst.bin, src.bytesAt(i)...)
		dst.binOff = append(dst.binOff, uint32(len(dst.bin)))
	}
}
