package cli

import (
	"encoding/base64"
	"strconv"
	"time"
	"unicode/utf8"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// appendJSON appends the JSON encoding of a value (see jsonValue for the mapping) without reflection:
// scan writes millions of rows, and encoding/json's per-value reflection made JSON output several
// times slower than reading the data.
func appendJSON(b []byte, v types.Value, t types.DataType) []byte {
	if v == nil {
		return append(b, "null"...)
	}
	switch tt := t.(type) {
	case *types.StructType:
		s := v.(types.Struct)
		b = append(b, '{')
		for i, f := range tt.Fields {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSONString(b, f.Name)
			b = append(b, ':')
			b = appendJSON(b, s[i], f.Type)
		}
		return append(b, '}')
	case *types.ArrayType:
		b = append(b, '[')
		for i, e := range v.(types.Array) {
			if i > 0 {
				b = append(b, ',')
			}
			b = appendJSON(b, e, tt.ElementType)
		}
		return append(b, ']')
	case *types.MapType:
		m := v.(types.Map)
		if p, ok := tt.KeyType.(*types.PrimitiveType); ok && p.Name == types.TypeString {
			b = append(b, '{')
			for i, e := range m {
				if i > 0 {
					b = append(b, ',')
				}
				b = appendJSONString(b, e.Key.(string))
				b = append(b, ':')
				b = appendJSON(b, e.Value, tt.ValueType)
			}
			return append(b, '}')
		}
		b = append(b, '[')
		for i, e := range m {
			if i > 0 {
				b = append(b, ',')
			}
			b = append(b, `{"key":`...)
			b = appendJSON(b, e.Key, tt.KeyType)
			b = append(b, `,"value":`...)
			b = appendJSON(b, e.Value, tt.ValueType)
			b = append(b, '}')
		}
		return append(b, ']')
	}
	switch x := v.(type) {
	case bool:
		return strconv.AppendBool(b, x)
	case string:
		return appendJSONString(b, x)
	case int8:
		return strconv.AppendInt(b, int64(x), 10)
	case int16:
		return strconv.AppendInt(b, int64(x), 10)
	case int32:
		return strconv.AppendInt(b, int64(x), 10)
	case int64:
		return strconv.AppendInt(b, x, 10)
	case float32, float64:
		switch f := jsonValue(x, t).(type) {
		case string:
			return appendJSONString(b, f)
		default:
			return append(b, f.(interface{ String() string }).String()...)
		}
	case types.DecimalValue:
		return appendJSONString(b, x.String())
	case []byte:
		b = append(b, '"')
		b = base64.StdEncoding.AppendEncode(b, x)
		return append(b, '"')
	case types.Date:
		return appendJSONString(b, x.String())
	case types.Timestamp:
		b = append(b, '"')
		b = time.UnixMicro(int64(x)).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000Z")
		return append(b, '"')
	case types.TimestampNTZ:
		b = append(b, '"')
		b = time.UnixMicro(int64(x)).UTC().AppendFormat(b, "2006-01-02T15:04:05.000000")
		return append(b, '"')
	case types.VariantValue:
		b = append(b, `{"metadata":"`...)
		b = base64.StdEncoding.AppendEncode(b, x.Metadata)
		b = append(b, `","value":"`...)
		b = base64.StdEncoding.AppendEncode(b, x.Value)
		return append(b, `"}`...)
	}
	return appendJSONString(b, "unsupported value")
}

const hexDigits = "0123456789abcdef"

// appendJSONString appends s as a JSON string: quotes, backslashes and control characters escaped,
// invalid UTF-8 replaced by U+FFFD (as encoding/json does), everything else verbatim.
func appendJSONString(b []byte, s string) []byte {
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); {
		c := s[i]
		if c < utf8.RuneSelf {
			if c >= 0x20 && c != '"' && c != '\\' {
				i++
				continue
			}
			b = append(b, s[start:i]...)
			switch c {
			case '"', '\\':
				b = append(b, '\\', c)
			case '\n':
				b = append(b, '\\', 'n')
			case '\r':
				b = append(b, '\\', 'r')
			case '\t':
				b = append(b, '\\', 't')
			default:
				b = append(b, '\\', 'u', '0', '0', hexDigits[c>>4], hexDigits[c&0xf])
			}
			i++
			start = i
			continue
		}
		r, size := utf8.DecodeRuneInString(s[i:])
		if r == utf8.RuneError && size == 1 {
			b = append(b, s[start:i]...)
			b = append(b, `\ufffd`...)
			i += size
			start = i
			continue
		}
		i += size
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}
