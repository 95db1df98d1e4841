package merge

import (
	"encoding/binary"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// ordKind is how a key column's values are encoded in a packed key tuple whose byte order is the
// tuple's order: each column's encoding preserves its values' order and no encoding is a prefix of
// another, so comparing two packed tuples as strings compares them column by column.
type ordKind uint8

const (
	ordNone  ordKind = iota // no order-preserving encoding (decimal, float, nested)
	ordLong                 // byte, short, integer, long, date, timestamp: 8 bytes, sign bit flipped
	ordBytes                // string, binary: 0x00 escaped as 0x00 0xFF, ended by 0x00 0x01
	ordBool                 // boolean: one byte
)

func ordKindOf(t types.DataType) ordKind {
	pt, ok := t.(*types.PrimitiveType)
	if !ok {
		return ordNone
	}
	switch pt.Name {
	case types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong,
		types.TypeDate, types.TypeTimestamp, types.TypeTimestampNTZ:
		return ordLong
	case types.TypeString, types.TypeBinary:
		return ordBytes
	case types.TypeBoolean:
		return ordBool
	}
	return ordNone
}

// ordinal is an integral, date or timestamp value as an int64 (false for null or another type).
func ordinal(v types.Value) (int64, bool) {
	switch x := v.(type) {
	case types.Date:
		return int64(x), true
	case types.Timestamp:
		return int64(x), true
	case types.TimestampNTZ:
		return int64(x), true
	}
	return types.AsInt64(v)
}

// bytesValue is a string or binary value as a string (false for null or another type).
func bytesValue(v types.Value) (string, bool) {
	switch x := v.(type) {
	case string:
		return x, true
	case []byte:
		return string(x), true
	}
	return "", false
}

// appendOrdered appends v's order-preserving encoding; false when v is null or not of kind k (a
// statistics bound of another type is then an unknown bound).
func appendOrdered(b []byte, k ordKind, v types.Value) ([]byte, bool) {
	switch k {
	case ordLong:
		n, ok := ordinal(v)
		if !ok {
			return b, false
		}
		return binary.BigEndian.AppendUint64(b, uint64(n)^(1<<63)), true
	case ordBytes:
		s, ok := bytesValue(v)
		if !ok {
			return b, false
		}
		for {
			i := strings.IndexByte(s, 0)
			if i < 0 {
				break
			}
			b = append(append(b, s[:i]...), 0, 0xFF)
			s = s[i+1:]
		}
		return append(append(b, s...), 0, 1), true
	case ordBool:
		x, ok := v.(bool)
		if !ok {
			return b, false
		}
		if x {
			return append(b, 1), true
		}
		return append(b, 0), true
	}
	return b, false
}

// splitOrdered cuts the first column's encoding of kind k off a packed tuple.
func splitOrdered(k ordKind, b []byte) (comp, rest []byte) {
	switch k {
	case ordLong:
		return b[:8], b[8:]
	case ordBool:
		return b[:1], b[1:]
	}
	for i := 0; i+1 < len(b); i++ {
		if b[i] != 0 {
			continue
		}
		if b[i+1] == 1 {
			return b[:i+2], b[i+2:]
		}
		i++ // an escaped 0x00
	}
	return b, nil
}
