package ingest

import (
	"context"
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

func TestRun_RowTrackingAndInCommitTimestampsThroughTheTransaction(t *testing.T) {
	fx := newFixture(t)
	schema := &types.StructType{Fields: []*types.StructField{longCol("id")}}
	if _, _, err := tabletest.Create(context.Background(), fx.tbl.Store(), schema, nil, delta.ColumnMappingNone,
		map[string]string{delta.PropEnableRowTracking: "true", delta.PropEnableICT: "true"}); err != nil {
		t.Fatal(err)
	}
	fx.put("a.json", `{"id":1}`+"\n"+`{"id":2}`)
	fx.put("b.json", `{"id":3}`)
	o := fx.options(format.JSON, nil, "")
	o.AvailableNow, o.MaxFilesPerTrigger = true, 1
	fx.run(o)
	snap := fx.snapshot()
	var bases []int64
	for _, f := range snap.Files() {
		if f.BaseRowID == nil || f.DefaultRowCommitVersion == nil {
			t.Fatalf("file %s has no row-tracking fields", f.Path)
		}
		bases = append(bases, *f.BaseRowID)
	}
	slices.Sort(bases)
	if !slices.Equal(bases, []int64{0, 2}) {
		t.Fatalf("base row ids %v, want [0 2]", bases)
	}
	if _, ok := snap.InCommitTimestamp(); !ok {
		t.Fatalf("the ingest commit has no in-commit timestamp")
	}
}

func TestRun_NewTableGetsThePartitionAndClusteringColumns(t *testing.T) {
	for _, tc := range []struct {
		name        string
		part, clust []string
	}{{"partitioned", []string{"DAY"}, nil}, {"clustered", nil, []string{"id"}}} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			fx.put("a.csv", "id,day\n1,2024-01-01\n2,2024-01-02\n")
			o := fx.options(format.CSV, map[string]string{"header": "true"}, "")
			o.AvailableNow, o.PartitionBy, o.ClusterBy = true, tc.part, tc.clust
			rep := fx.run(o)
			if !rep.Batches[0].Created {
				t.Fatalf("the batch did not report creating the table")
			}
			snap := fx.snapshot()
			if tc.part != nil {
				if got := snap.Metadata().PartitionColumns; !slices.Equal(got, []string{"day"}) || len(rep.Batches[0].FilesWritten) != 2 {
					t.Fatalf("partition columns %v, files written %v", got, rep.Batches[0].FilesWritten)
				}
			}
			if tc.clust != nil {
				cols, ok, err := snap.ClusteringColumnsLogical()
				if err != nil || !ok || len(cols) != 1 || cols[0][0] != "id" {
					t.Fatalf("clustering columns %v %v %v", cols, ok, err)
				}
				for _, f := range snap.Files() {
					if f.ClusteringProvider != "liquid" {
						t.Fatalf("file %s has clustering provider %q", f.Path, f.ClusteringProvider)
					}
				}
			}
			if rows := fx.rows("id", "day"); !slices.Equal(rows, []string{"id=1 day=2024-01-01", "id=2 day=2024-01-02"}) {
				t.Fatalf("rows %v", rows)
			}
		})
	}
}

func TestRun_RefusesTablesItCannotAppendToExactlyOnce(t *testing.T) {
	for _, tc := range []struct {
		name  string
		props map[string]string
		want  string
	}{
		{"check constraints", map[string]string{"delta.constraints.positive": "id > 0"}, "CHECK constraints"},
		{"txn retention", map[string]string{PropTxnRetention: "interval 7 days"}, PropTxnRetention},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			p := delta.Protocol{MinReaderVersion: 1, MinWriterVersion: 3}
			if _, err := fx.tbl.Create(context.Background(), delta.CreateOptions{Schema: &types.StructType{Fields: []*types.StructField{longCol("id")}},
				Configuration: tc.props, Protocol: &p}); err != nil {
				t.Fatal(err)
			}
			fx.put("a.json", `{"id":1}`)
			o := fx.options(format.JSON, nil, "")
			_, err := Run(context.Background(), fx.tbl, o)
			var re *result.Error
			if !errors.As(err, &re) || re.Outcome != result.Refused || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("err = %v, want a refusal naming %s", err, tc.want)
			}
			if fx.snapshot().Version() != 0 {
				t.Fatalf("a refused table got a commit")
			}
		})
	}
}
