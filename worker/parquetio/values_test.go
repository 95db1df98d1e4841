package parquetio

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// valueGen produces deterministic random values of any Delta type, nulls included.
type valueGen struct {
	r        *rand.Rand
	nullRate float64
	card     int // when > 0, primitive values repeat from this many distinct draws (exercises dictionaries)
}

func newValueGen(seed uint64, nullRate float64) *valueGen {
	return &valueGen{r: rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15)), nullRate: nullRate}
}

func (g *valueGen) row(s *types.StructType) types.Struct {
	row := make(types.Struct, len(s.Fields))
	for i, f := range s.Fields {
		row[i] = g.value(f.Type, f.Nullable)
	}
	return row
}

func (g *valueGen) value(t types.DataType, nullable bool) types.Value {
	if nullable && g.r.Float64() < g.nullRate {
		return nil
	}
	switch t := t.(type) {
	case *types.StructType:
		return g.row(t)
	case *types.ArrayType:
		n := g.r.IntN(4)
		arr := types.Array{}
		for range n {
			arr = append(arr, g.value(t.ElementType, t.ContainsNull))
		}
		return arr
	case *types.MapType:
		n := g.r.IntN(4)
		m := types.Map{}
		for i := range n {
			k := g.value(t.KeyType, false)
			if s, ok := k.(string); ok {
				k = fmt.Sprintf("%s-%d", s, i)
			}
			m = append(m, types.MapEntry{Key: k, Value: g.value(t.ValueType, t.ValueContainsNull)})
		}
		return m
	case *types.PrimitiveType:
		return g.primitive(t)
	}
	panic(fmt.Sprintf("unsupported type %T", t))
}

func (g *valueGen) int64n(n int64) int64 {
	if g.card > 0 {
		return int64(g.r.IntN(g.card)) - int64(g.card/2)
	}
	return g.r.Int64N(n) - n/2
}

func (g *valueGen) primitive(t *types.PrimitiveType) types.Value {
	switch t.Name {
	case types.TypeBoolean:
		return g.r.IntN(2) == 1
	case types.TypeByte:
		return int8(g.int64n(256))
	case types.TypeShort:
		return int16(g.int64n(1 << 16))
	case types.TypeInteger:
		return int32(g.int64n(1 << 32))
	case types.TypeLong:
		if g.card == 0 && g.r.IntN(20) == 0 {
			return []int64{math.MinInt64, math.MaxInt64, 0}[g.r.IntN(3)]
		}
		return g.int64n(math.MaxInt64)
	case types.TypeFloat:
		if g.r.IntN(30) == 0 {
			return []float32{float32(math.NaN()), float32(math.Inf(1)), float32(math.Copysign(0, -1)), 0}[g.r.IntN(4)]
		}
		return float32(g.int64n(1<<20)) / 7
	case types.TypeDouble:
		if g.r.IntN(30) == 0 {
			return []float64{math.NaN(), math.Inf(-1), math.Copysign(0, -1), 0, math.MaxFloat64}[g.r.IntN(5)]
		}
		return float64(g.int64n(1<<40)) / 13
	case types.TypeString:
		if g.card > 0 {
			return fmt.Sprintf("region-%02d", g.r.IntN(g.card))
		}
		n := g.r.IntN(40)
		var sb strings.Builder
		for range n {
			alphabet := []rune("abcXYZ09 é漢😀\x00")
			sb.WriteRune(alphabet[g.r.IntN(len(alphabet))])
		}
		return sb.String()
	case types.TypeBinary:
		b := make([]byte, g.r.IntN(20))
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return b
	case types.TypeDate:
		return types.Date(g.int64n(200_000)) // about ±270 years around 1970
	case types.TypeTimestamp:
		return types.Timestamp(g.int64n(1 << 56))
	case types.TypeTimestampNTZ:
		return types.TimestampNTZ(g.int64n(1 << 56))
	case types.TypeDecimal:
		limit := new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(t.Precision)), nil)
		u := new(big.Int).SetUint64(g.r.Uint64())
		u.Mul(u, new(big.Int).SetUint64(g.r.Uint64()))
		u.Mod(u, limit)
		if g.r.IntN(2) == 0 {
			u.Neg(u)
		}
		if g.r.IntN(15) == 0 { // the extremes of the precision
			u.Sub(limit, big.NewInt(1))
			if g.r.IntN(2) == 0 {
				u.Neg(u)
			}
		}
		return types.DecimalValue{Unscaled: u, Scale: t.Scale}
	case types.TypeVariant:
		v := make([]byte, 1+g.r.IntN(8))
		for i := range v {
			v[i] = byte(g.r.IntN(256))
		}
		return types.VariantValue{Value: v, Metadata: []byte{1, 0, 0}}
	}
	panic("unsupported primitive " + t.Name)
}

// valuesEqual compares logical values exactly: floats by bit pattern (so -0 and NaN are checked), decimals
// by unscaled value and scale, composites recursively.
func valuesEqual(a, b types.Value) bool {
	if a == nil || b == nil {
		return a == nil && b == nil
	}
	switch x := a.(type) {
	case types.Struct:
		y, ok := b.(types.Struct)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case types.Array:
		y, ok := b.(types.Array)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valuesEqual(x[i], y[i]) {
				return false
			}
		}
		return true
	case types.Map:
		y, ok := b.(types.Map)
		if !ok || len(x) != len(y) {
			return false
		}
		for i := range x {
			if !valuesEqual(x[i].Key, y[i].Key) || !valuesEqual(x[i].Value, y[i].Value) {
				return false
			}
		}
		return true
	case []byte:
		y, ok := b.([]byte)
		return ok && bytes.Equal(x, y)
	case types.VariantValue:
		y, ok := b.(types.VariantValue)
		return ok && bytes.Equal(x.Value, y.Value) && bytes.Equal(x.Metadata, y.Metadata)
	case types.DecimalValue:
		y, ok := b.(types.DecimalValue)
		return ok && x.Scale == y.Scale && x.Unscaled.Cmp(y.Unscaled) == 0
	case float32:
		y, ok := b.(float32)
		return ok && math.Float32bits(x) == math.Float32bits(y)
	case float64:
		y, ok := b.(float64)
		return ok && math.Float64bits(x) == math.Float64bits(y)
	}
	return a == b
}

func assertRowsEqual(t *testing.T, want, got []types.Struct) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("read %d rows, want %d", len(got), len(want))
	}
	for i := range want {
		if !valuesEqual(want[i], got[i]) {
			t.Fatalf("row %d:\n got %v\nwant %v", i, got[i], want[i])
		}
	}
}

// field builds a StructField.
func field(name string, t types.DataType, nullable bool) *types.StructField {
	return &types.StructField{Name: name, Type: t, Nullable: nullable}
}

func prim(name string) *types.PrimitiveType { return types.Primitive(name) }

func structOf(fields ...*types.StructField) *types.StructType {
	return &types.StructType{Fields: fields}
}

// allTypesSchema has every Delta type, nullable and not, nested in structs, arrays and maps.
func allTypesSchema() *types.StructType {
	var fields []*types.StructField
	for _, n := range []string{types.TypeBoolean, types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong,
		types.TypeFloat, types.TypeDouble, types.TypeString, types.TypeBinary, types.TypeDate, types.TypeTimestamp,
		types.TypeTimestampNTZ, types.TypeVariant} {
		fields = append(fields, field(n, prim(n), true), field(n+"_req", prim(n), false))
	}
	for _, p := range [][2]int{{9, 2}, {18, 0}, {38, 10}, {5, 5}, {19, 3}} {
		fields = append(fields, field(fmt.Sprintf("dec_%d_%d", p[0], p[1]), types.Decimal(p[0], p[1]), true))
	}
	fields = append(fields,
		field("nested", structOf(
			field("a", prim(types.TypeLong), true),
			field("b", structOf(field("c", prim(types.TypeString), true), field("d", types.Decimal(38, 0), false)), true),
		), true),
		field("ints", &types.ArrayType{ElementType: prim(types.TypeInteger), ContainsNull: true}, true),
		field("strs_req", &types.ArrayType{ElementType: prim(types.TypeString), ContainsNull: false}, false),
		field("matrix", &types.ArrayType{ElementType: &types.ArrayType{ElementType: prim(types.TypeDouble), ContainsNull: true}, ContainsNull: true}, true),
		field("records", &types.ArrayType{ElementType: structOf(field("x", prim(types.TypeInteger), true), field("y", &types.MapType{KeyType: prim(types.TypeString), ValueType: prim(types.TypeLong), ValueContainsNull: true}, true)), ContainsNull: true}, true),
		field("tags", &types.MapType{KeyType: prim(types.TypeString), ValueType: prim(types.TypeString), ValueContainsNull: true}, true),
		field("deep_map", &types.MapType{KeyType: prim(types.TypeInteger), ValueType: &types.ArrayType{ElementType: prim(types.TypeTimestamp), ContainsNull: true}, ValueContainsNull: false}, true),
		field("variants", &types.ArrayType{ElementType: prim(types.TypeVariant), ContainsNull: true}, true),
	)
	return structOf(fields...)
}
