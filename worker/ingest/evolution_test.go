package ingest

import (
	"context"
	"encoding/json"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func TestRun_AddNewColumnsEvolvesTheSchemaInTheDataCommit(t *testing.T) {
	for _, mode := range []delta.ColumnMappingMode{delta.ColumnMappingNone, delta.ColumnMappingName} {
		t.Run(string(mode), func(t *testing.T) {
			fx := newFixture(t)
			schema := &types.StructType{Fields: []*types.StructField{longCol("id"),
				{Name: "s", Type: &types.StructType{Fields: []*types.StructField{longCol("a")}}, Nullable: true}}}
			if _, _, err := tabletest.Create(context.Background(), fx.tbl.Store(), schema, nil, mode, nil); err != nil {
				t.Fatal(err)
			}
			fx.put("a.json", `{"id":1,"s":{"a":1}}`)
			fx.put("b.json", `{"id":2,"s":{"a":2,"b":"nested"},"top":3.5}`+"\n"+`{"id":3,"extra":true}`)
			o := fx.options(format.JSON, nil, format.AddNewColumns)
			o.AvailableNow = true
			before := fx.snapshot().Version()
			rep := fx.run(o)
			b := rep.Batches[0]
			if !slices.Equal(b.SchemaChange, []string{"s.b", "extra", "top"}) && !slices.Equal(b.SchemaChange, []string{"s.b", "top", "extra"}) {
				t.Fatalf("schema change %v", b.SchemaChange)
			}
			snap := fx.snapshot()
			if snap.Version() != before+1 {
				t.Fatalf("versions %d → %d: the schema change must be in the data's commit", before, snap.Version())
			}
			if got := snap.Schema().String(); got != "struct<id:long,s:struct<a:long,b:string>,top:double,extra:boolean>" &&
				got != "struct<id:long,s:struct<a:long,b:string>,extra:boolean,top:double>" {
				t.Fatalf("schema %s", got)
			}
			if mode == delta.ColumnMappingName {
				maxID := snap.Properties()[delta.PropColumnMappingMaxID]
				if maxID != "6" {
					t.Errorf("maxColumnId %s, want 6 (3 columns before, 3 added)", maxID)
				}
			}
			rows := fx.rows("id", "s", "top", "extra")
			want := []string{"id=1 s={1,null} top=null extra=null", "id=2 s={2,nested} top=3.5 extra=null", "id=3 s=null top=null extra=true"}
			if !slices.Equal(rows, want) {
				t.Fatalf("rows\n%q\nwant\n%q", rows, want)
			}
		})
	}
}

func TestRun_FailOnNewColumnsNamesThemAndNoneDropsThem(t *testing.T) {
	fx := newFixture(t)
	fx.put("a.json", `{"id":1}`)
	o := fx.options(format.JSON, nil, "")
	o.AvailableNow = true
	fx.run(o)
	fx.put("b.json", `{"id":2,"Color":"red"}`)
	_, err := Run(context.Background(), fx.tbl, o)
	var re *result.Error
	if !errors.As(err, &re) || re.Reason != ReasonSchemaChange || !strings.Contains(err.Error(), "Color string") {
		t.Fatalf("err = %v, want %s naming Color", err, ReasonSchemaChange)
	}
	o.Format.Evolution = format.None
	fx.run(o)
	if rows := fx.rows("id"); len(rows) != 2 || fx.snapshot().Schema().String() != "struct<id:long>" {
		t.Fatalf("rows %v schema %s", rows, fx.snapshot().Schema())
	}
}

func TestRun_RescueKeepsTheSchemaAndRescuesUnknownAndBadValues(t *testing.T) {
	fx := newFixture(t)
	schema := &types.StructType{Fields: []*types.StructField{longCol("id"), {Name: "n", Type: types.Primitive(types.TypeInteger), Nullable: true}}}
	if _, err := fx.tbl.Create(context.Background(), delta.CreateOptions{Schema: schema}); err != nil {
		t.Fatal(err)
	}
	fx.put("a.json", `{"id":1,"n":5}`+"\n"+`{"id":2,"n":"five","other":[1]}`)
	o := fx.options(format.JSON, nil, format.Rescue)
	o.AvailableNow = true
	rep := fx.run(o)
	if rep.Batches[0].Rescued != 1 {
		t.Fatalf("rescued %d rows, want 1", rep.Batches[0].Rescued)
	}
	rows := fx.rows("id", "n", format.RescuedColumn)
	if len(rows) != 2 || rows[0] != "id=1 n=5 _rescued_data=null" {
		t.Fatalf("rows %q", rows)
	}
	var rescued map[string]any
	if err := json.Unmarshal([]byte(strings.TrimPrefix(rows[1], "id=2 n=null _rescued_data=")), &rescued); err != nil {
		t.Fatalf("rescued data of %q: %v", rows[1], err)
	}
	if rescued["n"] != "five" || rescued["other"] == nil || !strings.HasSuffix(rescued["_file_path"].(string), "/a.json") {
		t.Fatalf("rescued %v", rescued)
	}
	// The schema never changes again: a second file with other unknown fields is rescued too.
	v := fx.snapshot().Metadata().SchemaString
	fx.put("b.json", `{"id":3,"zzz":1}`)
	fx.run(o)
	if fx.snapshot().Metadata().SchemaString != v {
		t.Fatalf("rescue mode changed the schema")
	}
}
