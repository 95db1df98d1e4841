package table_test

import (
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
)

func TestApplyDeclaration_CommitsOnlyWhatDiffersAndIsIdempotent(t *testing.T) {
	store, _ := newStore(t)
	tbl, _, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), nil, delta.ColumnMappingName, nil)
	if err != nil {
		t.Fatal(err)
	}
	d := table.Declaration{
		Properties:   map[string]string{delta.PropTargetFileSize: "128mb", "owner": "team-a"},
		ClusterBy:    []string{"s", "ts"},
		SetClusterBy: true,
	}
	applied, err := table.ApplyDeclaration(t.Context(), tbl, d)
	if err != nil {
		t.Fatal(err)
	}
	if applied.Version == nil || *applied.Version != 1 || len(applied.Properties) != 2 || strings.Join(applied.ClusteringColumns, ",") != "s,ts" {
		t.Fatalf("first run applied %+v", applied)
	}
	snap, err := tbl.Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	p := snap.Protocol()
	if !p.HasWriterFeature(delta.FeatureClustering) || !p.HasWriterFeature(delta.FeatureDomainMetadata) {
		t.Errorf("protocol %+v lacks clustering/domainMetadata", p)
	}
	phys, ok, err := snap.ClusteringColumns()
	if err != nil || !ok || len(phys) != 2 || !strings.HasPrefix(phys[0][0], "col-") {
		t.Errorf("clustering domain = %v %v %v, want physical names", phys, ok, err)
	}
	facts, err := table.Inspect(snap)
	if err != nil {
		t.Fatal(err)
	}
	if strings.Join(facts.ClusteringColumns, ",") != "s,ts" || facts.Properties[delta.PropTargetFileSize] != "128mb" {
		t.Errorf("facts = %+v", facts)
	}

	again, err := table.ApplyDeclaration(t.Context(), tbl, d)
	if err != nil {
		t.Fatal(err)
	}
	if again.Version != nil || len(again.Properties) != 0 || len(again.ClusteringColumns) != 0 {
		t.Errorf("second run applied %+v, want nothing", again)
	}

	none, err := table.ApplyDeclaration(t.Context(), tbl, table.Declaration{SetClusterBy: true})
	if err != nil {
		t.Fatal(err)
	}
	if none.Version == nil || strings.Join(none.ClusteringColumns, ",") != "none" {
		t.Errorf("cluster by none applied %+v", none)
	}
	snap, _ = tbl.Latest(t.Context())
	if cols, _, _ := snap.ClusteringColumns(); len(cols) != 0 {
		t.Errorf("clustering columns after none: %v", cols)
	}
}

func TestApplyDeclaration_RefusesInvalidClusteringAndProperties(t *testing.T) {
	store, _ := newStore(t)
	tbl, _, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), nil, delta.ColumnMappingNone,
		map[string]string{delta.PropNumIndexedCols: "3"})
	if err != nil {
		t.Fatal(err)
	}
	pstore, _ := newStore(t)
	ptbl, _, err := tabletest.Create(t.Context(), pstore, tabletest.AllTypesSchema(), []string{"part"}, delta.ColumnMappingNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name string
		tbl  *delta.Table
		d    table.Declaration
		want string
	}{
		{"too many columns", tbl, table.Declaration{SetClusterBy: true, ClusterBy: []string{"id", "b", "i8", "i16", "i32"}}, "1 to 4"},
		{"ineligible type", tbl, table.Declaration{SetClusterBy: true, ClusterBy: []string{"b"}}, "must be numeric"},
		{"nested non-struct", tbl, table.Declaration{SetClusterBy: true, ClusterBy: []string{"arr"}}, "must be numeric"},
		{"no statistics", tbl, table.Declaration{SetClusterBy: true, ClusterBy: []string{"s"}}, "no statistics"},
		{"unknown column", tbl, table.Declaration{SetClusterBy: true, ClusterBy: []string{"nope"}}, "nope"},
		{"partitioned", ptbl, table.Declaration{SetClusterBy: true, ClusterBy: []string{"id"}}, "partitioned table cannot be clustered"},
		{"protocol property", tbl, table.Declaration{Properties: map[string]string{delta.PropColumnMappingMode: "name"}}, "cannot be declared"},
		{"malformed value", tbl, table.Declaration{Properties: map[string]string{delta.PropCheckpointInterval: "often"}}, "checkpointInterval"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := table.ApplyDeclaration(t.Context(), c.tbl, c.d)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Errorf("err = %v, want %q", err, c.want)
			}
		})
	}
	snap, _ := tbl.Latest(t.Context())
	if snap.Version() != 0 {
		t.Errorf("refused declarations committed: version %d", snap.Version())
	}
}

func TestInspect_CountsSmallFilesAgainstHalfTheTargetSize(t *testing.T) {
	store, _ := newStore(t)
	tbl, _, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), nil, delta.ColumnMappingNone,
		map[string]string{delta.PropTargetFileSize: "40kb"})
	if err != nil {
		t.Fatal(err)
	}
	snap := appendBatches(t, tbl, tabletest.AllTypesRows(10), tabletest.AllTypesRows(2000))
	facts, err := table.Inspect(snap)
	if err != nil {
		t.Fatal(err)
	}
	if facts.SmallFileThreshold != 20<<10 || facts.NumFiles < 2 || facts.NumSmallFiles < 1 || facts.NumSmallFiles == facts.NumFiles {
		t.Errorf("facts: %d files, %d small below %d", facts.NumFiles, facts.NumSmallFiles, facts.SmallFileThreshold)
	}
	if !facts.RowsKnown || facts.Rows != 2010 {
		t.Errorf("rows %d (known %v), want 2010", facts.Rows, facts.RowsKnown)
	}
	var inHist int64
	for _, b := range facts.Histogram {
		inHist += b.Files
	}
	if inHist != facts.NumFiles || facts.Histogram[0].Files != facts.NumFiles {
		t.Errorf("histogram %+v", facts.Histogram)
	}
	r := facts.Result()
	if r.NumFiles != facts.NumFiles || r.MinWriterVersion != 2 || r.SmallFileThreshold != 20<<10 {
		t.Errorf("result table %+v", r)
	}
}

func TestClassifyClustering_NeedsProviderZCubeAndMatchingColumns(t *testing.T) {
	zcube := func(by string) map[string]string {
		return map[string]string{table.TagZCubeID: "z1", table.TagZCubeZOrderBy: by}
	}
	cases := []struct {
		name string
		f    delta.AddFile
		want table.ClusteringClass
	}{
		{"appended, no provider", delta.AddFile{}, table.Unclustered},
		// Ingest sets the provider on appends to a clustered table; without a ZCube they still need clustering.
		{"provider without a ZCube", delta.AddFile{ClusteringProvider: "liquid"}, table.Unclustered},
		{"ZCube by the columns", delta.AddFile{ClusteringProvider: "liquid", Tags: zcube(`["a","b"]`)}, table.Clustered},
		{"ZCube by other columns", delta.AddFile{ClusteringProvider: "liquid", Tags: zcube(`["a"]`)}, table.ClusteredByOtherColumns},
		{"ZCube columns unreadable", delta.AddFile{ClusteringProvider: "liquid", Tags: zcube(`a,b`)}, table.Unclustered},
		{"ZCUBE_ZORDER_BY without ZCUBE_ID", delta.AddFile{ClusteringProvider: "liquid", Tags: map[string]string{table.TagZCubeZOrderBy: `["a","b"]`}}, table.Unclustered},
		// Another provider's files are never rewritten, so they never count as unclustered either.
		{"another provider", delta.AddFile{ClusteringProvider: "acme", Tags: zcube(`["x"]`)}, table.ForeignClustered},
	}
	for _, c := range cases {
		got := table.ClassifyClustering(&c.f, []string{"a", "B"})
		if got != c.want {
			t.Errorf("%s: %v, want %v", c.name, got, c.want)
		}
		if want := c.want == table.Unclustered || c.want == table.ClusteredByOtherColumns; got.NeedsClustering() != want {
			t.Errorf("%s: NeedsClustering %v, want %v", c.name, got.NeedsClustering(), want)
		}
	}
}
