package delta

import (
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// The checkpoint Parquet schema, with the types Spark writes (PROTOCOL.md §Checkpoint Schema,
// Spark Checkpoints.scala). Readers use a widened copy (every integer read as long) so that files
// from writers that chose other integer widths still read; the writer uses these exact types.

func str() types.DataType    { return types.Primitive(types.TypeString) }
func long() types.DataType   { return types.Primitive(types.TypeLong) }
func int32T() types.DataType { return types.Primitive(types.TypeInteger) }
func boolean() types.DataType {
	return types.Primitive(types.TypeBoolean)
}
func strMap() types.DataType {
	return &types.MapType{KeyType: str(), ValueType: str(), ValueContainsNull: true}
}
func strArray() types.DataType { return &types.ArrayType{ElementType: str(), ContainsNull: true} }

func field(name string, t types.DataType) *types.StructField {
	return &types.StructField{Name: name, Type: t, Nullable: true}
}

func dvStruct() *types.StructType {
	return &types.StructType{Fields: []*types.StructField{
		field("storageType", str()),
		field("pathOrInlineDv", str()),
		field("offset", int32T()),
		field("sizeInBytes", int32T()),
		field("cardinality", long()),
		field("maxRowIndex", long()),
	}}
}

func checkpointAddStruct() *types.StructType {
	return &types.StructType{Fields: []*types.StructField{
		field("path", str()),
		field("partitionValues", strMap()),
		field("size", long()),
		field("modificationTime", long()),
		field("dataChange", boolean()),
		field("stats", str()),
		field("tags", strMap()),
		field("deletionVector", dvStruct()),
		field("baseRowId", long()),
		field("defaultRowCommitVersion", long()),
		field("clusteringProvider", str()),
	}}
}

func checkpointRemoveStruct() *types.StructType {
	return &types.StructType{Fields: []*types.StructField{
		field("path", str()),
		field("deletionTimestamp", long()),
		field("dataChange", boolean()),
		field("extendedFileMetadata", boolean()),
		field("partitionValues", strMap()),
		field("size", long()),
		field("deletionVector", dvStruct()),
		field("baseRowId", long()),
		field("defaultRowCommitVersion", long()),
	}}
}

func checkpointColumn(name string) *types.StructField {
	var t *types.StructType
	switch name {
	case "txn":
		t = &types.StructType{Fields: []*types.StructField{field("appId", str()), field("version", long()), field("lastUpdated", long())}}
	case "add":
		t = checkpointAddStruct()
	case "remove":
		t = checkpointRemoveStruct()
	case "metaData":
		t = &types.StructType{Fields: []*types.StructField{
			field("id", str()),
			field("name", str()),
			field("description", str()),
			field("format", &types.StructType{Fields: []*types.StructField{field("provider", str()), field("options", strMap())}}),
			field("schemaString", str()),
			field("partitionColumns", strArray()),
			field("configuration", strMap()),
			field("createdTime", long()),
		}}
	case "protocol":
		t = &types.StructType{Fields: []*types.StructField{
			field("minReaderVersion", int32T()),
			field("minWriterVersion", int32T()),
			field("readerFeatures", strArray()),
			field("writerFeatures", strArray()),
		}}
	case "domainMetadata":
		t = &types.StructType{Fields: []*types.StructField{field("domain", str()), field("configuration", str()), field("removed", boolean())}}
	case "checkpointMetadata":
		t = &types.StructType{Fields: []*types.StructField{field("version", long()), field("tags", strMap())}}
	case "sidecar":
		t = &types.StructType{Fields: []*types.StructField{
			field("path", str()), field("sizeInBytes", long()), field("modificationTime", long()), field("tags", strMap()),
		}}
	default:
		panic("unknown checkpoint column " + name)
	}
	return field(name, t)
}

// nonFileColumns are read in the first pass over a checkpoint, fileColumns in the second.
var (
	nonFileColumns = []string{"protocol", "metaData", "txn", "domainMetadata", "checkpointMetadata", "sidecar"}
	fileColumns    = []string{"add", "remove"}
)

// widen returns a copy of t with every integer type replaced by long, for reading.
func widen(t types.DataType) types.DataType {
	switch t := t.(type) {
	case *types.StructType:
		out := &types.StructType{Fields: make([]*types.StructField, len(t.Fields))}
		for i, f := range t.Fields {
			out.Fields[i] = &types.StructField{Name: f.Name, Type: widen(f.Type), Nullable: true, Metadata: f.Metadata}
		}
		return out
	case *types.PrimitiveType:
		switch t.Name {
		case types.TypeByte, types.TypeShort, types.TypeInteger:
			return long()
		}
	}
	return t
}
