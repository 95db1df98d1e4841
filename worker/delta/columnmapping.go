package delta

import (
	"fmt"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Column mapping (PROTOCOL.md §Column Mapping): with mode name or id, Parquet files, statistics,
// partition values and clustering columns use each field's physical name
// (delta.columnMapping.physicalName), and in id mode readers resolve Parquet columns by field id
// (delta.columnMapping.id). With mode none the logical name is used even if stale mapping
// metadata is present (a table whose mapping was dropped).

// PhysicalName returns the name under which f is stored for the given mode.
func PhysicalName(f *types.StructField, mode ColumnMappingMode) string {
	if mode == ColumnMappingNone || mode == "" {
		return f.Name
	}
	return f.PhysicalName()
}

// validateColumnMapping checks that every field, at every depth, carries the metadata the mode
// needs; a name-mode table with a field lacking a physical name cannot be read correctly.
func validateColumnMapping(t types.DataType, mode ColumnMappingMode, path string) error {
	if mode == ColumnMappingNone || mode == "" {
		return nil
	}
	switch t := t.(type) {
	case *types.StructType:
		for _, f := range t.Fields {
			p := joinPath(path, f.Name)
			if _, ok := f.Metadata[types.MetaColumnMappingPhysicalName]; !ok {
				return fmt.Errorf("column mapping mode %q but field %s has no %s", mode, p, types.MetaColumnMappingPhysicalName)
			}
			if _, ok := f.FieldID(); !ok && mode == ColumnMappingID {
				return fmt.Errorf("column mapping mode %q but field %s has no %s", mode, p, types.MetaColumnMappingID)
			}
			if err := validateColumnMapping(f.Type, mode, p); err != nil {
				return err
			}
		}
	case *types.ArrayType:
		return validateColumnMapping(t.ElementType, mode, path+".element")
	case *types.MapType:
		if err := validateColumnMapping(t.KeyType, mode, path+".key"); err != nil {
			return err
		}
		return validateColumnMapping(t.ValueType, mode, path+".value")
	}
	return nil
}

func joinPath(parent, name string) string {
	if parent == "" {
		return name
	}
	return parent + "." + name
}

// PhysicalSchema returns the schema as stored in data files: physical names at every depth
// (struct fields inside arrays and maps too), metadata kept so that field ids stay available for
// id-mode matching (parquetio.ReadOptions.MatchFieldIDs, WriterOptions.WriteFieldIDs). The input
// is not modified.
func PhysicalSchema(logical *types.StructType, mode ColumnMappingMode) *types.StructType {
	return types.MapFields(logical, func(f *types.StructField) *types.StructField {
		return &types.StructField{Name: PhysicalName(f, mode), Nullable: f.Nullable, Metadata: f.Metadata}
	}).(*types.StructType)
}

// ResolveColumn finds a column by its logical path through nested structs and returns the field
// and its physical path.
func ResolveColumn(schema *types.StructType, mode ColumnMappingMode, logical []string) (*types.StructField, []string, error) {
	if len(logical) == 0 {
		return nil, nil, fmt.Errorf("empty column path")
	}
	cur := schema
	physical := make([]string, 0, len(logical))
	for i, name := range logical {
		f := cur.Field(name)
		if f == nil {
			return nil, nil, fmt.Errorf("column %s not found in the table schema", strings.Join(logical[:i+1], "."))
		}
		physical = append(physical, PhysicalName(f, mode))
		if i == len(logical)-1 {
			return f, physical, nil
		}
		st, ok := f.Type.(*types.StructType)
		if !ok {
			return nil, nil, fmt.Errorf("column %s is a %s, not a struct", strings.Join(logical[:i+1], "."), f.Type)
		}
		cur = st
	}
	panic("unreachable")
}

// ResolvePhysicalColumn finds a column by its physical path (as stored in stats, partition values
// and the delta.clustering domain) and returns the field and its logical path.
func ResolvePhysicalColumn(schema *types.StructType, mode ColumnMappingMode, physical []string) (*types.StructField, []string, error) {
	if len(physical) == 0 {
		return nil, nil, fmt.Errorf("empty column path")
	}
	cur := schema
	logical := make([]string, 0, len(physical))
	for i, name := range physical {
		var found *types.StructField
		for _, f := range cur.Fields {
			if PhysicalName(f, mode) == name {
				found = f
				break
			}
		}
		if found == nil {
			return nil, nil, fmt.Errorf("physical column %s not found in the table schema", strings.Join(physical[:i+1], "."))
		}
		logical = append(logical, found.Name)
		if i == len(physical)-1 {
			return found, logical, nil
		}
		st, ok := found.Type.(*types.StructType)
		if !ok {
			return nil, nil, fmt.Errorf("column %s is a %s, not a struct", strings.Join(logical, "."), found.Type)
		}
		cur = st
	}
	panic("unreachable")
}
