package expr

import (
	"fmt"
	"math"
	"math/big"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Eval reports whether a row (one value per field of the bound schema, in schema order) satisfies
// the predicate. SQL semantics: a comparison involving NULL is unknown, and unknown is not true.
func (p *Predicate) Eval(row types.Struct) bool {
	for i := range p.terms {
		if !p.terms[i].eval(row) {
			return false
		}
	}
	return true
}

func (t *term) eval(row types.Struct) bool {
	var v types.Value = row
	for _, i := range t.index {
		s, ok := v.(types.Struct)
		if !ok || i >= len(s) {
			v = nil
			break
		}
		v = s[i]
	}
	return t.test(v)
}

// test applies the comparison to one value of the column.
func (t *term) test(v types.Value) bool {
	switch t.Op {
	case IsNull:
		return v == nil
	case IsNotNull:
		return v != nil
	}
	if v == nil {
		return false
	}
	for _, lit := range t.lits {
		c, ok := compare(v, lit)
		if !ok {
			continue
		}
		switch t.Op {
		case Eq, In:
			if c == 0 {
				return true
			}
		case Ne:
			return c != 0
		case Lt:
			return c < 0
		case Le:
			return c <= 0
		case Gt:
			return c > 0
		case Ge:
			return c >= 0
		}
	}
	return false
}

// compare orders a column value (of any width: files may hold narrower types before widening) against
// a typed literal. ok=false for a null literal or values that cannot be compared.
func compare(v, lit types.Value) (int, bool) {
	if lit == nil || v == nil {
		return 0, false
	}
	switch l := lit.(type) {
	case int64:
		switch n := v.(type) {
		case int8, int16, int32, int64:
			return cmpInt(toInt64(n), l), true
		case float32, float64:
			return cmpFloat(toFloat64(n), float64(l)), true
		}
	case float64:
		switch n := v.(type) {
		case float32, float64:
			return cmpFloat(toFloat64(n), l), true
		case int8, int16, int32, int64:
			return cmpFloat(float64(toInt64(n)), l), true
		}
	case *big.Rat:
		switch n := v.(type) {
		case types.DecimalValue:
			return n.Rat().Cmp(l), true
		case int8, int16, int32, int64:
			return new(big.Rat).SetInt64(toInt64(n)).Cmp(l), true
		}
	case string:
		if s, ok := v.(string); ok {
			return strings.Compare(s, l), true
		}
	case bool:
		if b, ok := v.(bool); ok {
			return cmpBool(b, l), true
		}
	case types.Date:
		switch d := v.(type) {
		case types.Date:
			return cmpInt(int64(d), int64(l)), true
		}
	case types.Timestamp:
		if ts, ok := v.(types.Timestamp); ok {
			return cmpInt(int64(ts), int64(l)), true
		}
	case types.TimestampNTZ:
		switch ts := v.(type) {
		case types.TimestampNTZ:
			return cmpInt(int64(ts), int64(l)), true
		case types.Date: // widened date → timestamp_ntz
			return cmpInt(int64(ts)*86_400_000_000, int64(l)), true
		}
	}
	return 0, false
}

func toInt64(v types.Value) int64 {
	switch n := v.(type) {
	case int8:
		return int64(n)
	case int16:
		return int64(n)
	case int32:
		return int64(n)
	case int64:
		return n
	}
	panic(fmt.Sprintf("expr: %T is not an integer", v))
}

func toFloat64(v types.Value) float64 {
	switch n := v.(type) {
	case float32:
		return float64(n)
	case float64:
		return n
	}
	panic(fmt.Sprintf("expr: %T is not a float", v))
}

func cmpInt(a, b int64) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

// cmpFloat orders NaN after every other value and equal to itself, as Spark does.
func cmpFloat(a, b float64) int {
	an, bn := math.IsNaN(a), math.IsNaN(b)
	switch {
	case an && bn:
		return 0
	case an:
		return 1
	case bn:
		return -1
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func cmpBool(a, b bool) int {
	switch {
	case a == b:
		return 0
	case !a:
		return -1
	}
	return 1
}

// PartitionOnly checks that the predicate references top-level partition columns only (optimize
// --where must select whole partitions: a data predicate would split files).
func (e *Expr) PartitionOnly(partitionColumns []string) error {
	for _, t := range e.terms {
		ok := false
		if len(t.Column) == 1 {
			for _, pc := range partitionColumns {
				if strings.EqualFold(pc, t.Column[0]) {
					ok = true
				}
			}
		}
		if !ok {
			if len(partitionColumns) == 0 {
				return &SyntaxError{Src: e.src, Pos: t.colPos, Msg: "the table is not partitioned, so --where cannot select partitions here"}
			}
			return &SyntaxError{Src: e.src, Pos: t.colPos, Msg: fmt.Sprintf("%q is not a partition column; --where here may only reference the partition columns (%s)",
				strings.Join(t.Column, "."), strings.Join(partitionColumns, ", "))}
		}
	}
	return nil
}
