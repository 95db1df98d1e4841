package delta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// PartitionValue is one entry of add.partitionValues. Null is set for JSON null; the protocol
// also reads an empty string as null, which Typed/IsNull take care of.
type PartitionValue struct {
	Column string // physical column name under column mapping
	Value  string
	Null   bool
}

// IsNull reports whether the entry means SQL NULL (JSON null or "").
func (p PartitionValue) IsNull() bool { return p.Null || p.Value == "" }

// PartitionValues is add.partitionValues, sorted by column. A sorted slice instead of a map keeps
// a million-file snapshot small (one entry costs 40 bytes, a small Go map several hundred).
type PartitionValues []PartitionValue

// Get returns the raw entry for a (physical) column.
func (pv PartitionValues) Get(column string) (PartitionValue, bool) {
	i, ok := slices.BinarySearchFunc(pv, column, func(e PartitionValue, c string) int { return strings.Compare(e.Column, c) })
	if !ok {
		return PartitionValue{}, false
	}
	return pv[i], true
}

// Map returns the values as the protocol's map (nil for null).
func (pv PartitionValues) Map() map[string]*string {
	m := make(map[string]*string, len(pv))
	for _, e := range pv {
		if e.Null {
			m[e.Column] = nil
		} else {
			m[e.Column] = ptr(e.Value)
		}
	}
	return m
}

// NewPartitionValues builds sorted partition values from a map; nil values are nulls.
func NewPartitionValues(m map[string]*string) PartitionValues {
	pv := make(PartitionValues, 0, len(m))
	for k, v := range m {
		if v == nil {
			pv = append(pv, PartitionValue{Column: k, Null: true})
		} else {
			pv = append(pv, PartitionValue{Column: k, Value: *v})
		}
	}
	pv.sortByColumn()
	return pv
}

// sortByColumn puts the values in column-name order, the one order every PartitionValues is kept in.
func (pv PartitionValues) sortByColumn() {
	slices.SortFunc(pv, func(a, b PartitionValue) int { return strings.Compare(a.Column, b.Column) })
}

// MarshalJSON writes the protocol's JSON object (always an object, {} when empty).
func (pv PartitionValues) MarshalJSON() ([]byte, error) {
	var b bytes.Buffer
	b.WriteByte('{')
	for i, e := range pv {
		if i > 0 {
			b.WriteByte(',')
		}
		k, _ := json.Marshal(e.Column)
		b.Write(k)
		b.WriteByte(':')
		if e.Null {
			b.WriteString("null")
		} else {
			v, _ := json.Marshal(e.Value)
			b.Write(v)
		}
	}
	b.WriteByte('}')
	return b.Bytes(), nil
}

// UnmarshalJSON reads the protocol's JSON object.
func (pv *PartitionValues) UnmarshalJSON(b []byte) error {
	var m map[string]*string
	if err := json.Unmarshal(b, &m); err != nil {
		return fmt.Errorf("partitionValues: %w", err)
	}
	if m == nil {
		*pv = nil
		return nil
	}
	*pv = NewPartitionValues(m)
	return nil
}

// ParsePartitionValue converts a serialized partition value into a typed value for the column's
// type (PROTOCOL.md §Partition Value Serialization). Null (JSON null or "") gives nil.
// Timestamps without a zone are read as UTC, as delta-kernel does; Spark writes them in its
// session time zone, which the log does not record.
func ParsePartitionValue(t types.DataType, v PartitionValue) (types.Value, error) {
	if v.IsNull() {
		return nil, nil
	}
	p, ok := t.(*types.PrimitiveType)
	if !ok {
		return nil, fmt.Errorf("partition column %q has non-primitive type %s", v.Column, t)
	}
	val, err := parsePrimitiveString(p, v.Value)
	if err != nil {
		return nil, fmt.Errorf("partition column %q value %q: %w", v.Column, v.Value, err)
	}
	return val, nil
}

func parsePrimitiveString(p *types.PrimitiveType, s string) (types.Value, error) {
	switch p.Name {
	case types.TypeString:
		return s, nil
	case types.TypeBinary:
		// Spark casts binary partition values to string as UTF-8; the bytes are the string's.
		return []byte(s), nil
	case types.TypeBoolean:
		switch strings.ToLower(s) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("not a boolean")
	case types.TypeByte:
		n, err := strconv.ParseInt(s, 10, 8)
		return int8(n), err
	case types.TypeShort:
		n, err := strconv.ParseInt(s, 10, 16)
		return int16(n), err
	case types.TypeInteger:
		n, err := strconv.ParseInt(s, 10, 32)
		return int32(n), err
	case types.TypeLong:
		n, err := strconv.ParseInt(s, 10, 64)
		return n, err
	case types.TypeFloat:
		f, err := parseJavaFloat(s, 32)
		return float32(f), err
	case types.TypeDouble:
		return parseJavaFloat(s, 64)
	case types.TypeDecimal:
		return parseDecimal(s, p.Precision, p.Scale)
	case types.TypeDate:
		d, err := time.Parse("2006-01-02", s)
		if err != nil {
			return nil, err
		}
		return types.Date(d.Unix() / 86400), nil
	case types.TypeTimestamp:
		us, err := parseTimestampMicros(s, true)
		return types.Timestamp(us), err
	case types.TypeTimestampNTZ:
		us, err := parseTimestampMicros(s, false)
		return types.TimestampNTZ(us), err
	}
	return nil, fmt.Errorf("type %s cannot be a partition column", p)
}

// parseJavaFloat also accepts Java's spellings of the special values.
func parseJavaFloat(s string, bits int) (float64, error) {
	switch s {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	return strconv.ParseFloat(s, bits)
}

// parseDecimal parses a plain or exponent decimal string exactly at the column's scale; a value
// that would need rounding or more precision is an error, never silently changed.
func parseDecimal(s string, precision, scale int) (types.DecimalValue, error) {
	r, ok := new(big.Rat).SetString(s)
	if !ok {
		return types.DecimalValue{}, fmt.Errorf("not a decimal")
	}
	return decimalFromRat(r, precision, scale)
}

func decimalFromRat(r *big.Rat, precision, scale int) (types.DecimalValue, error) {
	pow := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)
	scaled := new(big.Rat).Mul(r, new(big.Rat).SetInt(pow))
	if !scaled.IsInt() {
		return types.DecimalValue{}, fmt.Errorf("%s has more than %d fractional digits", r.FloatString(scale+4), scale)
	}
	u := new(big.Int).Set(scaled.Num())
	if precision > 0 && len(new(big.Int).Abs(u).String()) > precision {
		return types.DecimalValue{}, fmt.Errorf("%s exceeds decimal(%d,%d)", r.FloatString(scale), precision, scale)
	}
	return types.DecimalValue{Unscaled: u, Scale: scale}, nil
}

var timestampLayouts = []string{
	"2006-01-02 15:04:05.999999999",
	"2006-01-02T15:04:05.999999999",
	"2006-01-02 15:04",
	"2006-01-02T15:04",
	"2006-01-02",
}

// parseTimestampMicros accepts both protocol forms: "YYYY-MM-DD HH:MM:SS[.ffffff]" and ISO-8601
// with a zone ("…T…Z" or "+hh:mm"). A zone is only allowed for timestamp (not timestamp_ntz).
func parseTimestampMicros(s string, zoned bool) (int64, error) {
	if zoned {
		for _, layout := range []string{time.RFC3339Nano, "2006-01-02 15:04:05.999999999Z07:00"} {
			if t, err := time.Parse(layout, s); err == nil {
				return t.UnixMicro(), nil
			}
		}
	}
	for _, layout := range timestampLayouts {
		if t, err := time.Parse(layout, s); err == nil {
			return t.UnixMicro(), nil
		}
	}
	return 0, fmt.Errorf("not a timestamp in a protocol form (YYYY-MM-DD HH:MM:SS[.ffffff] or ISO-8601)")
}

// FormatPartitionValue serializes a typed value the way new files should carry it: ISO-8601 UTC
// with microseconds for timestamps (the form PROTOCOL.md recommends), plain decimals, Java-style
// special floats. nil gives the null entry.
func FormatPartitionValue(column string, v types.Value) (PartitionValue, error) {
	pv := PartitionValue{Column: column}
	switch x := v.(type) {
	case nil:
		pv.Null = true
	case string:
		pv.Value = x
	case []byte:
		pv.Value = string(x)
	case bool:
		pv.Value = strconv.FormatBool(x)
	case int8, int16, int32, int64:
		pv.Value = fmt.Sprint(x)
	case float32:
		pv.Value = formatJavaFloat(float64(x), 32)
	case float64:
		pv.Value = formatJavaFloat(x, 64)
	case types.DecimalValue:
		pv.Value = x.String()
	case types.Date:
		pv.Value = x.String()
	case types.Timestamp:
		pv.Value = x.Time().Format("2006-01-02T15:04:05.000000Z")
	case types.TimestampNTZ:
		pv.Value = time.UnixMicro(int64(x)).UTC().Format("2006-01-02 15:04:05.000000")
	default:
		return pv, fmt.Errorf("partition column %q: %T cannot be a partition value", column, v)
	}
	if !pv.Null && pv.Value == "" {
		// "" reads back as null; an empty string partition value cannot be represented, and
		// Spark writes it as null too.
		pv.Null = true
	}
	return pv, nil
}

func formatJavaFloat(f float64, bits int) string {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return strconv.FormatFloat(f, 'g', -1, bits)
}

// NormalizePartitionValue returns a canonical string for a serialized value of type t, so that
// equal values written in different forms ("2024-01-01 00:00:00" and "2024-01-01T00:00:00.000000Z",
// "1.0" and "1.00") group together. It is for grouping and comparison, not for writing.
func NormalizePartitionValue(t types.DataType, v PartitionValue) (string, error) {
	typed, err := ParsePartitionValue(t, v)
	if err != nil {
		return "", err
	}
	if typed == nil {
		return "\x00null", nil // distinct from every non-null canonical form
	}
	if d, ok := typed.(types.DecimalValue); ok {
		// Compare by value, not by scale: 1.0 and 1.00 are equal.
		return d.Rat().RatString(), nil
	}
	out, err := FormatPartitionValue(v.Column, typed)
	if err != nil {
		return "", err
	}
	return out.Value, nil
}
