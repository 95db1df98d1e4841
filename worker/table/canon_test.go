package table

import (
	"encoding/hex"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// canon renders a logical value as a string that is equal for equal values, whatever the width of the
// type that holds them: integers and decimals by exact value, timestamps (with or without zone) as
// microseconds (instants), floats by their shortest round-trip form at their own precision, structs
// by position, maps as sorted entries. It is the comparison key of the conformance tests.
func canon(v types.Value) string {
	switch x := v.(type) {
	case nil:
		return "null"
	case bool:
		return "b:" + strconv.FormatBool(x)
	case int8, int16, int32, int64:
		return fmt.Sprintf("i:%d", x)
	case float32:
		return canonFloat(float64(x), 32)
	case float64:
		return canonFloat(x, 64)
	case types.DecimalValue:
		return "d:" + x.Rat().RatString()
	case string:
		return "s:" + strconv.Quote(x)
	case []byte:
		return "x:" + hex.EncodeToString(x)
	case types.Date:
		return "D:" + x.String()
	case types.Timestamp:
		return fmt.Sprintf("T:%d", int64(x))
	case types.TimestampNTZ:
		return fmt.Sprintf("T:%d", int64(x))
	case types.VariantValue:
		return "V:" + hex.EncodeToString(x.Metadata) + "/" + hex.EncodeToString(x.Value)
	case types.Struct:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = canon(e)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case types.Array:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = canon(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case types.Map:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = canon(e.Key) + "=>" + canon(e.Value)
		}
		slices.Sort(parts)
		return "M{" + strings.Join(parts, ",") + "}"
	}
	return fmt.Sprintf("?%T:%v", v, v)
}

func canonFloat(f float64, bits int) string {
	if math.IsNaN(f) {
		return "f:NaN"
	}
	return "f:" + strconv.FormatFloat(f, 'g', -1, bits)
}

// arrowText renders a value the way arrow's pretty printer does in the text expectations of
// delta-kernel-rs (nested values, variants): structs and maps as {k: v, …}, lists as [a, b], nulls as
// nothing, binaries in hex.
func arrowText(v types.Value, t types.DataType) string {
	if v == nil {
		return ""
	}
	switch tt := t.(type) {
	case *types.StructType:
		s := v.(types.Struct)
		parts := make([]string, len(s))
		for i, f := range tt.Fields {
			parts[i] = f.Name + ": " + arrowText(s[i], f.Type)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	case *types.ArrayType:
		a := v.(types.Array)
		parts := make([]string, len(a))
		for i, e := range a {
			parts[i] = arrowText(e, tt.ElementType)
		}
		return "[" + strings.Join(parts, ", ") + "]"
	case *types.MapType:
		m := v.(types.Map)
		parts := make([]string, len(m))
		for i, e := range m {
			parts[i] = arrowText(e.Key, tt.KeyType) + ": " + arrowText(e.Value, tt.ValueType)
		}
		return "{" + strings.Join(parts, ", ") + "}"
	}
	switch x := v.(type) {
	case types.VariantValue:
		return "{metadata: " + hex.EncodeToString(x.Metadata) + ", value: " + hex.EncodeToString(x.Value) + "}"
	case []byte:
		return hex.EncodeToString(x)
	}
	return fmt.Sprint(v)
}

// isNested reports whether a column's expected text is compared as arrow text rather than parsed.
func isNested(t types.DataType) bool {
	p, ok := t.(*types.PrimitiveType)
	return !ok || p.Name == types.TypeVariant
}
