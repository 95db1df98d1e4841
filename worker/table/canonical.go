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

// CanonicalValue renders a logical value as a string that is equal for equal values, whatever the width of the
// type that holds them: integers and decimals by exact value, timestamps (with or without zone) as
// microseconds (instants), floats by their shortest round-trip form at their own precision, structs
// by position, maps as sorted entries. It is the comparison key of the conformance and round-trip tests.
func CanonicalValue(v types.Value) string {
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
			parts[i] = CanonicalValue(e)
		}
		return "{" + strings.Join(parts, ",") + "}"
	case types.Array:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = CanonicalValue(e)
		}
		return "[" + strings.Join(parts, ",") + "]"
	case types.Map:
		parts := make([]string, len(x))
		for i, e := range x {
			parts[i] = CanonicalValue(e.Key) + "=>" + CanonicalValue(e.Value)
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

// CanonicalRow joins the canonical values of a row.
func CanonicalRow(r types.Struct) string {
	parts := make([]string, len(r))
	for i, v := range r {
		parts[i] = CanonicalValue(v)
	}
	return strings.Join(parts, " | ")
}
