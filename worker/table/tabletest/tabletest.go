// Package tabletest builds tables for tests of the data plane (here and in the benchmark module's
// DuckDB cross-checks): a schema with every Delta type deltakeeper writes, nested ones included, rows
// exercising their edges (nulls, extreme values, decimals at full precision, sub-millisecond
// timestamps, partition values that need escaping), and a helper creating such a table.
package tabletest

import (
	"context"
	"fmt"
	"math"
	"math/big"
	"strconv"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func prim(name string) *types.PrimitiveType { return types.Primitive(name) }

func field(name string, t types.DataType) *types.StructField {
	return &types.StructField{Name: name, Type: t, Nullable: true}
}

// AllTypesSchema has one column of every primitive type, nested struct, array and map columns, and
// two partition candidates: "part" (string, values needing escaping) and "pday" (date, with nulls).
func AllTypesSchema() *types.StructType {
	return &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: prim(types.TypeLong), Nullable: false},
		field("b", prim(types.TypeBoolean)),
		field("i8", prim(types.TypeByte)),
		field("i16", prim(types.TypeShort)),
		field("i32", prim(types.TypeInteger)),
		field("i64", prim(types.TypeLong)),
		field("f32", prim(types.TypeFloat)),
		field("f64", prim(types.TypeDouble)),
		field("dec_small", types.Decimal(9, 2)),
		field("dec_mid", types.Decimal(18, 6)),
		field("dec_big", types.Decimal(38, 10)),
		field("s", prim(types.TypeString)),
		field("bin", prim(types.TypeBinary)),
		field("d", prim(types.TypeDate)),
		field("ts", prim(types.TypeTimestamp)),
		field("ts_ntz", prim(types.TypeTimestampNTZ)),
		field("st", &types.StructType{Fields: []*types.StructField{
			field("x", prim(types.TypeInteger)),
			field("y", prim(types.TypeString)),
			field("inner", &types.StructType{Fields: []*types.StructField{field("z", types.Decimal(10, 3))}}),
		}}),
		field("arr", &types.ArrayType{ElementType: prim(types.TypeLong), ContainsNull: true}),
		field("arr_st", &types.ArrayType{ElementType: &types.StructType{Fields: []*types.StructField{
			field("k", prim(types.TypeString)), field("v", prim(types.TypeDouble))}}, ContainsNull: true}),
		field("m", &types.MapType{KeyType: prim(types.TypeString), ValueType: prim(types.TypeInteger), ValueContainsNull: true}),
		field("part", prim(types.TypeString)),
		field("pday", prim(types.TypeDate)),
	}}
}

// PartitionValuesSpecial are the string partition values of AllTypesRows: characters Spark escapes
// in directory names, spaces, non-ASCII, and null.
var PartitionValuesSpecial = []types.Value{"a=b/c", "sp ace", "pct%25", "colon:x", "ünï", nil, "plain"}

func dec(s string, scale int) types.DecimalValue {
	r, _ := new(big.Rat).SetString(s)
	n := new(big.Int).Mul(r.Num(), new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil))
	n.Quo(n, r.Denom())
	return types.DecimalValue{Unscaled: n, Scale: scale}
}

// AllTypesRows returns n rows of AllTypesSchema; row i is a pure function of i. Every 7th row is null
// in every nullable column; the others cycle through edge values.
func AllTypesRows(n int) []types.Struct {
	rows := make([]types.Struct, n)
	for i := range n {
		id := int64(i)
		if i%7 == 6 {
			r := make(types.Struct, 22)
			r[0] = id
			rows[i] = r
			continue
		}
		sign := int64(1 - 2*(i%2))
		ts := types.Timestamp(1_700_000_000_000_000 + id*1_234_567 + 1) // sub-millisecond digits
		rows[i] = types.Struct{
			id,
			i%3 == 0,
			int8(sign * int64(i%128)),
			int16(sign * int64(i*97%32768)),
			int32(sign * id * 100_003),
			[]int64{math.MaxInt64, math.MinInt64, sign * id * 1_000_000_007}[i%3],
			float32(sign) * float32(i) * 1.25,
			[]float64{math.Inf(1), -0.5, float64(sign) * float64(i) / 3}[i%3],
			dec(fmt.Sprintf("%d.%02d", sign*id, i%100), 2),
			dec(fmt.Sprintf("%d.%06d", sign*id*1000, i*37%1_000_000), 6),
			dec([]string{"9999999999999999999999999999.9999999999", "-0.0000000001", strconv.FormatInt(sign*id, 10) + ".5"}[i%3], 10),
			[]string{"", "ascii", "ünïcödé ✓", "line\nbreak", "quote'\"", fmt.Sprintf("long-%040d", i)}[i%6],
			[]byte{byte(i), 0, 0xff, byte(i >> 8)},
			types.Date(19000 + i - 3000*(i%2)),
			ts,
			types.TimestampNTZ(int64(ts) + 3_600_000_000),
			types.Struct{int32(i), fmt.Sprintf("y%d", i), types.Struct{dec(fmt.Sprintf("%d.%03d", i, i%1000), 3)}},
			types.Array{id, nil, -id},
			types.Array{types.Struct{"k", float64(i)}, nil, types.Struct{nil, 0.5}},
			types.Map{{Key: "a", Value: int32(i)}, {Key: "b", Value: nil}},
			PartitionValuesSpecial[i%len(PartitionValuesSpecial)],
			[]types.Value{types.Date(19500 + i%3), nil}[i%2],
		}
	}
	return rows
}

// Create creates an empty table at store with the schema (column-mapping metadata assigned when
// mode is name or id), partition columns and extra properties.
func Create(ctx context.Context, store storage.Store, schema *types.StructType, partitionColumns []string, mode delta.ColumnMappingMode, props map[string]string) (*delta.Table, *delta.Snapshot, error) {
	conf := map[string]string{}
	for k, v := range props {
		conf[k] = v
	}
	if mode != "" && mode != delta.ColumnMappingNone {
		var maxID int64
		schema, maxID = table.AssignColumnMapping(schema)
		conf[delta.PropColumnMappingMode] = string(mode)
		conf[delta.PropColumnMappingMaxID] = strconv.FormatInt(maxID, 10)
	}
	tbl := delta.NewTable(store)
	snap, err := tbl.Create(ctx, delta.CreateOptions{Schema: schema, PartitionColumns: partitionColumns, Configuration: conf})
	return tbl, snap, err
}
