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
		dst.I64 = gatherDense(dst.I64, l.i64, v.vidx[:v.n])
	case FlatF32:
		dst.F32 = gatherDense(dst.F32, l.f32, v.vidx[:v.n])
	case FlatF64:
		dst.F64 = gatherDense(dst.F64, l.f64, v.vidx[:v.n])
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

// gatherDense appends src[j] for every j of vidx, and the zero value where j < 0 (a null).
func gatherDense[T any](dst, src []T, vidx []int32) []T {
	for _, j := range vidx {
		var x T
		if j >= 0 {
			x = src[j]
		}
		dst = append(dst, x)
	}
	return dst
}
