package table_test

import (
	"fmt"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// A liquid-clustered table: with DVs a touched file keeps its clustering (same file, same provider and
// ZCube tags); copy-on-write writes new files without them, as Spark's DML does, for the next
// clustering run to pick up.
func TestDeleteWhere_ClusteredTables(t *testing.T) {
	for _, props := range []map[string]string{nil, dvProps} {
		t.Run(fmt.Sprintf("dv=%v", props != nil), func(t *testing.T) {
			store, _ := newStore(t)
			tbl := dmlTableN(t, store, nil, props, 4, 10_000)
			if _, err := table.ApplyDeclaration(t.Context(), tbl, table.Declaration{ClusterBy: []string{"id"}, SetClusterBy: true}); err != nil {
				t.Fatal(err)
			}
			if _, err := cluster.Optimize(t.Context(), tbl, latestSnap(t, tbl), cluster.Options{TargetFileSize: 32 << 10}, nil); err != nil {
				t.Fatal(err)
			}
			before := latestSnap(t, tbl)
			for _, f := range before.Files() {
				if f.ClusteringProvider != "liquid" {
					t.Fatalf("file %s not clustered", f.Path)
				}
			}
			rep := deleteWhere(t, tbl, "id >= 10 AND id < 20", table.DeleteWhereOptions{})
			after := latestSnap(t, tbl)
			if got, want := sortedIDs(t, after), wantIDs(40_000, func(id int64) bool { return id >= 10 && id < 20 }); !slices.Equal(got, want) {
				t.Fatalf("rows %v, want %v", got, want)
			}
			if rep.FilesScanned >= len(before.Files()) {
				t.Errorf("scanned %d of %d clustered files: statistics should prune most", rep.FilesScanned, len(before.Files()))
			}
			for _, f := range after.Files() {
				if _, untouched := before.File(f.Key()); untouched {
					continue
				}
				old, _ := before.File(delta.FileKey{Path: f.Path})
				switch {
				case props != nil && (old == nil || f.ClusteringProvider != "liquid" || !mapsEqual(f.Tags, old.Tags)):
					t.Errorf("DV-touched file %s lost its clustering: provider %q tags %v", f.Path, f.ClusteringProvider, f.Tags)
				case props == nil && (f.ClusteringProvider != "" || len(f.Tags) != 0):
					t.Errorf("copy-on-write output %s claims clustering: provider %q tags %v", f.Path, f.ClusteringProvider, f.Tags)
				}
			}
		})
	}
}

func mapsEqual(a, b map[string]string) bool {
	if len(a) != len(b) {
		return false
	}
	for k, v := range a {
		if b[k] != v {
			return false
		}
	}
	return true
}

// Column mapping: the predicate's columns are found by physical name or field id, and copy-on-write
// writes the physical schema.
func TestDeleteWhere_ColumnMappingModes(t *testing.T) {
	for _, mode := range []delta.ColumnMappingMode{delta.ColumnMappingName, delta.ColumnMappingID} {
		for _, props := range []map[string]string{nil, dvProps} {
			t.Run(fmt.Sprintf("%s/dv=%v", mode, props != nil), func(t *testing.T) {
				store, _ := newStore(t)
				tbl, snap, err := tabletest.Create(t.Context(), store, dmlSchema(), []string{"p"}, mode, props)
				if err != nil {
					t.Fatal(err)
				}
				var rows []types.Struct
				for i := range 200 {
					rows = append(rows, dmlRow(int64(i)))
				}
				if _, err := table.Append(t.Context(), snap, rows, table.WriteOptions{}); err != nil {
					t.Fatal(err)
				}
				rep := deleteWhere(t, tbl, "v >= 'v0100' AND p = 'p0'", table.DeleteWhereOptions{})
				if rep.RowsDeleted != 50 || rep.FilesPrunedByPartition != 1 {
					t.Fatalf("report %+v", rep)
				}
				got := sortedIDs(t, latestSnap(t, tbl))
				if want := wantIDs(200, func(id int64) bool { return id >= 100 && id%2 == 0 }); !slices.Equal(got, want) {
					t.Fatalf("rows %v, want %v", got, want)
				}
			})
		}
	}
}
