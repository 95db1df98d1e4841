package cli

import (
	"context"
	"math"
	"path/filepath"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// oneColumnTable creates a table of (a long, s string) whose files hold exactly the given a values,
// one append per file.
func oneColumnTable(t *testing.T, files ...[]int64) (string, *delta.Table) {
	t.Helper()
	ctx := context.Background()
	dir := filepath.Join(t.TempDir(), "t")
	store, err := storage.Open(ctx, dir, storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "a", Type: types.Primitive(types.TypeLong), Nullable: true},
		{Name: "s", Type: types.Primitive(types.TypeString), Nullable: true},
	}}
	tbl, _, err := tabletest.Create(ctx, store, schema, nil, delta.ColumnMappingNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, vals := range files {
		appendValues(t, tbl, vals)
	}
	return dir, tbl
}

func appendValues(t *testing.T, tbl *delta.Table, vals []int64) {
	t.Helper()
	snap, err := tbl.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	rows := make([]types.Struct, len(vals))
	for i, v := range vals {
		rows[i] = types.Struct{v, "x"}
	}
	if _, err := table.Append(context.Background(), snap, rows, table.WriteOptions{DataChange: true}); err != nil {
		t.Fatal(err)
	}
}

func TestAlter_CommitsTheClusteringDefinitionOnce(t *testing.T) {
	dir, tbl := oneColumnTable(t, []int64{1, 2, 3})
	cases := []struct {
		name     string
		args     []string
		code     int
		outcome  result.Outcome
		wantCols [][]string // nil: domain absent
	}{
		{"cluster by a column", []string{"--cluster-by", "a"}, 0, result.Succeeded, [][]string{{"a"}}},
		{"the same again commits nothing", []string{"--cluster-by", "a"}, 3, result.NothingToDo, [][]string{{"a"}}},
		{"an unknown column is refused", []string{"--cluster-by", "nope"}, 2, result.Refused, [][]string{{"a"}}},
		{"five columns are refused", []string{"--cluster-by", "a,s,a,s,a"}, 2, result.Refused, [][]string{{"a"}}},
		{"none removes clustering", []string{"--cluster-by", "none"}, 0, result.Succeeded, [][]string{}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			stdout, stderr, code := execute(t, newAlterCmd, append([]string{dir, "-o", "json"}, tc.args...)...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d: %s %s", code, tc.code, stdout, stderr)
			}
			if r := decodeResult(t, stdout); r.Outcome != tc.outcome {
				t.Fatalf("outcome %s, want %s: %s", r.Outcome, tc.outcome, stdout)
			}
			snap, err := tbl.Latest(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			cols, ok, err := snap.ClusteringColumns()
			if err != nil || !ok || len(cols) != len(tc.wantCols) || (len(cols) > 0 && cols[0][0] != tc.wantCols[0][0]) {
				t.Fatalf("clustering columns %v (%v, %v), want %v", cols, ok, err, tc.wantCols)
			}
			p := snap.Protocol()
			if !p.HasWriterFeature(delta.FeatureClustering) || !p.HasWriterFeature(delta.FeatureDomainMetadata) {
				t.Fatalf("protocol %+v lacks clustering/domainMetadata", p)
			}
		})
	}
}

func TestQuality_MatchesHandComputedValuesOnRealTables(t *testing.T) {
	full := []int64{0, 50, 100}
	cases := []struct {
		name                             string
		build                            func(t *testing.T) string
		args                             []string
		avgDepth, overlap, skip, measure float64
		files                            int64
	}{
		{
			// Fabric's published example: one clustered file, then ten appends that each span the whole
			// range.
			name: "one clustered file plus ten full-range appends",
			build: func(t *testing.T) string {
				dir, tbl := oneColumnTable(t, full)
				if _, _, code := execute(t, newAlterCmd, dir, "--cluster-by", "a"); code != 0 {
					t.Fatalf("alter exited %d", code)
				}
				snap, _ := tbl.Latest(context.Background())
				if op, err := cluster.Optimize(context.Background(), tbl, snap, cluster.DefaultOptions(), nil); err != nil || op.FilesAdded != 1 {
					t.Fatalf("optimize: %+v %v", op, err)
				}
				for range 10 {
					appendValues(t, tbl, full)
				}
				return dir
			},
			avgDepth: 11, overlap: 1, skip: 0, measure: 0, files: 11,
		},
		{
			// Boundaries 0,5,10,15,20,30 give 11 probes with depths 1,1,2,2,2,1,1,0,1,1,1.
			name: "two overlapping files and one apart, on an unclustered table",
			build: func(t *testing.T) string {
				dir, _ := oneColumnTable(t, []int64{0, 10}, []int64{5, 15}, []int64{20, 30})
				return dir
			},
			args:     []string{"--columns", "a"},
			avgDepth: 1.3, overlap: 0.15, skip: 0.85, measure: 5.0 / 6, files: 3,
		},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			dir := tc.build(t)
			stdout, stderr, code := execute(t, newQualityCmd, append([]string{dir, "-o", "json"}, tc.args...)...)
			if code != 0 {
				t.Fatalf("quality exited %d: %s %s", code, stdout, stderr)
			}
			r := decodeResult(t, stdout)
			if r.Table == nil || len(r.Table.Quality) != 1 {
				t.Fatalf("result %s has no quality", stdout)
			}
			q := r.Table.Quality[0]
			near := func(a, b float64) bool { return math.Abs(a-b) < 1e-9 }
			if q.Column != "a" || q.NumFiles != tc.files || !near(q.AvgDepth, tc.avgDepth) || !near(q.OverlapRatio, tc.overlap) ||
				!near(q.SkippingEffectiveness, tc.skip) || !near(q.MeasuredSkipping, tc.measure) {
				t.Fatalf("quality %+v, want files %d avgDepth %v overlap %v skipping %v measured %v",
					q, tc.files, tc.avgDepth, tc.overlap, tc.skip, tc.measure)
			}
		})
	}
}

func TestQuality_RefusesAnUnclusteredTableWithoutColumns(t *testing.T) {
	dir, _ := oneColumnTable(t, []int64{1})
	if _, _, code := execute(t, newQualityCmd, dir); code != 2 {
		t.Fatalf("exit %d, want 2 (refused)", code)
	}
}
