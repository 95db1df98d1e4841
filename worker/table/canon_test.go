package table

import (
	"encoding/hex"
	"fmt"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// canon is the conformance tests' comparison key of a value.
func canon(v types.Value) string { return CanonicalValue(v) }

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
