package expr

import (
	"fmt"
	"math/big"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Predicate is an Expr bound to a schema: columns resolved to positions, literals typed.
type Predicate struct {
	expr  *Expr
	terms []term
}

type term struct {
	Comparison
	field *types.StructField
	typ   types.DataType
	index []int         // positions through nested structs
	lits  []types.Value // typed literals; decimals as *big.Rat so that any scale compares exactly
}

// String returns the predicate as written.
func (p *Predicate) String() string { return p.expr.src }

// Compile parses src and binds it to schema.
func Compile(src string, schema *types.StructType) (*Predicate, error) {
	e, err := Parse(src)
	if err != nil {
		return nil, err
	}
	return e.Bind(schema)
}

// Bind resolves the columns against schema (logical names; an exact match first, then a unique
// case-insensitive one, as Spark resolves names) and types the literals.
func (e *Expr) Bind(schema *types.StructType) (*Predicate, error) {
	p := &Predicate{expr: e}
	for _, c := range e.terms {
		t := term{Comparison: c}
		t.Column = slices.Clone(c.Column) // resolved names replace the spelling used
		st := schema
		for depth, name := range c.Column {
			if st == nil {
				return nil, &SyntaxError{Src: e.src, Pos: c.colPos, Msg: fmt.Sprintf("%q is not a struct, it has no field %q", strings.Join(c.Column[:depth], "."), name)}
			}
			i := lookup(st, name)
			if i < 0 {
				return nil, &SyntaxError{Src: e.src, Pos: c.colPos, Msg: fmt.Sprintf("no column %q; columns: %s", strings.Join(c.Column[:depth+1], "."), fieldNames(st))}
			}
			t.index = append(t.index, i)
			t.Column[depth] = st.Fields[i].Name
			t.field = st.Fields[i]
			t.typ = t.field.Type
			st, _ = t.typ.(*types.StructType)
		}
		if len(c.values) > 0 && !isComparable(t.typ) {
			return nil, &SyntaxError{Src: e.src, Pos: c.colPos, Msg: fmt.Sprintf("column %s is %s, which only supports IS [NOT] NULL", strings.Join(c.Column, "."), t.typ)}
		}
		for _, l := range c.values {
			v, err := typeLiteral(t.typ, l)
			if err != nil {
				return nil, &SyntaxError{Src: e.src, Pos: l.pos, Msg: fmt.Sprintf("column %s is %s: %v", strings.Join(c.Column, "."), t.typ, err)}
			}
			t.lits = append(t.lits, v)
		}
		p.terms = append(p.terms, t)
	}
	return p, nil
}

func lookup(st *types.StructType, name string) int {
	if i := st.FieldIndex(name); i >= 0 {
		return i
	}
	found := -1
	for i, f := range st.Fields {
		if strings.EqualFold(f.Name, name) {
			if found >= 0 {
				return -1
			}
			found = i
		}
	}
	return found
}

func fieldNames(st *types.StructType) string {
	names := make([]string, len(st.Fields))
	for i, f := range st.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

func primitiveName(t types.DataType) string {
	if p, ok := t.(*types.PrimitiveType); ok {
		return p.Name
	}
	return ""
}

func isComparable(t types.DataType) bool {
	switch primitiveName(t) {
	case "", types.TypeBinary, types.TypeVariant:
		return false
	}
	return true
}

// typeLiteral converts a literal to a value of type t. A NULL literal (only possible inside IN)
// becomes nil, which never matches.
func typeLiteral(t types.DataType, l literal) (types.Value, error) {
	if l.kind == litNull {
		return nil, nil
	}
	name := primitiveName(t)
	switch name {
	case types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong:
		if l.kind == litBool {
			return nil, fmt.Errorf("%s is not a number", l.text)
		}
		n, err := strconv.ParseInt(strings.TrimPrefix(l.text, "+"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not an integer", l.text)
		}
		return n, nil
	case types.TypeFloat, types.TypeDouble:
		if l.kind == litBool {
			return nil, fmt.Errorf("%s is not a number", l.text)
		}
		f, err := strconv.ParseFloat(l.text, 64)
		if err != nil {
			return nil, fmt.Errorf("%q is not a number", l.text)
		}
		return f, nil
	case types.TypeDecimal:
		r, ok := new(big.Rat).SetString(strings.TrimPrefix(l.text, "+"))
		if l.kind == litBool || !ok {
			return nil, fmt.Errorf("%q is not a decimal number", l.text)
		}
		return r, nil
	case types.TypeBoolean:
		switch strings.ToLower(l.text) {
		case "true":
			return true, nil
		case "false":
			return false, nil
		}
		return nil, fmt.Errorf("%q is not true or false", l.text)
	case types.TypeString:
		if l.kind != litString {
			return nil, fmt.Errorf("quote string values: '%s'", l.text)
		}
		return l.text, nil
	case types.TypeDate:
		d, err := time.Parse("2006-01-02", l.text)
		if l.kind != litString || err != nil {
			return nil, fmt.Errorf("%q is not a date; write 'YYYY-MM-DD'", l.text)
		}
		return types.Date(d.Unix() / 86400), nil
	case types.TypeTimestamp, types.TypeTimestampNTZ:
		ntz := name == types.TypeTimestampNTZ
		ts, err := parseTimestamp(l.text, ntz)
		if l.kind != litString || err != nil {
			return nil, fmt.Errorf("%q is not a timestamp; write 'YYYY-MM-DD HH:MM:SS[.ffffff]%s'", l.text, map[bool]string{false: "[Z|±hh:mm]", true: ""}[ntz])
		}
		if ntz {
			return types.TimestampNTZ(ts), nil
		}
		return types.Timestamp(ts), nil
	}
	return nil, fmt.Errorf("literals cannot be compared with this type")
}

var tsLayouts = []string{"2006-01-02T15:04:05.999999999Z07:00", "2006-01-02 15:04:05.999999999Z07:00",
	"2006-01-02T15:04:05.999999999", "2006-01-02 15:04:05.999999999", "2006-01-02T15:04", "2006-01-02 15:04", "2006-01-02"}

// parseTimestamp returns microseconds since the epoch; a value without zone is UTC (or a wall clock for
// timestamp_ntz, which must not carry a zone). Sub-microsecond digits are refused rather than rounded.
func parseTimestamp(s string, ntz bool) (int64, error) {
	for i, layout := range tsLayouts {
		t, err := time.Parse(layout, s)
		if err != nil {
			continue
		}
		if ntz && i < 2 {
			return 0, fmt.Errorf("timestamp_ntz has no time zone")
		}
		if t.Nanosecond()%1000 != 0 {
			return 0, fmt.Errorf("more than microsecond precision")
		}
		return t.Unix()*1_000_000 + int64(t.Nanosecond()/1000), nil
	}
	return 0, fmt.Errorf("not a timestamp")
}
