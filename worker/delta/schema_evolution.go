package delta

import (
	"encoding/json"
	"fmt"
	"maps"
	"strconv"

	"github.com/google/uuid"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// EvolveSchema makes an append (or merge) commit also change the table schema to schema, in the same
// commit as its data, as Spark's mergeSchema does. The new schema must keep every field of the
// current one, with the same type, nullability and metadata, in the same order, and may only add
// nullable fields: at the end of the top level or of a struct (nested inside arrays and maps too).
// Under column mapping the added fields get fresh ids and physical names (and
// delta.columnMapping.maxColumnId moves up), so they never alias a dropped column's data.
//
// It returns the snapshot the transaction's data files must be written against: the read snapshot
// with the evolved schema. Files written with the old schema stay readable (their missing columns
// read as null).
func (tx *Transaction) EvolveSchema(schema *types.StructType) (*Snapshot, error) {
	loc := tx.table.Location()
	if tx.kind != OpAppend && tx.kind != OpMerge {
		return nil, fmt.Errorf("table %s: the schema can only evolve with the data of an append or merge", loc)
	}
	if err := additive(tx.snap.schema, schema, ""); err != nil {
		return nil, fmt.Errorf("table %s: schema evolution: %w", loc, err)
	}
	md := *tx.metadata()
	md.Configuration = maps.Clone(md.Configuration)
	if md.Configuration == nil {
		md.Configuration = map[string]string{}
	}
	if tx.snap.mode != ColumnMappingNone && tx.snap.mode != "" {
		maxID, err := TableProperties(md.Configuration).Int(PropColumnMappingMaxID, 0)
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", loc, err)
		}
		schema = types.MapFields(schema, func(f *types.StructField) *types.StructField {
			nf := *f
			if _, ok := f.Metadata[types.MetaColumnMappingID]; ok {
				return &nf
			}
			maxID++
			nf.Metadata = maps.Clone(f.Metadata)
			if nf.Metadata == nil {
				nf.Metadata = map[string]json.RawMessage{}
			}
			nf.Metadata[types.MetaColumnMappingID] = json.RawMessage(strconv.FormatInt(maxID, 10))
			nf.Metadata[types.MetaColumnMappingPhysicalName] = json.RawMessage(strconv.Quote("col-" + uuid.NewString()))
			return &nf
		}).(*types.StructType)
		md.Configuration[PropColumnMappingMaxID] = strconv.FormatInt(maxID, 10)
	}
	if err := validateColumnMapping(schema, tx.snap.mode, ""); err != nil {
		return nil, fmt.Errorf("table %s: %w", loc, err)
	}
	s, err := schema.SchemaString()
	if err != nil {
		return nil, err
	}
	md.SchemaString = s
	tx.newMetadata = &md
	view := *tx.snap
	view.metadata, view.schema = md, schema
	return &view, nil
}

// additive checks that next keeps every field of cur unchanged and in order and only adds nullable
// fields.
func additive(cur, next types.DataType, path string) error {
	switch c := cur.(type) {
	case *types.StructType:
		n, ok := next.(*types.StructType)
		if !ok {
			return fmt.Errorf("column %s would change from %s to %s", path, cur, next)
		}
		if len(n.Fields) < len(c.Fields) {
			return fmt.Errorf("struct %s would lose fields", orTop(path))
		}
		for i, f := range c.Fields {
			g := n.Fields[i]
			p := joinPath(path, f.Name)
			if g.Name != f.Name || g.Nullable != f.Nullable || !sameMetadata(f.Metadata, g.Metadata) {
				return fmt.Errorf("field %s would change (only new nullable fields may be added)", p)
			}
			if err := additive(f.Type, g.Type, p); err != nil {
				return err
			}
		}
		for _, g := range n.Fields[len(c.Fields):] {
			if !g.Nullable {
				return fmt.Errorf("new field %s must be nullable: the table's existing rows have no value for it", joinPath(path, g.Name))
			}
		}
		return nil
	case *types.ArrayType:
		n, ok := next.(*types.ArrayType)
		if !ok || n.ContainsNull != c.ContainsNull {
			return fmt.Errorf("column %s would change from %s to %s", path, cur, next)
		}
		return additive(c.ElementType, n.ElementType, path+".element")
	case *types.MapType:
		n, ok := next.(*types.MapType)
		if !ok || n.ValueContainsNull != c.ValueContainsNull {
			return fmt.Errorf("column %s would change from %s to %s", path, cur, next)
		}
		if err := additive(c.KeyType, n.KeyType, path+".key"); err != nil {
			return err
		}
		return additive(c.ValueType, n.ValueType, path+".value")
	case *types.PrimitiveType:
		if n, ok := next.(*types.PrimitiveType); !ok || *n != *c {
			return fmt.Errorf("column %s would change from %s to %s: changing a column's type needs the typeWidening feature, which deltakeeper does not apply yet", path, cur, next)
		}
	}
	return nil
}

func orTop(path string) string {
	if path == "" {
		return "the table"
	}
	return path
}

func sameMetadata(a, b map[string]json.RawMessage) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if string(b[k]) != string(v) {
			return false
		}
	}
	return true
}
