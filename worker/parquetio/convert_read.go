package parquetio

import (
	"fmt"
	"math/big"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// leafConverter turns one non-null stored value (value i of v) into the requested logical value. Byte
// slices are copied: page buffers are reused for the next page.
type leafConverter func(v *valueSlices, i int) types.Value

const (
	microsPerDay   = 86_400_000_000
	julianUnixDay0 = 2_440_588 // Julian day number of 1970-01-01
)

// int96Micros converts Spark's INT96 timestamp (nanoseconds of day, little endian, then the Julian day)
// to microseconds since the epoch. Integer arithmetic keeps values far outside the nanosecond range
// (year 1 or 9999, which Spark writes) exact.
func int96Micros(v deprecated.Int96) int64 {
	nanos := int64(uint64(v[0]) | uint64(v[1])<<32)
	day := int64(v[2])
	return (day-julianUnixDay0)*microsPerDay + floorDiv(nanos, 1000)
}

func floorDiv(a, b int64) int64 {
	q := a / b
	if (a%b != 0) && ((a < 0) != (b < 0)) {
		q--
	}
	return q
}

// timestampMicros converts an INT64 TIMESTAMP of the given unit to microseconds, truncating nanoseconds
// towards negative infinity as Spark does.
func timestampMicros(v int64, u timeUnit) int64 {
	switch u {
	case unitMillis:
		return v * 1000
	case unitNanos:
		return floorDiv(v, 1000)
	}
	return v
}

// bigEndianInt decodes a big-endian two's-complement integer (decimals stored as FIXED_LEN_BYTE_ARRAY or
// BYTE_ARRAY).
func bigEndianInt(b []byte) *big.Int {
	n := new(big.Int).SetBytes(b)
	if len(b) > 0 && b[0]&0x80 != 0 {
		n.Sub(n, new(big.Int).Lsh(big.NewInt(1), uint(len(b)*8)))
	}
	return n
}

var bigTen = big.NewInt(10)

func pow10(n int) *big.Int { return new(big.Int).Exp(bigTen, big.NewInt(int64(n)), nil) }

// intDigits is how many decimal digits an integer type needs when widened to a decimal.
func intDigits(t leafType) int {
	if t.phys == format.Int64 {
		return 20
	}
	if t.ann == annInt {
		switch t.bitWidth {
		case 8:
			return 3
		case 16:
			return 5
		}
	}
	return 10
}

// converterFor picks the conversion from the stored type of leaf n to the requested primitive type,
// applying Delta type widening (byte→short→int→long, float→double, integers→double and decimal,
// decimal precision/scale increase, date→timestamp_ntz). A stored type that cannot represent the
// requested one is an error naming the column.
func converterFor(n *pqNode, want *types.PrimitiveType) (leafConverter, error) {
	t := n.lt
	bad := func() (leafConverter, error) {
		return nil, fmt.Errorf("parquet column %q is stored as %s and cannot be read as %s; the file does not match the requested schema", n.pathString(), t, want)
	}
	isInt32 := t.phys == format.Int32 && (t.ann == annNone || t.ann == annInt)
	isInt64 := t.phys == format.Int64 && (t.ann == annNone || (t.ann == annInt && (t.signed || t.bitWidth < 64)))
	isDecimal := t.ann == annDecimal
	switch want.Name {
	case types.TypeBoolean:
		if t.phys == format.Boolean {
			return func(v *valueSlices, i int) types.Value { return v.bools[i] }, nil
		}
	case types.TypeByte:
		if isInt32 {
			return func(v *valueSlices, i int) types.Value { return int8(v.i32[i]) }, nil
		}
	case types.TypeShort:
		if isInt32 {
			return func(v *valueSlices, i int) types.Value { return int16(v.i32[i]) }, nil
		}
	case types.TypeInteger:
		if isInt32 && !(t.ann == annInt && !t.signed && t.bitWidth == 32) {
			return func(v *valueSlices, i int) types.Value { return v.i32[i] }, nil
		}
	case types.TypeLong:
		switch {
		case isInt32 && t.ann == annInt && !t.signed && t.bitWidth == 32:
			return func(v *valueSlices, i int) types.Value { return int64(uint32(v.i32[i])) }, nil
		case isInt32:
			return func(v *valueSlices, i int) types.Value { return int64(v.i32[i]) }, nil
		case isInt64:
			return func(v *valueSlices, i int) types.Value { return v.i64[i] }, nil
		}
	case types.TypeFloat:
		if t.phys == format.Float {
			return func(v *valueSlices, i int) types.Value { return v.f32[i] }, nil
		}
	case types.TypeDouble:
		switch {
		case t.phys == format.Double:
			return func(v *valueSlices, i int) types.Value { return v.f64[i] }, nil
		case t.phys == format.Float:
			return func(v *valueSlices, i int) types.Value { return float64(v.f32[i]) }, nil
		case isInt32:
			return func(v *valueSlices, i int) types.Value { return float64(v.i32[i]) }, nil
		case isInt64:
			return func(v *valueSlices, i int) types.Value { return float64(v.i64[i]) }, nil
		}
	case types.TypeString:
		if t.phys == format.ByteArray && !isDecimal {
			return func(v *valueSlices, i int) types.Value { return string(v.bytesAt(i)) }, nil
		}
	case types.TypeBinary:
		if (t.phys == format.ByteArray || t.phys == format.FixedLenByteArray) && !isDecimal {
			return func(v *valueSlices, i int) types.Value { return append([]byte{}, v.bytesAt(i)...) }, nil
		}
	case types.TypeDate:
		if t.phys == format.Int32 && t.ann == annDate {
			return func(v *valueSlices, i int) types.Value { return types.Date(v.i32[i]) }, nil
		}
	case types.TypeTimestamp:
		switch {
		case t.phys == format.Int96:
			return func(v *valueSlices, i int) types.Value { return types.Timestamp(int96Micros(v.i96[i])) }, nil
		case t.phys == format.Int64 && t.ann == annTimestamp:
			u := t.unit
			return func(v *valueSlices, i int) types.Value { return types.Timestamp(timestampMicros(v.i64[i], u)) }, nil
		}
	case types.TypeTimestampNTZ:
		switch {
		case t.phys == format.Int64 && t.ann == annTimestamp:
			u := t.unit
			return func(v *valueSlices, i int) types.Value { return types.TimestampNTZ(timestampMicros(v.i64[i], u)) }, nil
		case t.phys == format.Int32 && t.ann == annDate:
			return func(v *valueSlices, i int) types.Value { return types.TimestampNTZ(int64(v.i32[i]) * microsPerDay) }, nil
		case t.phys == format.Int96:
			return func(v *valueSlices, i int) types.Value { return types.TimestampNTZ(int96Micros(v.i96[i])) }, nil
		}
	case types.TypeDecimal:
		return decimalConverter(n, want, bad)
	}
	return bad()
}

func decimalConverter(n *pqNode, want *types.PrimitiveType, bad func() (leafConverter, error)) (leafConverter, error) {
	t := n.lt
	var fromScale int
	switch {
	case t.ann == annDecimal:
		if t.scale > want.Scale || t.precision-t.scale > want.Precision-want.Scale {
			return bad()
		}
		fromScale = t.scale
	case (t.phys == format.Int32 || t.phys == format.Int64) && (t.ann == annNone || (t.ann == annInt && t.signed)):
		if intDigits(t) > want.Precision-want.Scale {
			return bad()
		}
	default:
		return bad()
	}
	scale := want.Scale
	var mul *big.Int
	if scale > fromScale {
		mul = pow10(scale - fromScale)
	}
	rescale := func(u *big.Int) types.Value {
		if mul != nil {
			u.Mul(u, mul)
		}
		return types.DecimalValue{Unscaled: u, Scale: scale}
	}
	switch t.phys {
	case format.Int32:
		return func(v *valueSlices, i int) types.Value { return rescale(big.NewInt(int64(v.i32[i]))) }, nil
	case format.Int64:
		return func(v *valueSlices, i int) types.Value { return rescale(big.NewInt(v.i64[i])) }, nil
	case format.FixedLenByteArray, format.ByteArray:
		return func(v *valueSlices, i int) types.Value { return rescale(bigEndianInt(v.bytesAt(i))) }, nil
	}
	return bad()
}
