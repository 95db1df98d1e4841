package types

import (
	"bytes"
	"cmp"
	"fmt"
	"math"
	"math/big"
	"strings"
	"time"
)

// Value is a logical value of a Delta type. Its dynamic type follows the column's DataType:
//
//	nil                      null, of any type
//	bool                     boolean
//	int8, int16, int32, int64   byte, short, integer, long
//	float32, float64         float, double
//	string                   string (valid UTF-8 is not enforced)
//	[]byte                   binary
//	DecimalValue             decimal(p,s)
//	Date                     date
//	Timestamp                timestamp (an instant)
//	TimestampNTZ             timestamp_ntz (a wall-clock time without zone)
//	VariantValue             variant
//	Struct                   struct: one Value per schema field, in schema order
//	Array                    array
//	Map                      map: entries in file order
//
// Logical values serve scans, statistics, partition values and comparisons; the bulk rewrite paths move
// Parquet values without converting them.
type Value = any

// DecimalValue is Unscaled × 10^-Scale. Unscaled is never nil and never mutated after construction.
type DecimalValue struct {
	Unscaled *big.Int
	Scale    int
}

// String renders the decimal exactly, e.g. "-12.340" for scale 3.
func (d DecimalValue) String() string {
	s := d.Unscaled.String()
	if d.Scale <= 0 {
		return s + strings.Repeat("0", -d.Scale)
	}
	neg := strings.HasPrefix(s, "-")
	s = strings.TrimPrefix(s, "-")
	if len(s) <= d.Scale {
		s = strings.Repeat("0", d.Scale-len(s)+1) + s
	}
	s = s[:len(s)-d.Scale] + "." + s[len(s)-d.Scale:]
	if neg {
		s = "-" + s
	}
	return s
}

// Rat returns the exact rational value.
func (d DecimalValue) Rat() *big.Rat {
	r := new(big.Rat).SetInt(d.Unscaled)
	if d.Scale > 0 {
		r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(d.Scale)), nil)))
	} else if d.Scale < 0 {
		r.Mul(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(-d.Scale)), nil)))
	}
	return r
}

// Date is a calendar date as days since 1970-01-01.
type Date int32

// Time returns midnight UTC of the date.
func (d Date) Time() time.Time { return time.Unix(int64(d)*86400, 0).UTC() }

// String renders YYYY-MM-DD.
func (d Date) String() string { return d.Time().Format("2006-01-02") }

// Timestamp is an instant as microseconds since the Unix epoch (UTC).
type Timestamp int64

// Time returns the instant in UTC.
func (t Timestamp) Time() time.Time { return time.UnixMicro(int64(t)).UTC() }

// String renders RFC 3339 in UTC with microseconds, e.g. 2023-05-31T18:58:33.633000Z.
func (t Timestamp) String() string { return t.Time().Format("2006-01-02T15:04:05.000000Z") }

// TimestampNTZ is a wall-clock time without zone as microseconds since 1970-01-01 00:00:00.
type TimestampNTZ int64

// String renders the wall-clock time with microseconds and no zone.
func (t TimestampNTZ) String() string {
	return time.UnixMicro(int64(t)).UTC().Format("2006-01-02T15:04:05.000000")
}

// VariantValue is an unshredded variant: the binary value and metadata as stored in Parquet.
type VariantValue struct {
	Value    []byte
	Metadata []byte
}

// Struct is a struct value with one entry per schema field, in schema order.
type Struct []Value

// Array is an array value.
type Array []Value

// Map is a map value; entries keep their order from the file.
type Map []MapEntry

// MapEntry is one key/value pair of a Map.
type MapEntry struct {
	Key   Value
	Value Value
}

// Compare orders two non-null primitive values of the same Delta type: -1, 0 or +1. Floats order NaN
// after every other value (as Spark does); strings and binaries compare bytewise (UTF-8 code units), which
// matches Delta statistics. It returns an error for mismatched or non-comparable types.
func Compare(a, b Value) (int, error) {
	switch x := a.(type) {
	case bool:
		if y, ok := b.(bool); ok {
			switch {
			case x == y:
				return 0, nil
			case !x:
				return -1, nil
			default:
				return 1, nil
			}
		}
	case int8:
		if y, ok := b.(int8); ok {
			return cmp.Compare(x, y), nil
		}
	case int16:
		if y, ok := b.(int16); ok {
			return cmp.Compare(x, y), nil
		}
	case int32:
		if y, ok := b.(int32); ok {
			return cmp.Compare(x, y), nil
		}
	case int64:
		if y, ok := b.(int64); ok {
			return cmp.Compare(x, y), nil
		}
	case float32:
		if y, ok := b.(float32); ok {
			return compareFloat(float64(x), float64(y)), nil
		}
	case float64:
		if y, ok := b.(float64); ok {
			return compareFloat(x, y), nil
		}
	case string:
		if y, ok := b.(string); ok {
			return strings.Compare(x, y), nil
		}
	case []byte:
		if y, ok := b.([]byte); ok {
			return bytes.Compare(x, y), nil
		}
	case DecimalValue:
		if y, ok := b.(DecimalValue); ok {
			if x.Scale == y.Scale {
				return x.Unscaled.Cmp(y.Unscaled), nil
			}
			return x.Rat().Cmp(y.Rat()), nil
		}
	case Date:
		if y, ok := b.(Date); ok {
			return cmp.Compare(x, y), nil
		}
	case Timestamp:
		if y, ok := b.(Timestamp); ok {
			return cmp.Compare(x, y), nil
		}
	case TimestampNTZ:
		if y, ok := b.(TimestampNTZ); ok {
			return cmp.Compare(x, y), nil
		}
	}
	return 0, fmt.Errorf("cannot compare %T with %T", a, b)
}

func compareFloat(x, y float64) int {
	xn, yn := math.IsNaN(x), math.IsNaN(y)
	switch {
	case xn && yn:
		return 0
	case xn:
		return 1
	case yn:
		return -1
	}
	return cmp.Compare(x, y)
}

// AsInt64 widens a value of any integer type (byte, short, integer, long, and a Go int) to int64;
// ok is false for nulls and every other type.
func AsInt64(v Value) (n int64, ok bool) {
	switch x := v.(type) {
	case int8:
		return int64(x), true
	case int16:
		return int64(x), true
	case int32:
		return int64(x), true
	case int64:
		return x, true
	case int:
		return int64(x), true
	}
	return 0, false
}
