package parquetio

import (
	"fmt"
	"strings"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// pqNode is one element of a file's Parquet schema, rebuilt from the flattened footer list so that the
// legacy annotations (converted types, MAP_KEY_VALUE, two-level lists) stay visible; parquet-go's own
// schema tree normalises some of them away.
type pqNode struct {
	name     string
	rep      format.FieldRepetitionType
	children []*pqNode
	parent   *pqNode
	leaf     int // leaf column index in file order, -1 for groups
	maxDef   int // definition level at which this node is present
	maxRep   int // repetition level of the innermost repeated node on the path (this one included)
	fieldID  int32
	hasID    bool
	lt       leafType // meaningful for leaves; groups only use ann
	path     []string // names from the root (root excluded)
}

func (n *pqNode) isLeaf() bool { return n.leaf >= 0 }

// pathString renders the column path for messages ("a.b.list.element").
func (n *pqNode) pathString() string { return strings.Join(n.path, ".") }

// annotation folds a node's LogicalType and ConvertedType into one enum; LogicalType wins when both are set.
type annotation int

const (
	annNone annotation = iota
	annString
	annDecimal
	annDate
	annTimestamp
	annTime
	annInt
	annList
	annMap
	annMapKeyValue
	annVariant
	annUUID
	annFloat16
	annInterval
	annUnknown
)

type timeUnit int

const (
	unitMillis timeUnit = iota
	unitMicros
	unitNanos
)

// leafType is the stored type of a node: physical type plus annotation details.
type leafType struct {
	phys      format.Type
	typeLen   int
	ann       annotation
	precision int
	scale     int
	unit      timeUnit
	utc       bool
	bitWidth  int
	signed    bool
}

func (t leafType) String() string {
	s := t.phys.String()
	if t.phys == format.FixedLenByteArray {
		s += fmt.Sprintf("(%d)", t.typeLen)
	}
	switch t.ann {
	case annString:
		s += " STRING"
	case annDecimal:
		s += fmt.Sprintf(" DECIMAL(%d,%d)", t.precision, t.scale)
	case annDate:
		s += " DATE"
	case annTimestamp:
		s += fmt.Sprintf(" TIMESTAMP(%s,utc=%t)", [...]string{"MILLIS", "MICROS", "NANOS"}[t.unit], t.utc)
	case annTime:
		s += " TIME"
	case annInt:
		s += fmt.Sprintf(" INT(%d,%t)", t.bitWidth, t.signed)
	case annUUID:
		s += " UUID"
	case annFloat16:
		s += " FLOAT16"
	case annInterval:
		s += " INTERVAL"
	case annUnknown:
		s += " (unsupported annotation)"
	}
	return s
}

func annotationOf(e *format.SchemaElement) leafType {
	var t leafType
	if e.Type.Valid {
		t.phys = e.Type.V
	}
	if e.TypeLength.Valid {
		t.typeLen = int(e.TypeLength.V)
	}
	if e.Scale.Valid {
		t.scale = int(e.Scale.V)
	}
	if e.Precision.Valid {
		t.precision = int(e.Precision.V)
	}
	switch lt := e.LogicalType.Value.(type) {
	case *format.StringType, *format.EnumType, *format.JsonType:
		t.ann = annString
		return t
	case *format.DecimalType:
		t.ann, t.precision, t.scale = annDecimal, int(lt.Precision), int(lt.Scale)
		return t
	case *format.DateType:
		t.ann = annDate
		return t
	case *format.TimestampType:
		t.ann, t.utc = annTimestamp, lt.IsAdjustedToUTC
		t.unit = unitOf(lt.Unit)
		return t
	case *format.TimeType:
		t.ann = annTime
		return t
	case *format.IntType:
		t.ann, t.bitWidth, t.signed = annInt, int(lt.BitWidth), lt.IsSigned
		return t
	case *format.ListType:
		t.ann = annList
		return t
	case *format.MapType:
		t.ann = annMap
		return t
	case *format.VariantType:
		t.ann = annVariant
		return t
	case *format.UUIDType:
		t.ann = annUUID
		return t
	case *format.Float16Type:
		t.ann = annFloat16
		return t
	case *format.BsonType:
		t.ann = annNone // opaque bytes
		return t
	case *format.NullType:
		t.ann = annNone
		return t
	case nil:
	default:
		t.ann = annUnknown
		return t
	}
	if !e.ConvertedType.Valid {
		return t
	}
	switch e.ConvertedType.V {
	case deprecated.UTF8, deprecated.Enum, deprecated.Json:
		t.ann = annString
	case deprecated.Map:
		t.ann = annMap
	case deprecated.MapKeyValue:
		t.ann = annMapKeyValue
	case deprecated.List:
		t.ann = annList
	case deprecated.Decimal:
		t.ann = annDecimal
	case deprecated.Date:
		t.ann = annDate
	case deprecated.TimeMillis, deprecated.TimeMicros:
		t.ann = annTime
	case deprecated.TimestampMillis:
		t.ann, t.unit, t.utc = annTimestamp, unitMillis, true
	case deprecated.TimestampMicros:
		t.ann, t.unit, t.utc = annTimestamp, unitMicros, true
	case deprecated.Int8, deprecated.Int16, deprecated.Int32, deprecated.Int64:
		t.ann, t.signed = annInt, true
		t.bitWidth = map[deprecated.ConvertedType]int{deprecated.Int8: 8, deprecated.Int16: 16, deprecated.Int32: 32, deprecated.Int64: 64}[e.ConvertedType.V]
	case deprecated.Uint8, deprecated.Uint16, deprecated.Uint32, deprecated.Uint64:
		t.ann, t.signed = annInt, false
		t.bitWidth = map[deprecated.ConvertedType]int{deprecated.Uint8: 8, deprecated.Uint16: 16, deprecated.Uint32: 32, deprecated.Uint64: 64}[e.ConvertedType.V]
	case deprecated.Interval:
		t.ann = annInterval
	case deprecated.Bson:
	}
	return t
}

func unitOf(u format.TimeUnit) timeUnit {
	switch u.Value.(type) {
	case *format.MilliSeconds:
		return unitMillis
	case *format.NanoSeconds:
		return unitNanos
	default:
		return unitMicros
	}
}

// buildSchemaTree rebuilds the node tree from the footer's depth-first element list.
func buildSchemaTree(elems []format.SchemaElement) (root *pqNode, leaves []*pqNode, err error) {
	if len(elems) == 0 {
		return nil, nil, fmt.Errorf("parquet footer has an empty schema")
	}
	pos := 0
	var build func(parent *pqNode) (*pqNode, error)
	build = func(parent *pqNode) (*pqNode, error) {
		if pos >= len(elems) {
			return nil, fmt.Errorf("parquet schema is truncated: a group declares more children than the footer holds")
		}
		e := &elems[pos]
		pos++
		n := &pqNode{name: e.Name, parent: parent, leaf: -1, lt: annotationOf(e), fieldID: e.FieldID, hasID: e.FieldID != 0}
		n.rep = format.Required
		if parent != nil && e.RepetitionType.Valid {
			n.rep = e.RepetitionType.V
		}
		if parent != nil {
			n.maxDef, n.maxRep = parent.maxDef, parent.maxRep
			n.path = append(append([]string(nil), parent.path...), e.Name)
			switch n.rep {
			case format.Optional:
				n.maxDef++
			case format.Repeated:
				n.maxDef++
				n.maxRep++
			}
		}
		numChildren := 0
		if e.NumChildren.Valid {
			numChildren = int(e.NumChildren.V)
		}
		if numChildren == 0 && (parent == nil || !e.Type.Valid) {
			if parent == nil {
				return n, nil // empty message
			}
			return nil, fmt.Errorf("parquet schema element %q has neither a type nor children", e.Name)
		}
		if numChildren == 0 {
			n.leaf = len(leaves)
			leaves = append(leaves, n)
			return n, nil
		}
		n.children = make([]*pqNode, 0, numChildren)
		for range numChildren {
			c, err := build(n)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, c)
		}
		return n, nil
	}
	root, err = build(nil)
	if err != nil {
		return nil, nil, err
	}
	if pos != len(elems) {
		return nil, nil, fmt.Errorf("parquet schema has %d trailing elements outside the root", len(elems)-pos)
	}
	return root, leaves, nil
}

// child returns the child with the given name, or nil.
func (n *pqNode) child(name string) *pqNode {
	for _, c := range n.children {
		if c.name == name {
			return c
		}
	}
	return nil
}

// childByID returns the child with the given field id, or nil.
func (n *pqNode) childByID(id int64) *pqNode {
	for _, c := range n.children {
		if c.hasID && int64(c.fieldID) == id {
			return c
		}
	}
	return nil
}

// firstLeaf returns the first leaf below n (n itself when it is a leaf); every leaf below a node carries
// the node's null/empty information, so any of them can be peeked to decide about the node.
func (n *pqNode) firstLeaf() *pqNode {
	for !n.isLeaf() {
		if len(n.children) == 0 {
			return nil
		}
		n = n.children[0]
	}
	return n
}

// listLayout resolves a LIST-annotated group (or a bare repeated field) into its repeated node and its
// element node, following the backward-compatibility rules of the Parquet LogicalTypes spec:
//   - a repeated primitive is itself the (required) element;
//   - a repeated group with several children, or named "array" or "<list>_tuple", is itself the element;
//   - otherwise the repeated group's single child is the element (the standard three-level form).
func listLayout(list *pqNode) (repeated, element *pqNode, err error) {
	if list.rep == format.Repeated {
		// A bare repeated field outside any LIST group: a required list of required elements.
		return list, list, nil
	}
	if len(list.children) != 1 || list.children[0].rep != format.Repeated {
		return nil, nil, fmt.Errorf("parquet column %q is annotated LIST but does not hold exactly one repeated field", list.pathString())
	}
	r := list.children[0]
	switch {
	case r.isLeaf():
		return r, r, nil
	case len(r.children) != 1:
		return r, r, nil
	case r.name == "array" || r.name == list.name+"_tuple":
		return r, r, nil
	default:
		return r, r.children[0], nil
	}
}

// mapLayout resolves a MAP (or legacy MAP_KEY_VALUE) group into its repeated key/value group, key and
// value nodes. value is nil for a legacy map without values (a set), which reads as null values.
func mapLayout(m *pqNode) (repeated, key, value *pqNode, err error) {
	if len(m.children) != 1 || m.children[0].rep != format.Repeated || m.children[0].isLeaf() {
		return nil, nil, nil, fmt.Errorf("parquet column %q is annotated MAP but does not hold exactly one repeated key/value group", m.pathString())
	}
	r := m.children[0]
	switch len(r.children) {
	case 1:
		return r, r.children[0], nil, nil
	case 2:
		k, v := r.child("key"), r.child("value")
		if k == nil || v == nil {
			k, v = r.children[0], r.children[1]
		}
		return r, k, v, nil
	default:
		return nil, nil, nil, fmt.Errorf("parquet map %q has %d fields in its key/value group, want key and value", m.pathString(), len(r.children))
	}
}

// isMapGroup reports whether a group is a map: annotated MAP or MAP_KEY_VALUE itself, or holding a single
// repeated group annotated MAP_KEY_VALUE (old parquet-mr and Hive).
func (n *pqNode) isMapGroup() bool {
	if n.isLeaf() {
		return false
	}
	if n.lt.ann == annMap || n.lt.ann == annMapKeyValue {
		return true
	}
	return len(n.children) == 1 && n.children[0].lt.ann == annMapKeyValue && !n.children[0].isLeaf()
}

// isVariantGroup reports whether a group is an unshredded variant: annotated VARIANT, or (as Spark writes
// it, without annotation) exactly the binary fields value and metadata.
func (n *pqNode) isVariantGroup(annotatedOnly bool) bool {
	if n.isLeaf() || n.rep == format.Repeated {
		return false
	}
	if n.lt.ann == annVariant {
		return true
	}
	if annotatedOnly || len(n.children) != 2 {
		return false
	}
	v, m := n.child("value"), n.child("metadata")
	return v != nil && m != nil && v.isLeaf() && m.isLeaf() && v.lt.phys == format.ByteArray && m.lt.phys == format.ByteArray
}
