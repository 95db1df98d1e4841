package delta

import (
	"bytes"
	"encoding/json"
	"fmt"
	"math"
	"math/big"
	"strconv"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Statistics values in add.stats JSON have the shapes Spark's to_json gives them: numbers for
// integers, floats and decimals ("NaN"/"Infinity" strings for special floats), strings for
// strings, "YYYY-MM-DD" dates, ISO-8601 timestamps with a zone offset and millisecond precision,
// and zone-less ISO-8601 for timestamp_ntz.

// appendStatValue appends the JSON form of a statistics value; ok=false for values that have no
// statistics form (binary, nested values).
func appendStatValue(buf []byte, v types.Value) ([]byte, bool) {
	switch x := v.(type) {
	case nil:
		return append(buf, "null"...), true
	case bool:
		return strconv.AppendBool(buf, x), true
	case int8:
		return strconv.AppendInt(buf, int64(x), 10), true
	case int16:
		return strconv.AppendInt(buf, int64(x), 10), true
	case int32:
		return strconv.AppendInt(buf, int64(x), 10), true
	case int64:
		return strconv.AppendInt(buf, x, 10), true
	case float32:
		return appendStatFloat(buf, float64(x), 32), true
	case float64:
		return appendStatFloat(buf, x, 64), true
	case string:
		b, _ := json.Marshal(x)
		return append(buf, b...), true
	case types.DecimalValue:
		return append(buf, x.String()...), true
	case types.Date:
		return append(append(append(buf, '"'), x.String()...), '"'), true
	case types.Timestamp:
		return append(append(append(buf, '"'), x.Time().Format("2006-01-02T15:04:05.000Z07:00")...), '"'), true
	case types.TimestampNTZ:
		return append(append(append(buf, '"'), time.UnixMicro(int64(x)).UTC().Format("2006-01-02T15:04:05.000")...), '"'), true
	}
	return buf, false
}

func appendStatFloat(buf []byte, f float64, bits int) []byte {
	switch {
	case math.IsNaN(f):
		return append(buf, `"NaN"`...)
	case math.IsInf(f, 1):
		return append(buf, `"Infinity"`...)
	case math.IsInf(f, -1):
		return append(buf, `"-Infinity"`...)
	}
	return strconv.AppendFloat(buf, f, 'g', -1, bits)
}

// parseStatValue decodes a JSON statistics value for a column of type t. It returns nil for
// JSON null and an error for a value that does not fit the type; callers drop such a value
// (an unknown bound is always safe, a misread one is not).
func parseStatValue(t types.DataType, raw json.RawMessage) (types.Value, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) == 0 || string(raw) == "null" {
		return nil, nil
	}
	p, ok := t.(*types.PrimitiveType)
	if !ok {
		return nil, fmt.Errorf("type %s has no min/max statistics", t)
	}
	var str string
	isString := raw[0] == '"'
	if isString {
		if err := json.Unmarshal(raw, &str); err != nil {
			return nil, err
		}
	}
	num := string(raw)
	switch p.Name {
	case types.TypeString:
		if !isString {
			return nil, fmt.Errorf("want a string")
		}
		return str, nil
	case types.TypeBoolean:
		var b bool
		err := json.Unmarshal(raw, &b)
		return b, err
	case types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong:
		if isString {
			num = str
		}
		bits := map[string]int{types.TypeByte: 8, types.TypeShort: 16, types.TypeInteger: 32, types.TypeLong: 64}[p.Name]
		n, err := strconv.ParseInt(num, 10, bits)
		if err != nil {
			return nil, err
		}
		switch bits {
		case 8:
			return int8(n), nil
		case 16:
			return int16(n), nil
		case 32:
			return int32(n), nil
		}
		return n, nil
	case types.TypeFloat, types.TypeDouble:
		if isString {
			num = str
		}
		bits := 64
		if p.Name == types.TypeFloat {
			bits = 32
		}
		f, err := parseJavaFloat(num, bits)
		if err != nil {
			return nil, err
		}
		if bits == 32 {
			return float32(f), nil
		}
		return f, nil
	case types.TypeDecimal:
		if isString {
			num = str
		}
		r, ok := new(big.Rat).SetString(num)
		if !ok {
			return nil, fmt.Errorf("not a decimal")
		}
		return decimalFromRat(r, p.Precision, p.Scale)
	case types.TypeDate:
		if !isString {
			return nil, fmt.Errorf("want a date string")
		}
		d, err := time.Parse("2006-01-02", str)
		if err != nil {
			return nil, err
		}
		return types.Date(d.Unix() / 86400), nil
	case types.TypeTimestamp:
		if !isString {
			return nil, fmt.Errorf("want a timestamp string")
		}
		us, err := parseTimestampMicros(str, true)
		return types.Timestamp(us), err
	case types.TypeTimestampNTZ:
		if !isString {
			return nil, fmt.Errorf("want a timestamp string")
		}
		us, err := parseTimestampMicros(str, false)
		return types.TimestampNTZ(us), err
	}
	return nil, fmt.Errorf("type %s has no min/max statistics", p)
}

// appendValueJSON renders an arbitrary logical value (as read from a checkpoint's stats_parsed)
// as JSON, structs as objects keyed by the given struct type's field names. It is how struct-only
// checkpoint statistics become the add.stats JSON the rest of the worker reads.
func appendValueJSON(buf []byte, t types.DataType, v types.Value) ([]byte, error) {
	if v == nil {
		return append(buf, "null"...), nil
	}
	switch t := t.(type) {
	case *types.StructType:
		s, ok := v.(types.Struct)
		if !ok || len(s) != len(t.Fields) {
			return nil, fmt.Errorf("struct value %T does not match %s", v, t)
		}
		buf = append(buf, '{')
		first := true
		for i, f := range t.Fields {
			if s[i] == nil {
				continue // Spark's to_json leaves out null fields
			}
			if !first {
				buf = append(buf, ',')
			}
			first = false
			k, _ := json.Marshal(f.Name)
			buf = append(append(buf, k...), ':')
			var err error
			if buf, err = appendValueJSON(buf, f.Type, s[i]); err != nil {
				return nil, err
			}
		}
		return append(buf, '}'), nil
	case *types.PrimitiveType:
		out, ok := appendStatValue(buf, v)
		if !ok {
			return nil, fmt.Errorf("value of type %s has no JSON statistics form", t)
		}
		return out, nil
	}
	return nil, fmt.Errorf("type %s has no JSON statistics form", t)
}
