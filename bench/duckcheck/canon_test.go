package duckcheck

import (
	"encoding/hex"
	"fmt"
	"math"
	"math/big"
	"sort"
	"strconv"
	"strings"
	"time"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Values from both readers are compared through one canonical text form: numbers exactly (integers and
// decimals as normalised rationals, so DECIMAL(10,2) 1.50 equals 3/2 whichever way it was stored),
// floats by their shortest form, temporal values as the instant in microseconds (dates at midnight),
// binaries in hex, structs as name=value pairs sorted by name, maps with entries in file order.

func canonRat(r *big.Rat) string { return "n:" + r.RatString() }

func canonFloat(f float64) string {
	if math.IsNaN(f) {
		return "f:NaN"
	}
	return "f:" + strconv.FormatFloat(f, 'g', -1, 64)
}

func canonMicros(us int64) string { return "t:" + strconv.FormatInt(us, 10) }

func sortedJoin(parts []string, open, close string) string {
	sort.Strings(parts)
	return open + strings.Join(parts, ",") + close
}

// canonDuck renders a value scanned from DuckDB.
func canonDuck(v any) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return strconv.FormatBool(x)
	case int8, int16, int32, int64, uint8, uint16, uint32, uint64, int, uint:
		r, _ := new(big.Rat).SetString(fmt.Sprint(x))
		return canonRat(r)
	case *big.Int:
		return canonRat(new(big.Rat).SetInt(x))
	case duckdb.Decimal:
		r := new(big.Rat).SetInt(x.Value)
		return canonRat(r.Quo(r, new(big.Rat).SetInt(new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(x.Scale)), nil))))
	case float32:
		return canonFloat(float64(x))
	case float64:
		return canonFloat(x)
	case string:
		return strconv.Quote(x)
	case []byte:
		return "b:" + hex.EncodeToString(x)
	case time.Time:
		return canonMicros(x.UnixMicro())
	case []any:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = canonDuck(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case map[string]any:
		var parts []string
		for k, e := range x {
			parts = append(parts, k+"="+canonDuck(e))
		}
		return sortedJoin(parts, "{", "}")
	case duckdb.OrderedMap:
		keys, vals := x.Keys(), x.Values()
		parts := make([]string, len(keys))
		for i := range keys {
			parts[i] = canonDuck(keys[i]) + ":" + canonDuck(vals[i])
		}
		return "<" + strings.Join(parts, ",") + ">"
	}
	return fmt.Sprintf("?%T:%v", v, v)
}

// canonOurs renders a value read by parquetio, given its Delta type.
func canonOurs(v types.Value, t types.DataType) string {
	if v == nil {
		return "null"
	}
	switch t := t.(type) {
	case *types.StructType:
		s := v.(types.Struct)
		parts := make([]string, len(t.Fields))
		for i, f := range t.Fields {
			parts[i] = f.Name + "=" + canonOurs(s[i], f.Type)
		}
		return sortedJoin(parts, "{", "}")
	case *types.ArrayType:
		a := v.(types.Array)
		parts := make([]string, len(a))
		for i, e := range a {
			parts[i] = canonOurs(e, t.ElementType)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case *types.MapType:
		m := v.(types.Map)
		parts := make([]string, len(m))
		for i, e := range m {
			parts[i] = canonOurs(e.Key, t.KeyType) + ":" + canonOurs(e.Value, t.ValueType)
		}
		return "<" + strings.Join(parts, ",") + ">" // both readers keep the file's entry order
	}
	switch x := v.(type) {
	case bool:
		return strconv.FormatBool(x)
	case int8, int16, int32, int64:
		r, _ := new(big.Rat).SetString(fmt.Sprint(x))
		return canonRat(r)
	case types.DecimalValue:
		return canonRat(x.Rat())
	case float32:
		return canonFloat(float64(x))
	case float64:
		return canonFloat(x)
	case string:
		return strconv.Quote(x)
	case []byte:
		return "b:" + hex.EncodeToString(x)
	case types.Date:
		return canonMicros(int64(x) * 86_400_000_000)
	case types.Timestamp:
		return canonMicros(int64(x))
	case types.TimestampNTZ:
		return canonMicros(int64(x))
	case types.VariantValue:
		// DuckDB reads Spark's unannotated variant group as a struct of its two binaries.
		return "{metadata=b:" + hex.EncodeToString(x.Metadata) + ",value=b:" + hex.EncodeToString(x.Value) + "}"
	}
	return fmt.Sprintf("?%T:%v", v, v)
}

func canonRow(row types.Struct, schema *types.StructType) string {
	parts := make([]string, len(row))
	for i, f := range schema.Fields {
		parts[i] = canonOurs(row[i], f.Type)
	}
	return strings.Join(parts, "|")
}
