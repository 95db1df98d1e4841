package merge

import (
	"encoding/binary"
	"fmt"
	"math"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// keyOf encodes the key columns of a row as a map key; ok is false when any key value is null
// (null keys never match, as in SQL's equality). Values of one Delta type encode alike wherever
// they come from (source reader or target file), so equal keys give equal strings.
func keyOf(row types.Struct, idx []int) (string, bool) {
	var b []byte
	for _, i := range idx {
		v := row[i]
		if v == nil {
			return "", false
		}
		b = appendValue(b, v)
	}
	return string(b), true
}

func appendValue(b []byte, v types.Value) []byte {
	switch x := v.(type) {
	case bool:
		if x {
			return append(b, 'b', 1)
		}
		return append(b, 'b', 0)
	case int8, int16, int32, int64:
		n, _ := types.AsInt64(x)
		return binary.BigEndian.AppendUint64(append(b, 'i'), uint64(n))
	case float32:
		return appendFloat(b, float64(x))
	case float64:
		return appendFloat(b, x)
	case string:
		return append(binary.AppendUvarint(append(b, 's'), uint64(len(x))), x...)
	case []byte:
		return append(binary.AppendUvarint(append(b, 'y'), uint64(len(x))), x...)
	case types.DecimalValue:
		s := x.Rat().RatString()
		return append(binary.AppendUvarint(append(b, 'd'), uint64(len(s))), s...)
	case types.Date:
		return binary.BigEndian.AppendUint64(append(b, 'D'), uint64(x))
	case types.Timestamp:
		return binary.BigEndian.AppendUint64(append(b, 'T'), uint64(x))
	case types.TimestampNTZ:
		return binary.BigEndian.AppendUint64(append(b, 'N'), uint64(x))
	}
	s := fmt.Sprintf("%T:%v", v, v)
	return append(binary.AppendUvarint(append(b, '?'), uint64(len(s))), s...)
}

// appendFloat normalises -0 to 0 and every NaN to one NaN, as Spark normalises join keys.
func appendFloat(b []byte, f float64) []byte {
	switch {
	case math.IsNaN(f):
		f = math.NaN()
	case f == 0:
		f = 0
	}
	return binary.BigEndian.AppendUint64(append(b, 'f'), math.Float64bits(f))
}

// describeKey renders a key for messages: "id=7, region=eu".
func describeKey(row types.Struct, idx []int, schema *types.StructType) string {
	parts := make([]string, len(idx))
	for j, i := range idx {
		parts[j] = fmt.Sprintf("%s=%v", schema.Fields[i].Name, row[i])
	}
	return strings.Join(parts, ", ")
}
