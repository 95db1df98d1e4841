package duckcheck

import (
	"bytes"
	"fmt"
	"math"
	"math/big"
	"math/rand/v2"

	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

type storageWriter = storage.Writer

type memWriter struct{ bytes.Buffer }

func (*memWriter) Close() error { return nil }
func (*memWriter) Abort() error { return nil }

func field(name string, t types.DataType, nullable bool) *types.StructField {
	return &types.StructField{Name: name, Type: t, Nullable: nullable}
}

func prim(n string) *types.PrimitiveType { return types.Primitive(n) }

// allTypesSchema holds every Delta type, nullable and not, nested in structs, arrays and maps.
func allTypesSchema() *types.StructType {
	var fs []*types.StructField
	for _, n := range []string{types.TypeBoolean, types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong,
		types.TypeFloat, types.TypeDouble, types.TypeString, types.TypeBinary, types.TypeDate, types.TypeTimestamp,
		types.TypeTimestampNTZ, types.TypeVariant} {
		fs = append(fs, field(n, prim(n), true), field(n+"_req", prim(n), false))
	}
	fs = append(fs,
		field("dec9", types.Decimal(9, 2), true), field("dec18", types.Decimal(18, 6), true), field("dec38", types.Decimal(38, 10), true),
		field("nested", &types.StructType{Fields: []*types.StructField{field("a", prim(types.TypeLong), true), field("b", &types.StructType{Fields: []*types.StructField{field("c", prim(types.TypeString), true)}}, true)}}, true),
		field("ints", &types.ArrayType{ElementType: prim(types.TypeInteger), ContainsNull: true}, true),
		field("matrix", &types.ArrayType{ElementType: &types.ArrayType{ElementType: prim(types.TypeDouble), ContainsNull: true}, ContainsNull: true}, true),
		field("tags", &types.MapType{KeyType: prim(types.TypeString), ValueType: prim(types.TypeLong), ValueContainsNull: true}, true),
		field("records", &types.ArrayType{ElementType: &types.StructType{Fields: []*types.StructField{field("x", prim(types.TypeDate), true)}}, ContainsNull: true}, true),
	)
	return &types.StructType{Fields: fs}
}

type gen struct{ r *rand.Rand }

func generateRows(s *types.StructType, n int, seed uint64) []types.Struct {
	g := gen{rand.New(rand.NewPCG(seed, 7))}
	rows := make([]types.Struct, n)
	for i := range rows {
		rows[i] = g.row(s)
	}
	return rows
}

func (g gen) row(s *types.StructType) types.Struct {
	r := make(types.Struct, len(s.Fields))
	for i, f := range s.Fields {
		r[i] = g.value(f.Type, f.Nullable)
	}
	return r
}

func (g gen) value(t types.DataType, nullable bool) types.Value {
	if nullable && g.r.IntN(5) == 0 {
		return nil
	}
	switch t := t.(type) {
	case *types.StructType:
		return g.row(t)
	case *types.ArrayType:
		a := types.Array{}
		for range g.r.IntN(4) {
			a = append(a, g.value(t.ElementType, t.ContainsNull))
		}
		return a
	case *types.MapType:
		m := types.Map{}
		for i := range g.r.IntN(4) {
			m = append(m, types.MapEntry{Key: fmt.Sprintf("k%d-%d", i, g.r.IntN(9)), Value: g.value(t.ValueType, t.ValueContainsNull)})
		}
		return m
	}
	p := t.(*types.PrimitiveType)
	switch p.Name {
	case types.TypeBoolean:
		return g.r.IntN(2) == 0
	case types.TypeByte:
		return int8(g.r.IntN(256) - 128)
	case types.TypeShort:
		return int16(g.r.IntN(65536) - 32768)
	case types.TypeInteger:
		return int32(g.r.Uint32())
	case types.TypeLong:
		return int64(g.r.Uint64())
	case types.TypeFloat:
		return []float32{float32(math.NaN()), 0, -1.5, float32(g.r.NormFloat64())}[g.r.IntN(4)]
	case types.TypeDouble:
		return []float64{math.NaN(), math.Inf(1), -0.25, g.r.NormFloat64() * 1e10}[g.r.IntN(4)]
	case types.TypeString:
		return fmt.Sprintf("s-%d-é漢😀", g.r.IntN(1000))
	case types.TypeBinary:
		b := make([]byte, g.r.IntN(9))
		for i := range b {
			b[i] = byte(g.r.IntN(256))
		}
		return b
	case types.TypeDate:
		return types.Date(g.r.IntN(200_000) - 100_000)
	case types.TypeTimestamp:
		return types.Timestamp(g.r.Int64N(1<<56) - 1<<55)
	case types.TypeTimestampNTZ:
		return types.TimestampNTZ(g.r.Int64N(1<<56) - 1<<55)
	case types.TypeDecimal:
		u := new(big.Int).SetUint64(g.r.Uint64())
		u.Mul(u, new(big.Int).SetUint64(g.r.Uint64()))
		u.Mod(u, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(p.Precision)), nil))
		if g.r.IntN(2) == 0 {
			u.Neg(u)
		}
		return types.DecimalValue{Unscaled: u, Scale: p.Scale}
	case types.TypeVariant:
		return types.VariantValue{Value: []byte{12, byte(g.r.IntN(256))}, Metadata: []byte{1, 0, 0}}
	}
	panic(p.Name)
}
