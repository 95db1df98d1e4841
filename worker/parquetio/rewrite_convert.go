package parquetio

import (
	"slices"

	"github.com/parquet-go/parquet-go/format"
)

// convert writes values [lo, hi) of src into dst (reusing its buffers) with a bulk conversion.
func convert(dst, src *valueSlices, kind convKind, lo, hi int) {
	switch kind {
	case convInt32ToInt64:
		dst.i64 = dst.i64[:0]
		for _, v := range src.i32[lo:hi] {
			dst.i64 = append(dst.i64, int64(v))
		}
	case convInt96ToMicros:
		dst.i64 = dst.i64[:0]
		for _, v := range src.i96[lo:hi] {
			dst.i64 = append(dst.i64, int96Micros(v))
		}
	case convMillisToMicros:
		dst.i64 = dst.i64[:0]
		for _, v := range src.i64[lo:hi] {
			dst.i64 = append(dst.i64, v*1000)
		}
	case convNanosToMicros:
		dst.i64 = dst.i64[:0]
		for _, v := range src.i64[lo:hi] {
			dst.i64 = append(dst.i64, floorDiv(v, 1000))
		}
	case convDateToMicros:
		dst.i64 = dst.i64[:0]
		for _, v := range src.i32[lo:hi] {
			dst.i64 = append(dst.i64, int64(v)*microsPerDay)
		}
	case convInt32ToDouble:
		dst.f64 = dst.f64[:0]
		for _, v := range src.i32[lo:hi] {
			dst.f64 = append(dst.f64, float64(v))
		}
	case convInt64ToDouble:
		dst.f64 = dst.f64[:0]
		for _, v := range src.i64[lo:hi] {
			dst.f64 = append(dst.f64, float64(v))
		}
	case convFloatToDouble:
		dst.f64 = dst.f64[:0]
		for _, v := range src.f32[lo:hi] {
			dst.f64 = append(dst.f64, float64(v))
		}
	}
}

// gatherValues copies the values at the given indexes of src into dst.
func gatherValues(dst, src *valueSlices, phys format.Type, keep []int32) {
	switch phys {
	case format.Boolean:
		dst.bools = slices.Grow(dst.bools[:0], len(keep))
		for _, i := range keep {
			dst.bools = append(dst.bools, src.bools[i])
		}
	case format.Int32:
		dst.i32 = slices.Grow(dst.i32[:0], len(keep))
		for _, i := range keep {
			dst.i32 = append(dst.i32, src.i32[i])
		}
	case format.Int64:
		dst.i64 = slices.Grow(dst.i64[:0], len(keep))
		for _, i := range keep {
			dst.i64 = append(dst.i64, src.i64[i])
		}
	case format.Int96:
		dst.i96 = slices.Grow(dst.i96[:0], len(keep))
		for _, i := range keep {
			dst.i96 = append(dst.i96, src.i96[i])
		}
	case format.Float:
		dst.f32 = slices.Grow(dst.f32[:0], len(keep))
		for _, i := range keep {
			dst.f32 = append(dst.f32, src.f32[i])
		}
	case format.Double:
		dst.f64 = slices.Grow(dst.f64[:0], len(keep))
		for _, i := range keep {
			dst.f64 = append(dst.f64, src.f64[i])
		}
	default:
		dst.bin, dst.binOff = dst.bin[:0], append(slices.Grow(dst.binOff[:0], len(keep)+1), 0)
		for _, i := range keep {
			dst.bin = append(dst.bin, src.bytesAt(int(i))...)
			dst.binOff = append(dst.binOff, uint32(len(dst.bin)))
		}
	}
}
