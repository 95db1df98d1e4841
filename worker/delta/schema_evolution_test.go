package delta

import (
	"context"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func TestEvolveSchema_AddsOnlyNullableFieldsInTheAppendCommit(t *testing.T) {
	ctx := context.Background()
	store, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	long := types.Primitive(types.TypeLong)
	base := &types.StructType{Fields: []*types.StructField{{Name: "id", Type: long, Nullable: false},
		{Name: "s", Type: &types.StructType{Fields: []*types.StructField{{Name: "a", Type: long, Nullable: true}}}, Nullable: true}}}
	snap, err := NewTable(store).Create(ctx, CreateOptions{Schema: base})
	if err != nil {
		t.Fatal(err)
	}
	field := func(name string, t types.DataType, nullable bool) *types.StructField {
		return &types.StructField{Name: name, Type: t, Nullable: nullable}
	}
	for _, tc := range []struct {
		name   string
		schema *types.StructType
		want   string // "" accepted
	}{
		{"new top-level and nested columns", &types.StructType{Fields: []*types.StructField{base.Fields[0],
			field("s", &types.StructType{Fields: []*types.StructField{field("a", long, true), field("b", long, true)}}, true), field("c", long, true)}}, ""},
		{"a NOT NULL new column", &types.StructType{Fields: []*types.StructField{base.Fields[0], base.Fields[1], field("c", long, false)}}, "must be nullable"},
		{"a dropped column", &types.StructType{Fields: []*types.StructField{base.Fields[0]}}, "would lose fields"},
		{"a type change", &types.StructType{Fields: []*types.StructField{field("id", types.Primitive(types.TypeInteger), false), base.Fields[1]}}, "typeWidening"},
		{"a renamed column", &types.StructType{Fields: []*types.StructField{field("ID", long, false), base.Fields[1]}}, "would change"},
	} {
		tx, err := snap.Begin(OpAppend, TxnOptions{Operation: "WRITE"})
		if err != nil {
			t.Fatal(err)
		}
		view, err := tx.EvolveSchema(tc.schema)
		if tc.want != "" {
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("%s: err = %v, want %q", tc.name, err, tc.want)
			}
			continue
		}
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		if view.Schema().String() != tc.schema.String() || snap.Schema().String() != base.String() {
			t.Fatalf("%s: view %s, read snapshot %s", tc.name, view.Schema(), snap.Schema())
		}
		tx.SetTxn("app", 0)
		if _, err := tx.Commit(ctx); err != nil {
			t.Fatal(err)
		}
		after, err := NewTable(store).Latest(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if after.Schema().String() != tc.schema.String() {
			t.Fatalf("%s: committed schema %s", tc.name, after.Schema())
		}
	}
	tx, _ := snap.Begin(OpMetadataChange, TxnOptions{Operation: "SET TBLPROPERTIES"})
	if _, err := tx.EvolveSchema(base); err == nil {
		t.Fatalf("EvolveSchema in a metadata transaction was accepted")
	}
}
