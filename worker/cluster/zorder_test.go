package cluster_test

import (
	"context"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// partitionedFixture is the event table partitioned by a string column p with values x and y.
func partitionedFixture(t *testing.T) *fixture {
	t.Helper()
	schema := eventSchema()
	schema.Fields = append(schema.Fields, &types.StructField{Name: "p", Type: types.Primitive(types.TypeString), Nullable: true})
	store := localStore(t)
	tbl, _, err := tabletest.Create(context.Background(), store, schema, []string{"p"}, delta.ColumnMappingNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	f := &fixture{t: t, ctx: context.Background(), store: store, tbl: tbl}
	rows := eventRows(16_000, 0, 4)
	for i := range rows {
		rows[i] = append(rows[i], []string{"x", "y"}[i%2])
	}
	f.appendFiles(rows, 8)
	return f
}

func TestZOrder_RewritesTheSelectedPartitionsAlongTheCurve(t *testing.T) {
	where, err := expr.Parse("p = 'x'")
	if err != nil {
		t.Fatal(err)
	}
	cases := []struct {
		name        string
		where       *expr.Expr
		partitions  map[string]bool
		wantRemoved int64
	}{
		{"every partition", nil, map[string]bool{"x": true, "y": true}, 16},
		{"one partition", where, map[string]bool{"x": true}, 8},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := partitionedFixture(t)
			before := f.rows()
			old := f.latest().Files()
			op, err := cluster.ZOrder(f.ctx, f.tbl, f.latest(), []string{"a", "b"}, tc.where, opts(nil), nil)
			if err != nil || op.Outcome != result.Succeeded || op.FilesRemoved != tc.wantRemoved {
				t.Fatalf("zorder: %+v, %v; want %d files rewritten", op, err, tc.wantRemoved)
			}
			sameRows(t, before, f.rows())
			snap := f.latest()
			for _, a := range old {
				v, _ := snap.PartitionValue(a, "p")
				if _, live := snap.File(a.Key()); live == tc.partitions[v.(string)] {
					t.Fatalf("file %s of partition %v: live %v after z-ordering %v", a.Path, v, live, tc.partitions)
				}
			}
			for _, a := range snap.Files() {
				if a.ClusteringProvider != "" {
					t.Fatalf("z-ordered file %s claims clustering provider %q", a.Path, a.ClusteringProvider)
				}
			}
		})
	}
}

func TestZOrder_RefusesWhatDeltaRejects(t *testing.T) {
	cases := []struct {
		name    string
		columns []string
	}{
		{"a partition column", []string{"p"}},
		{"an unknown column", []string{"nope"}},
		{"a column twice", []string{"a", "a"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := partitionedFixture(t)
			op, err := cluster.ZOrder(f.ctx, f.tbl, f.latest(), tc.columns, nil, opts(nil), nil)
			if err == nil || op.Outcome != result.Refused {
				t.Fatalf("zorder by %v: %+v, %v; want a refusal", tc.columns, op, err)
			}
		})
	}
	t.Run("a clustered table", func(t *testing.T) {
		f := newFixture(t, nil)
		f.appendFiles(eventRows(100, 0, 1), 1)
		f.clusterBy("a")
		op, err := cluster.ZOrder(f.ctx, f.tbl, f.latest(), []string{"b"}, nil, opts(nil), nil)
		if err == nil || op.Outcome != result.Refused {
			t.Fatalf("zorder of a clustered table: %+v, %v; want a refusal", op, err)
		}
	})
}
