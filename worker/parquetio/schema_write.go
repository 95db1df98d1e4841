package parquetio

import (
	"fmt"
	"math"
	"slices"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// orderKind is how a leaf's statistics compare values.
type orderKind int

const (
	orderNone orderKind = iota // no min/max (variant parts)
	orderBool
	orderInt32
	orderInt64
	orderFloat
	orderDouble
	orderBytes   // unsigned lexicographic: strings, binary
	orderDecimal // big-endian two's complement of fixed length
)

// leafDesc describes one output leaf column.
type leafDesc struct {
	path    []string
	phys    format.Type
	typeLen int // FIXED_LEN_BYTE_ARRAY length
	maxDef  int
	maxRep  int
	order   orderKind
	logical *types.PrimitiveType // the Delta type, for statistics; nil for variant parts
	// variantPart is 1 for the value and 2 for the metadata leaf of a variant: statistics report the
	// variant as one column (null count only), under its own path.
	variantPart int
}

// writeKind is the shape of one node of the output schema.
type writeKind int

const (
	wkPrimitive writeKind = iota
	wkStruct
	wkList
	wkMap
	wkVariant
)

// writeNode is one Delta value in the output schema, with the Dremel levels the shredder emits.
type writeNode struct {
	kind     writeKind
	path     string // dotted column path, for messages
	optional bool
	def      int // definition level when the value is present
	listRep  int // lists and maps: repetition level of entries
	leaf     int // primitives: leaf index
	leaves   []int
	children []*writeNode // struct fields; [element]; [key, value]; [value, metadata]
	prim     *types.PrimitiveType
}

// outputSchema is a Delta schema mapped to Parquet the way Spark maps it.
type outputSchema struct {
	elements []format.SchemaElement
	leaves   []*leafDesc
	root     *writeNode
}

type schemaBuilder struct {
	fieldIDs bool
	out      *outputSchema
}

// buildOutputSchema maps a Delta schema to Parquet: string→BYTE_ARRAY(STRING), long→INT64,
// integer→INT32, short/byte→INT32 INT(16/8), date→INT32 DATE, timestamp→INT64 TIMESTAMP(MICROS,UTC),
// timestamp_ntz→INT64 TIMESTAMP(MICROS,local), decimal→INT32/INT64/FIXED_LEN_BYTE_ARRAY by precision,
// arrays→3-level LIST (element), maps→MAP key_value{key,value}, variant→group{value,metadata};
// nullable→OPTIONAL. Field order is the Delta order.
func buildOutputSchema(s *types.StructType, writeFieldIDs bool) (*outputSchema, error) {
	if s == nil || len(s.Fields) == 0 {
		return nil, fmt.Errorf("cannot write a parquet file without columns")
	}
	b := &schemaBuilder{fieldIDs: writeFieldIDs, out: &outputSchema{}}
	b.out.elements = append(b.out.elements, format.SchemaElement{Name: "spark_schema", NumChildren: thrift.New(int32(len(s.Fields)))})
	root := &writeNode{kind: wkStruct}
	for _, f := range s.Fields {
		n, err := b.field(f, nil, 0, 0)
		if err != nil {
			return nil, err
		}
		root.children = append(root.children, n)
		root.leaves = append(root.leaves, n.leaves...)
	}
	b.out.root = root
	return b.out, nil
}

func (b *schemaBuilder) field(f *types.StructField, path []string, def, rep int) (*writeNode, error) {
	var id int32
	if b.fieldIDs {
		if v, ok := f.FieldID(); ok {
			id = int32(v)
		}
	}
	return b.node(f.Name, f.Type, f.Nullable, id, path, def, rep)
}

func repetition(optional bool) thrift.Null[format.FieldRepetitionType] {
	if optional {
		return thrift.New(format.Optional)
	}
	return thrift.New(format.Required)
}

// node appends the schema elements of one value and returns its shredding node. def and rep are the
// levels of the parent.
func (b *schemaBuilder) node(name string, t types.DataType, optional bool, fieldID int32, parent []string, def, rep int) (*writeNode, error) {
	path := append(append([]string(nil), parent...), name)
	if optional {
		def++
	}
	n := &writeNode{path: joinPath(path), optional: optional, def: def}
	elemIdx := len(b.out.elements)
	b.out.elements = append(b.out.elements, format.SchemaElement{Name: name, RepetitionType: repetition(optional), FieldID: fieldID})
	group := func(children int) {
		b.out.elements[elemIdx].NumChildren = thrift.New(int32(children))
	}
	switch t := t.(type) {
	case *types.StructType:
		if len(t.Fields) == 0 {
			return nil, fmt.Errorf("column %q: Parquet cannot store an empty struct", joinPath(path))
		}
		n.kind = wkStruct
		group(len(t.Fields))
		for _, f := range t.Fields {
			c, err := b.field(f, path, def, rep)
			if err != nil {
				return nil, err
			}
			n.children = append(n.children, c)
			n.leaves = append(n.leaves, c.leaves...)
		}
	case *types.ArrayType:
		n.kind, n.listRep = wkList, rep+1
		group(1)
		b.out.elements[elemIdx].ConvertedType = thrift.New(deprecated.List)
		b.out.elements[elemIdx].LogicalType = format.LogicalType{Value: &format.ListType{}}
		b.out.elements = append(b.out.elements, format.SchemaElement{Name: "list", RepetitionType: thrift.New(format.Repeated), NumChildren: thrift.New(int32(1))})
		elem, err := b.node("element", t.ElementType, t.ContainsNull, 0, append(path, "list"), def+1, rep+1)
		if err != nil {
			return nil, err
		}
		n.children, n.leaves = []*writeNode{elem}, elem.leaves
	case *types.MapType:
		n.kind, n.listRep = wkMap, rep+1
		group(1)
		b.out.elements[elemIdx].ConvertedType = thrift.New(deprecated.Map)
		b.out.elements[elemIdx].LogicalType = format.LogicalType{Value: &format.MapType{}}
		b.out.elements = append(b.out.elements, format.SchemaElement{Name: "key_value", RepetitionType: thrift.New(format.Repeated), NumChildren: thrift.New(int32(2))})
		kvPath := append(slices.Clip(path), "key_value") // a copy: path's spare capacity is a sibling's
		key, err := b.node("key", t.KeyType, false, 0, kvPath, def+1, rep+1)
		if err != nil {
			return nil, err
		}
		val, err := b.node("value", t.ValueType, t.ValueContainsNull, 0, kvPath, def+1, rep+1)
		if err != nil {
			return nil, err
		}
		n.children = []*writeNode{key, val}
		n.leaves = append(append([]int(nil), key.leaves...), val.leaves...)
	case *types.PrimitiveType:
		if t.Name == types.TypeVariant {
			n.kind = wkVariant
			group(2)
			bin := types.Primitive(types.TypeBinary)
			for _, part := range []string{"value", "metadata"} {
				c, err := b.node(part, bin, false, 0, path, def, rep)
				if err != nil {
					return nil, err
				}
				l := b.out.leaves[c.leaf]
				l.order, l.logical, l.variantPart = orderNone, nil, len(n.children)+1
				n.children = append(n.children, c)
				n.leaves = append(n.leaves, c.leaves...)
			}
			return n, nil
		}
		n.kind, n.prim = wkPrimitive, t
		leaf := &leafDesc{path: path, maxDef: def, maxRep: rep, logical: t}
		if err := setPrimitive(&b.out.elements[elemIdx], leaf, t); err != nil {
			return nil, fmt.Errorf("column %q: %w", joinPath(path), err)
		}
		n.leaf = len(b.out.leaves)
		n.leaves = []int{n.leaf}
		b.out.leaves = append(b.out.leaves, leaf)
	default:
		return nil, fmt.Errorf("column %q: unsupported type %T", joinPath(path), t)
	}
	return n, nil
}

// decimalBytes is the minimal FIXED_LEN_BYTE_ARRAY length holding precision digits, computed as Spark's
// minBytesForPrecision does so that files match Spark's byte for byte in layout.
func decimalBytes(precision int) int {
	n := 1
	for math.Pow(2, float64(8*n-1)) < math.Pow(10, float64(precision)) {
		n++
	}
	return n
}

func setPrimitive(e *format.SchemaElement, leaf *leafDesc, t *types.PrimitiveType) error {
	set := func(phys format.Type, order orderKind) {
		e.Type = thrift.New(phys)
		leaf.phys, leaf.order = phys, order
	}
	switch t.Name {
	case types.TypeString:
		set(format.ByteArray, orderBytes)
		e.ConvertedType = thrift.New(deprecated.UTF8)
		e.LogicalType = format.LogicalType{Value: &format.StringType{}}
	case types.TypeBinary:
		set(format.ByteArray, orderBytes)
	case types.TypeLong:
		set(format.Int64, orderInt64)
	case types.TypeInteger:
		set(format.Int32, orderInt32)
	case types.TypeShort:
		set(format.Int32, orderInt32)
		e.ConvertedType = thrift.New(deprecated.Int16)
		e.LogicalType = format.LogicalType{Value: &format.IntType{BitWidth: 16, IsSigned: true}}
	case types.TypeByte:
		set(format.Int32, orderInt32)
		e.ConvertedType = thrift.New(deprecated.Int8)
		e.LogicalType = format.LogicalType{Value: &format.IntType{BitWidth: 8, IsSigned: true}}
	case types.TypeFloat:
		set(format.Float, orderFloat)
	case types.TypeDouble:
		set(format.Double, orderDouble)
	case types.TypeBoolean:
		set(format.Boolean, orderBool)
	case types.TypeDate:
		set(format.Int32, orderInt32)
		e.ConvertedType = thrift.New(deprecated.Date)
		e.LogicalType = format.LogicalType{Value: &format.DateType{}}
	case types.TypeTimestamp:
		set(format.Int64, orderInt64)
		e.ConvertedType = thrift.New(deprecated.TimestampMicros)
		e.LogicalType = format.LogicalType{Value: &format.TimestampType{IsAdjustedToUTC: true, Unit: format.TimeUnit{Value: &format.MicroSeconds{}}}}
	case types.TypeTimestampNTZ:
		set(format.Int64, orderInt64)
		e.LogicalType = format.LogicalType{Value: &format.TimestampType{IsAdjustedToUTC: false, Unit: format.TimeUnit{Value: &format.MicroSeconds{}}}}
	case types.TypeDecimal:
		if t.Precision < 1 || t.Precision > 38 {
			return fmt.Errorf("invalid decimal precision %d", t.Precision)
		}
		switch {
		case t.Precision <= 9:
			set(format.Int32, orderInt32)
		case t.Precision <= 18:
			set(format.Int64, orderInt64)
		default:
			set(format.FixedLenByteArray, orderDecimal)
			leaf.typeLen = decimalBytes(t.Precision)
			e.TypeLength = thrift.New(int32(leaf.typeLen))
		}
		e.ConvertedType = thrift.New(deprecated.Decimal)
		e.Scale, e.Precision = thrift.New(int32(t.Scale)), thrift.New(int32(t.Precision))
		e.LogicalType = format.LogicalType{Value: &format.DecimalType{Scale: int32(t.Scale), Precision: int32(t.Precision)}}
	default:
		return fmt.Errorf("unsupported type %s", t)
	}
	return nil
}

func joinPath(p []string) string {
	s := ""
	for i, x := range p {
		if i > 0 {
			s += "."
		}
		s += x
	}
	return s
}
