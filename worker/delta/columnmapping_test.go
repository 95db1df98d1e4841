package delta

import (
	"encoding/json"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

func TestColumnMapping_PhysicalSchemaAndPaths(t *testing.T) {
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "outer", Nullable: true, Metadata: mappingMeta(1, "col-1"), Type: &types.StructType{Fields: []*types.StructField{
			{Name: "inner", Type: prim("long"), Nullable: true, Metadata: mappingMeta(2, "col-2")},
		}}},
		{Name: "list", Nullable: true, Metadata: mappingMeta(3, "col-3"), Type: &types.ArrayType{ContainsNull: true, ElementType: &types.StructType{Fields: []*types.StructField{
			{Name: "e", Type: prim("string"), Nullable: true, Metadata: mappingMeta(4, "col-4")},
		}}}},
	}}
	must(t, validateColumnMapping(schema, ColumnMappingID, ""))
	phys := PhysicalSchema(schema, ColumnMappingName)
	if phys.Fields[0].Name != "col-1" || phys.Fields[0].Type.(*types.StructType).Fields[0].Name != "col-2" ||
		phys.Fields[1].Type.(*types.ArrayType).ElementType.(*types.StructType).Fields[0].Name != "col-4" {
		t.Fatalf("physical schema %s", phys)
	}
	if id, ok := phys.Fields[0].FieldID(); !ok || id != 1 {
		t.Fatal("field id lost in the physical schema")
	}
	if schema.Fields[0].Name != "outer" {
		t.Fatal("PhysicalSchema modified its input")
	}
	if none := PhysicalSchema(schema, ColumnMappingNone); none.Fields[0].Name != "outer" {
		t.Fatal("mode none must use logical names")
	}
	f, p, err := ResolveColumn(schema, ColumnMappingName, []string{"outer", "inner"})
	if err != nil || f.Name != "inner" || !slices.Equal(p, []string{"col-1", "col-2"}) {
		t.Fatalf("ResolveColumn %v %v", p, err)
	}
	_, l, err := ResolvePhysicalColumn(schema, ColumnMappingID, []string{"col-1", "col-2"})
	if err != nil || !slices.Equal(l, []string{"outer", "inner"}) {
		t.Fatalf("ResolvePhysicalColumn %v %v", l, err)
	}
	if _, _, err := ResolveColumn(schema, ColumnMappingName, []string{"outer", "nope"}); err == nil {
		t.Fatal("missing column resolved")
	}
	broken := &types.StructType{Fields: []*types.StructField{{Name: "a", Type: prim("long"), Metadata: map[string]json.RawMessage{types.MetaColumnMappingID: json.RawMessage("1")}}}}
	if err := validateColumnMapping(broken, ColumnMappingName, ""); err == nil {
		t.Fatal("a name-mode field without a physical name was accepted")
	}
}

// TestColumnMapping_ConformanceTablesUsePhysicalNames checks, on the corpus's name- and id-mode
// tables, that partition values and statistics resolve through physical names.
func TestColumnMapping_ConformanceTablesUsePhysicalNames(t *testing.T) {
	dir, tables := conformanceTables(t)
	checked := 0
	for _, c := range tables {
		if !c.hasFeature("colmap-name") && !c.hasFeature("colmap-id") {
			continue
		}
		snap, err := NewTable(conformanceStore(t, dir, c)).Latest(t.Context())
		must(t, err)
		if snap.ColumnMappingMode() == ColumnMappingNone {
			t.Fatalf("%s: mode none", c.Name)
		}
		for _, f := range snap.Files() {
			for _, pc := range snap.PartitionColumns() {
				if _, ok := f.PartitionValues.Get(PhysicalName(pc, snap.ColumnMappingMode())); !ok {
					t.Errorf("%s: %s has no value under the physical name of %s", c.Name, f.Path, pc.Name)
				}
				if _, err := snap.PartitionValue(f, pc.Name); err != nil {
					t.Errorf("%s: %v", c.Name, err)
				}
			}
			st, ok, err := snap.Stats(f)
			if err != nil || ok && len(st.Columns) == 0 {
				t.Errorf("%s: %s: stats did not resolve to any column (%v)", c.Name, f.Path, err)
			}
		}
		checked++
	}
	if checked < 4 {
		t.Fatalf("only %d column-mapping tables", checked)
	}
}
