package parquetio

import (
	"cmp"
	"encoding/binary"
	"math"
	"math/big"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// ColumnStats are the exact statistics of one leaf primitive column of a written file.
type ColumnStats struct {
	// Path is the column's path from the top: the field names for struct nesting (as given in the
	// written schema, i.e. physical names under column mapping); leaves inside arrays and maps carry the
	// Parquet names of the levels in between ("list", "element", "key_value", "key", "value"). A variant
	// is one entry under its own path, with a null count only.
	Path []string
	// Min and Max are exact (never truncated) and ordered as types.Compare orders them (NaN last). They
	// are nil when every value is null or the column is unordered (the parts of a variant).
	Min, Max types.Value
	// NullCount counts null values (for leaves inside arrays and maps: null or absent elements).
	NullCount int64
}

// columnStatsOf converts per-leaf statistics; a variant's two leaves become one entry for the variant.
func columnStatsOf(leaves []*leafDesc, stats []leafStats) []ColumnStats {
	var out []ColumnStats
	for i, l := range leaves {
		switch l.variantPart {
		case 1:
			cs := stats[i].columnStats(l)
			cs.Path = cs.Path[:len(cs.Path)-1]
			out = append(out, cs)
		case 2:
		default:
			out = append(out, stats[i].columnStats(l))
		}
	}
	return out
}

// leafStats accumulates a leaf's statistics over row groups.
type leafStats struct {
	bounds pageBounds
	nulls  int64
}

func (s *leafStats) add(order orderKind, c *encodedChunk) {
	s.nulls += c.nulls
	mergeBounds(order, &s.bounds, c.bounds)
}

// columnStats converts accumulated physical bounds to logical values.
func (s *leafStats) columnStats(leaf *leafDesc) ColumnStats {
	cs := ColumnStats{Path: append([]string(nil), leaf.path...), NullCount: s.nulls}
	if leaf.logical == nil || leaf.order == orderNone {
		return cs
	}
	if s.bounds.ok {
		cs.Min = statValue(leaf, s.bounds.min)
		cs.Max = statValue(leaf, s.bounds.max)
	}
	if s.bounds.nan {
		// Delta (like Spark) orders NaN after every number, so it is the maximum, and the minimum too
		// when nothing else is present.
		nan := math.NaN()
		var v types.Value = nan
		if leaf.logical.Name == types.TypeFloat {
			v = float32(nan)
		}
		cs.Max = v
		if cs.Min == nil {
			cs.Min = v
		}
	}
	return cs
}

// statValue decodes a PLAIN statistics value into the leaf's logical type.
func statValue(leaf *leafDesc, b []byte) types.Value {
	t := leaf.logical
	switch t.Name {
	case types.TypeBoolean:
		return b[0] != 0
	case types.TypeByte:
		return int8(int32(binary.LittleEndian.Uint32(b)))
	case types.TypeShort:
		return int16(int32(binary.LittleEndian.Uint32(b)))
	case types.TypeInteger:
		return int32(binary.LittleEndian.Uint32(b))
	case types.TypeDate:
		return types.Date(int32(binary.LittleEndian.Uint32(b)))
	case types.TypeLong:
		return int64(binary.LittleEndian.Uint64(b))
	case types.TypeTimestamp:
		return types.Timestamp(int64(binary.LittleEndian.Uint64(b)))
	case types.TypeTimestampNTZ:
		return types.TimestampNTZ(int64(binary.LittleEndian.Uint64(b)))
	case types.TypeFloat:
		return math.Float32frombits(binary.LittleEndian.Uint32(b))
	case types.TypeDouble:
		return math.Float64frombits(binary.LittleEndian.Uint64(b))
	case types.TypeString:
		return string(b)
	case types.TypeBinary:
		return append([]byte{}, b...)
	case types.TypeDecimal:
		var u *big.Int
		switch leaf.order {
		case orderInt32:
			u = big.NewInt(int64(int32(binary.LittleEndian.Uint32(b))))
		case orderInt64:
			u = big.NewInt(int64(binary.LittleEndian.Uint64(b)))
		default:
			u = bigEndianInt(b)
		}
		return types.DecimalValue{Unscaled: u, Scale: t.Scale}
	}
	return nil
}

// compareStat orders two PLAIN statistics values of a leaf.
func compareStat(order orderKind, a, b []byte) int {
	switch order {
	case orderBool:
		return cmp.Compare(a[0], b[0])
	case orderInt32:
		return cmp.Compare(int32(binary.LittleEndian.Uint32(a)), int32(binary.LittleEndian.Uint32(b)))
	case orderInt64:
		return cmp.Compare(int64(binary.LittleEndian.Uint64(a)), int64(binary.LittleEndian.Uint64(b)))
	case orderFloat:
		return compareZeroAware(float64(math.Float32frombits(binary.LittleEndian.Uint32(a))), float64(math.Float32frombits(binary.LittleEndian.Uint32(b))))
	case orderDouble:
		return compareZeroAware(math.Float64frombits(binary.LittleEndian.Uint64(a)), math.Float64frombits(binary.LittleEndian.Uint64(b)))
	default:
		return compareBytes(order, a, b)
	}
}

// compareZeroAware orders -0 before +0 so that merged bounds stay exact.
func compareZeroAware(x, y float64) int {
	if x == 0 && y == 0 {
		return cmp.Compare(boolInt(!math.Signbit(x)), boolInt(!math.Signbit(y)))
	}
	return cmp.Compare(x, y)
}

func boolInt(b bool) int {
	if b {
		return 1
	}
	return 0
}

// parquetBounds applies the Parquet rule for float statistics: a zero minimum is written as -0 and a
// zero maximum as +0, so readers need not know which zeros a page holds.
func parquetBounds(order orderKind, min, max []byte) ([]byte, []byte) {
	switch order {
	case orderFloat:
		if math.Float32frombits(binary.LittleEndian.Uint32(min)) == 0 {
			min = binary.LittleEndian.AppendUint32(nil, math.Float32bits(float32(math.Copysign(0, -1))))
		}
		if math.Float32frombits(binary.LittleEndian.Uint32(max)) == 0 {
			max = binary.LittleEndian.AppendUint32(nil, 0)
		}
	case orderDouble:
		if math.Float64frombits(binary.LittleEndian.Uint64(min)) == 0 {
			min = binary.LittleEndian.AppendUint64(nil, math.Float64bits(math.Copysign(0, -1)))
		}
		if math.Float64frombits(binary.LittleEndian.Uint64(max)) == 0 {
			max = binary.LittleEndian.AppendUint64(nil, 0)
		}
	}
	return min, max
}
