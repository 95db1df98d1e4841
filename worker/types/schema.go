package types

import (
	"bytes"
	"encoding/json"
	"fmt"
	"regexp"
	"strconv"
	"strings"
)

// DataType is a Delta column type: a *PrimitiveType, *StructType, *ArrayType or *MapType.
// The JSON form is the one of the protocol's schemaString.
type DataType interface {
	// String returns the type's name as Delta spells it ("long", "decimal(10,2)", "array<string>").
	String() string
	isDataType()
}

// Primitive type names as they appear in schemaString.
const (
	TypeString       = "string"
	TypeLong         = "long"
	TypeInteger      = "integer"
	TypeShort        = "short"
	TypeByte         = "byte"
	TypeFloat        = "float"
	TypeDouble       = "double"
	TypeBoolean      = "boolean"
	TypeBinary       = "binary"
	TypeDate         = "date"
	TypeTimestamp    = "timestamp"
	TypeTimestampNTZ = "timestamp_ntz"
	TypeDecimal      = "decimal"
	TypeVariant      = "variant"
)

// PrimitiveType is a scalar type. Precision and Scale are set only for decimals.
type PrimitiveType struct {
	Name      string
	Precision int
	Scale     int
}

func (*PrimitiveType) isDataType() {}

func (p *PrimitiveType) String() string {
	if p.Name == TypeDecimal {
		return fmt.Sprintf("decimal(%d,%d)", p.Precision, p.Scale)
	}
	return p.Name
}

// Primitive returns the primitive type with the given name; use Decimal for decimals.
func Primitive(name string) *PrimitiveType { return &PrimitiveType{Name: name} }

// Decimal returns decimal(precision, scale).
func Decimal(precision, scale int) *PrimitiveType {
	return &PrimitiveType{Name: TypeDecimal, Precision: precision, Scale: scale}
}

// StructType is a row or a nested struct.
type StructType struct {
	Fields []*StructField
}

func (*StructType) isDataType() {}

func (s *StructType) String() string {
	parts := make([]string, len(s.Fields))
	for i, f := range s.Fields {
		parts[i] = f.Name + ":" + f.Type.String()
	}
	return "struct<" + strings.Join(parts, ",") + ">"
}

// Field returns the field with the given logical name (case-sensitive) or nil.
func (s *StructType) Field(name string) *StructField {
	for _, f := range s.Fields {
		if f.Name == name {
			return f
		}
	}
	return nil
}

// FieldIndex returns the position of the named field or -1.
func (s *StructType) FieldIndex(name string) int {
	for i, f := range s.Fields {
		if f.Name == name {
			return i
		}
	}
	return -1
}

// StructField is one named field. Metadata is kept verbatim (raw JSON values) so that a schema read from
// the log is written back byte-for-byte equivalent, including keys this package does not understand.
type StructField struct {
	Name     string
	Type     DataType
	Nullable bool
	Metadata map[string]json.RawMessage
}

// Column-mapping metadata keys (protocol §Column Mapping).
const (
	MetaColumnMappingID           = "delta.columnMapping.id"
	MetaColumnMappingPhysicalName = "delta.columnMapping.physicalName"
	MetaParquetFieldID            = "parquet.field.id"
)

// PhysicalName is the name used in Parquet files, stats and partition values: the column-mapping physical
// name when present, otherwise the logical name. Callers decide whether column mapping is active; under
// mode "none" the logical name must be used even if stale metadata carries a physical name.
func (f *StructField) PhysicalName() string {
	if raw, ok := f.Metadata[MetaColumnMappingPhysicalName]; ok {
		var s string
		if json.Unmarshal(raw, &s) == nil && s != "" {
			return s
		}
	}
	return f.Name
}

// FieldID returns the column-mapping id (the Parquet field_id in id mode), if any.
func (f *StructField) FieldID() (int64, bool) {
	raw, ok := f.Metadata[MetaColumnMappingID]
	if !ok {
		return 0, false
	}
	id, err := strconv.ParseInt(string(bytes.TrimSpace(raw)), 10, 64)
	return id, err == nil
}

// ArrayType is a list of elements.
type ArrayType struct {
	ElementType  DataType
	ContainsNull bool
}

func (*ArrayType) isDataType() {}

func (a *ArrayType) String() string { return "array<" + a.ElementType.String() + ">" }

// MapType is a map from keys to values.
type MapType struct {
	KeyType           DataType
	ValueType         DataType
	ValueContainsNull bool
}

func (*MapType) isDataType() {}

func (m *MapType) String() string {
	return "map<" + m.KeyType.String() + "," + m.ValueType.String() + ">"
}

var decimalPattern = regexp.MustCompile(`^decimal\(\s*(\d+)\s*,\s*(-?\d+)\s*\)$`)

// ParseSchema parses a metaData.schemaString.
func ParseSchema(schemaString string) (*StructType, error) {
	t, err := parseDataType(json.RawMessage(schemaString))
	if err != nil {
		return nil, fmt.Errorf("parse table schema: %w", err)
	}
	st, ok := t.(*StructType)
	if !ok {
		return nil, fmt.Errorf("parse table schema: top-level type is %s, want struct", t)
	}
	return st, nil
}

func parseDataType(raw json.RawMessage) (DataType, error) {
	raw = bytes.TrimSpace(raw)
	if len(raw) > 0 && raw[0] == '"' {
		var name string
		if err := json.Unmarshal(raw, &name); err != nil {
			return nil, err
		}
		return parsePrimitive(name)
	}
	var head struct {
		Type string `json:"type"`
	}
	if err := json.Unmarshal(raw, &head); err != nil {
		return nil, fmt.Errorf("invalid data type %s: %w", truncate(raw), err)
	}
	switch head.Type {
	case "struct":
		var s struct {
			Fields []struct {
				Name     string                     `json:"name"`
				Type     json.RawMessage            `json:"type"`
				Nullable *bool                      `json:"nullable"`
				Metadata map[string]json.RawMessage `json:"metadata"`
			} `json:"fields"`
		}
		if err := json.Unmarshal(raw, &s); err != nil {
			return nil, fmt.Errorf("invalid struct type: %w", err)
		}
		st := &StructType{Fields: make([]*StructField, 0, len(s.Fields))}
		for _, f := range s.Fields {
			ft, err := parseDataType(f.Type)
			if err != nil {
				return nil, fmt.Errorf("field %q: %w", f.Name, err)
			}
			nullable := true
			if f.Nullable != nil {
				nullable = *f.Nullable
			}
			st.Fields = append(st.Fields, &StructField{Name: f.Name, Type: ft, Nullable: nullable, Metadata: f.Metadata})
		}
		return st, nil
	case "array":
		var a struct {
			ElementType  json.RawMessage `json:"elementType"`
			ContainsNull *bool           `json:"containsNull"`
		}
		if err := json.Unmarshal(raw, &a); err != nil {
			return nil, fmt.Errorf("invalid array type: %w", err)
		}
		et, err := parseDataType(a.ElementType)
		if err != nil {
			return nil, fmt.Errorf("array element: %w", err)
		}
		return &ArrayType{ElementType: et, ContainsNull: a.ContainsNull == nil || *a.ContainsNull}, nil
	case "map":
		var m struct {
			KeyType           json.RawMessage `json:"keyType"`
			ValueType         json.RawMessage `json:"valueType"`
			ValueContainsNull *bool           `json:"valueContainsNull"`
		}
		if err := json.Unmarshal(raw, &m); err != nil {
			return nil, fmt.Errorf("invalid map type: %w", err)
		}
		kt, err := parseDataType(m.KeyType)
		if err != nil {
			return nil, fmt.Errorf("map key: %w", err)
		}
		vt, err := parseDataType(m.ValueType)
		if err != nil {
			return nil, fmt.Errorf("map value: %w", err)
		}
		return &MapType{KeyType: kt, ValueType: vt, ValueContainsNull: m.ValueContainsNull == nil || *m.ValueContainsNull}, nil
	default:
		return nil, fmt.Errorf("unknown data type %s", truncate(raw))
	}
}

func parsePrimitive(name string) (DataType, error) {
	switch name {
	case TypeString, TypeLong, TypeInteger, TypeShort, TypeByte, TypeFloat, TypeDouble, TypeBoolean,
		TypeBinary, TypeDate, TypeTimestamp, TypeTimestampNTZ, TypeVariant:
		return &PrimitiveType{Name: name}, nil
	case TypeDecimal:
		// A bare "decimal" is Spark's default DECIMAL(10,0).
		return Decimal(10, 0), nil
	}
	if m := decimalPattern.FindStringSubmatch(name); m != nil {
		p, _ := strconv.Atoi(m[1])
		s, _ := strconv.Atoi(m[2])
		if p < 1 || p > 38 || s < 0 || s > p {
			return nil, fmt.Errorf("invalid decimal type %q: need 1 <= precision <= 38 and 0 <= scale <= precision", name)
		}
		return Decimal(p, s), nil
	}
	return nil, fmt.Errorf("unknown primitive type %q", name)
}

func truncate(raw []byte) string {
	if len(raw) > 80 {
		return string(raw[:80]) + "…"
	}
	return string(raw)
}

// MarshalJSON writes the protocol's JSON form of a struct type.
func (s *StructType) MarshalJSON() ([]byte, error) { return marshalDataType(s) }

// SchemaString returns the schema in the form stored in metaData.schemaString.
func (s *StructType) SchemaString() (string, error) {
	b, err := marshalDataType(s)
	return string(b), err
}

func marshalDataType(t DataType) ([]byte, error) {
	var buf bytes.Buffer
	if err := writeDataType(&buf, t); err != nil {
		return nil, err
	}
	return buf.Bytes(), nil
}

func writeDataType(buf *bytes.Buffer, t DataType) error {
	writeString := func(s string) {
		b, _ := json.Marshal(s)
		buf.Write(b)
	}
	switch t := t.(type) {
	case *PrimitiveType:
		writeString(t.String())
	case *StructType:
		buf.WriteString(`{"type":"struct","fields":[`)
		for i, f := range t.Fields {
			if i > 0 {
				buf.WriteByte(',')
			}
			buf.WriteString(`{"name":`)
			writeString(f.Name)
			buf.WriteString(`,"type":`)
			if err := writeDataType(buf, f.Type); err != nil {
				return err
			}
			buf.WriteString(`,"nullable":` + strconv.FormatBool(f.Nullable) + `,"metadata":`)
			if len(f.Metadata) == 0 {
				buf.WriteString("{}")
			} else {
				b, err := json.Marshal(f.Metadata) // map keys are sorted: deterministic output
				if err != nil {
					return fmt.Errorf("field %q metadata: %w", f.Name, err)
				}
				buf.Write(b)
			}
			buf.WriteByte('}')
		}
		buf.WriteString("]}")
	case *ArrayType:
		buf.WriteString(`{"type":"array","elementType":`)
		if err := writeDataType(buf, t.ElementType); err != nil {
			return err
		}
		buf.WriteString(`,"containsNull":` + strconv.FormatBool(t.ContainsNull) + `}`)
	case *MapType:
		buf.WriteString(`{"type":"map","keyType":`)
		if err := writeDataType(buf, t.KeyType); err != nil {
			return err
		}
		buf.WriteString(`,"valueType":`)
		if err := writeDataType(buf, t.ValueType); err != nil {
			return err
		}
		buf.WriteString(`,"valueContainsNull":` + strconv.FormatBool(t.ValueContainsNull) + `}`)
	default:
		return fmt.Errorf("unsupported data type %T", t)
	}
	return nil
}

// MapFields returns a copy of t in which every struct field, at every depth (inside arrays and maps
// too), is replaced by fn's copy of it, visited parent first and in field order. fn's result gets the
// field's mapped type; anything else (name, nullability, metadata) is fn's to set. t is not modified.
func MapFields(t DataType, fn func(*StructField) *StructField) DataType {
	switch tt := t.(type) {
	case *StructType:
		out := &StructType{Fields: make([]*StructField, len(tt.Fields))}
		for i, f := range tt.Fields {
			nf := fn(f)
			nf.Type = MapFields(f.Type, fn)
			out.Fields[i] = nf
		}
		return out
	case *ArrayType:
		return &ArrayType{ElementType: MapFields(tt.ElementType, fn), ContainsNull: tt.ContainsNull}
	case *MapType:
		return &MapType{KeyType: MapFields(tt.KeyType, fn), ValueType: MapFields(tt.ValueType, fn), ValueContainsNull: tt.ValueContainsNull}
	}
	return t
}
