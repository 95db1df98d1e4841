package parquetio

import (
	"encoding/json"
	"fmt"
	"strconv"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Schema derives the Delta schema of the file from its Parquet schema: field names are the stored names,
// nullability follows the repetition, Parquet field ids become delta.columnMapping.id metadata (so a
// schema derived from a file written in column-mapping "id" mode reads back with MatchFieldIDs).
// Legacy list and map layouts are normalised to array and map types. Groups annotated VARIANT become
// variant; Spark's unannotated variant groups stay struct<value:binary,metadata:binary> here (the table
// schema is what says "variant"). Types Delta cannot represent (TIME, INTERVAL, unsigned 64-bit…)
// yield an error naming the column.
func (f *File) Schema() (*types.StructType, error) {
	st := &types.StructType{}
	for _, c := range f.root.children {
		sf, err := deriveField(c)
		if err != nil {
			return nil, err
		}
		st.Fields = append(st.Fields, sf)
	}
	return st, nil
}

func deriveField(n *pqNode) (*types.StructField, error) {
	t, err := deriveType(n)
	if err != nil {
		return nil, err
	}
	sf := &types.StructField{Name: n.name, Type: t, Nullable: n.rep == format.Optional}
	if n.hasID {
		sf.Metadata = map[string]json.RawMessage{types.MetaColumnMappingID: json.RawMessage(strconv.Itoa(int(n.fieldID)))}
	}
	return sf, nil
}

// deriveType maps one node (as a field value: a repeated node is a list of itself) to a Delta type.
func deriveType(n *pqNode) (types.DataType, error) {
	if n.rep == format.Repeated {
		elem, err := deriveValueType(n)
		if err != nil {
			return nil, err
		}
		return &types.ArrayType{ElementType: elem, ContainsNull: false}, nil
	}
	return deriveValueType(n)
}

// deriveValueType maps a node ignoring its own repetition.
func deriveValueType(n *pqNode) (types.DataType, error) {
	if n.isLeaf() {
		return derivePrimitive(n)
	}
	switch {
	case n.lt.ann == annList && n.rep != format.Repeated:
		_, elem, err := listLayout(n)
		if err != nil {
			return nil, err
		}
		var et types.DataType
		if elem.rep == format.Repeated {
			et, err = deriveValueType(elem)
		} else {
			et, err = deriveType(elem)
		}
		if err != nil {
			return nil, err
		}
		return &types.ArrayType{ElementType: et, ContainsNull: elem.rep == format.Optional}, nil
	case n.isMapGroup() && n.rep != format.Repeated:
		_, k, v, err := mapLayout(n)
		if err != nil {
			return nil, err
		}
		kt, err := deriveType(k)
		if err != nil {
			return nil, err
		}
		if v == nil {
			return &types.MapType{KeyType: kt, ValueType: types.Primitive(types.TypeBoolean), ValueContainsNull: true}, nil
		}
		vt, err := deriveType(v)
		if err != nil {
			return nil, err
		}
		return &types.MapType{KeyType: kt, ValueType: vt, ValueContainsNull: v.rep == format.Optional}, nil
	case n.isVariantGroup(true):
		return types.Primitive(types.TypeVariant), nil
	}
	st := &types.StructType{}
	for _, c := range n.children {
		sf, err := deriveField(c)
		if err != nil {
			return nil, err
		}
		st.Fields = append(st.Fields, sf)
	}
	return st, nil
}

func derivePrimitive(n *pqNode) (types.DataType, error) {
	t := n.lt
	unsupported := func() (types.DataType, error) {
		return nil, fmt.Errorf("parquet column %q has type %s, which Delta cannot represent", n.pathString(), t)
	}
	if t.ann == annDecimal {
		if t.precision < 1 || t.precision > 38 || t.scale < 0 || t.scale > t.precision {
			return unsupported()
		}
		return types.Decimal(t.precision, t.scale), nil
	}
	switch t.phys {
	case format.Boolean:
		return types.Primitive(types.TypeBoolean), nil
	case format.Int32:
		switch t.ann {
		case annNone:
			return types.Primitive(types.TypeInteger), nil
		case annDate:
			return types.Primitive(types.TypeDate), nil
		case annInt:
			switch {
			case t.bitWidth == 8 && t.signed:
				return types.Primitive(types.TypeByte), nil
			case t.bitWidth == 16 && t.signed, t.bitWidth == 8:
				return types.Primitive(types.TypeShort), nil
			case t.bitWidth == 32 && t.signed, t.bitWidth == 16:
				return types.Primitive(types.TypeInteger), nil
			default:
				return types.Primitive(types.TypeLong), nil
			}
		}
	case format.Int64:
		switch t.ann {
		case annNone:
			return types.Primitive(types.TypeLong), nil
		case annInt:
			if t.signed || t.bitWidth < 64 {
				return types.Primitive(types.TypeLong), nil
			}
			return types.Decimal(20, 0), nil
		case annTimestamp:
			if t.utc {
				return types.Primitive(types.TypeTimestamp), nil
			}
			return types.Primitive(types.TypeTimestampNTZ), nil
		}
	case format.Int96:
		return types.Primitive(types.TypeTimestamp), nil
	case format.Float:
		return types.Primitive(types.TypeFloat), nil
	case format.Double:
		return types.Primitive(types.TypeDouble), nil
	case format.ByteArray:
		switch t.ann {
		case annString:
			return types.Primitive(types.TypeString), nil
		case annNone:
			return types.Primitive(types.TypeBinary), nil
		}
	case format.FixedLenByteArray:
		switch t.ann {
		case annNone, annUUID, annFloat16, annInterval:
			return types.Primitive(types.TypeBinary), nil
		}
	}
	return unsupported()
}
