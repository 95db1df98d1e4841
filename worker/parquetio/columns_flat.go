package parquetio

import (
	"fmt"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// AppendFlat appends the elements of a top-level primitive vector, read as type t, to dst, a
// FlatColumn of the kind that holds t (FlatKindOf): the bridge from the columnar reader to the
// column encoder (Writer.WriteColumns), so that a Parquet batch is copied value by value without
// boxing. Null elements become null slots. dst.Null is kept as long as the column's rows.
func (v *Vector) AppendFlat(dst *FlatColumn, t types.DataType) error {
	k, ok := FlatKindOf(t)
	if !ok {
		return fmt.Errorf("type %s has no column vector", t)
	}
	if v.skipped || v.kind == VecMissing {
		for range v.n {
			dst.AppendNull(k)
		}
		return nil
	}
	want := map[FlatKind]VectorKind{FlatI32: VecLong, FlatI64: VecLong, FlatF32: VecFloat, FlatF64: VecDouble, FlatBool: VecBool, FlatBytes: VecString}[k]
	if v.kind != want {
		return fmt.Errorf("a vector of kind %d does not fit a %s column", v.kind, t)
	}
	l := v.leaf
	for _, j := range v.vidx[:v.n] {
		dst.Null = append(dst.Null, j < 0)
	}
	switch k {
	case FlatI32:
		for _, j := range v.vidx[:v.n] {
			x := int32(0)
			if j >= 0 {
				x = int32(l.i64[j]) // byte, short, integer and date values fit (leafModeFor)
			}
			dst.I32 = append(dst.I32, x)
		}
	case FlatI64:
		for _, j := range v.vidx[:v.n] {
			x := int64(0)
			if j >= 0 {
				x = l.i64[j]
			}
			dst.I64 = append(dst.I64, x)
		}
	case FlatF32:
		for _, j := range v.vidx[:v.n] {
			x := float32(0)
			if j >= 0 {
				x = l.f32[j]
			}
			dst.F32 = append(dst.F32, x)
		}
	case FlatF64:
		for _, j := range v.vidx[:v.n] {
			x := float64(0)
			if j >= 0 {
				x = l.f64[j]
			}
			dst.F64 = append(dst.F64, x)
		}
	case FlatBool:
		for _, j := range v.vidx[:v.n] {
			dst.Bool = append(dst.Bool, j >= 0 && l.bools[j])
		}
	case FlatBytes:
		if len(dst.Off) == 0 {
			dst.Off = append(dst.Off, 0)
		}
		for _, j := range v.vidx[:v.n] {
			if j >= 0 {
				dst.Bin = append(dst.Bin, l.bin[l.off[j]:l.off[j+1]]...)
			}
			dst.Off = append(dst.Off, uint32(len(dst.Bin)))
		}
	}
	return nil
}
