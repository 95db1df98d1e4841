package controllers

import (
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func TestInspectArgs_MapsTypedPropertiesToDeltaKeys(t *testing.T) {
	table := s3Table("t").withProperties().clusterBy("a", "b").obj()
	table.Spec.Properties.AutoCompact = ptr.To(false)
	table.Spec.Properties.LogRetention = &metav1.Duration{Duration: 720 * time.Hour}
	table.Spec.Properties.DataSkippingNumIndexedCols = ptr.To[int32](-1)
	got, err := inspectArgs(table)
	if err != nil {
		t.Fatal(err)
	}
	want := []string{"inspect", "s3://lakehouse/sales/t",
		"--set-property", "delta.autoOptimize.optimizeWrite=true",
		"--set-property", "delta.autoOptimize.autoCompact=false",
		"--set-property", "delta.targetFileSize=268435456",
		"--set-property", "delta.deletedFileRetentionDuration=interval 604800 seconds",
		"--set-property", "delta.logRetentionDuration=interval 2592000 seconds",
		"--set-property", "delta.checkpointInterval=10",
		"--set-property", "delta.dataSkippingNumIndexedCols=-1",
		"--set-property", "delta.appendOnly=false",
		"--set-property", "delta.enableDeletionVectors=true",
		"--cluster-by", "a,b", "--quality"}
	if !slices.Equal(got, want) {
		t.Errorf("inspectArgs =\n%q\nwant\n%q", got, want)
	}
	if got, _ := inspectArgs(s3Table("t").obj()); !slices.Equal(got, []string{"inspect", "s3://lakehouse/sales/t", "--quality"}) {
		t.Errorf("bare table: %q", got)
	}
	if _, err := inspectArgs(s3Table("t").clusterBy("a,b").obj()); err == nil || !strings.Contains(err.Error(), "comma") {
		t.Errorf("a column with a comma must be refused, got %v", err)
	}
}

func TestMaintainArgs_FollowsEnabledStepsInOrder(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	tests := []struct {
		name    string
		spec    deltav1.OptimizePolicySpec
		table   *deltav1.DeltaTable
		want    string
		wantOps []deltav1.Operation
	}{
		{
			name:    "defaults on an unclustered table: compaction and checkpoint with log cleanup",
			table:   s3Table("t").obj(),
			want:    "maintain s3://lakehouse/sales/t --optimize --checkpoint --log-cleanup",
			wantOps: []deltav1.Operation{deltav1.OperationOptimize, deltav1.OperationCheckpoint},
		},
		{
			name: "everything, on a clustered table",
			spec: deltav1.OptimizePolicySpec{
				Compaction: &deltav1.CompactionSpec{TargetFileSize: q("512Mi"), MinFileSize: q("64Mi"),
					MaxDeletedRowsRatio: ptr.To(0.05), Where: "date >= '2024-01-01'"},
				Clustering: &deltav1.ClusteringSpec{Mode: deltav1.ClusteringFull, MaxQualityGap: ptr.To(0.05), AutoRecluster: &deltav1.AutoReclusterSpec{
					MinOffendingFiles: ptr.To[int32](4), MinOverlapThreshold: ptr.To(0.75)}},
				Vacuum:     &deltav1.VacuumSpec{Retention: &metav1.Duration{Duration: 168 * time.Hour}, AllowShortRetention: true, Mode: deltav1.VacuumLite, DryRun: true},
				Checkpoint: &deltav1.CheckpointSpec{LogCleanup: ptr.To(false)},
			},
			table: s3Table("t").clusterBy("a").obj(),
			want: "maintain s3://lakehouse/sales/t --optimize --target-file-size 536870912 --min-file-size 67108864 " +
				"--max-deleted-rows-ratio 0.05 --where date >= '2024-01-01' --cluster --full --auto-recluster=true " +
				"--min-offending-files 4 --min-overlap-threshold 0.75 --vacuum --retention 168h0m0s --allow-short-retention " +
				"--vacuum-mode lite --dry-run --checkpoint",
			wantOps: []deltav1.Operation{deltav1.OperationOptimize, deltav1.OperationCluster, deltav1.OperationVacuum, deltav1.OperationCheckpoint},
		},
		{
			name: "Z-order on an unclustered table even with compaction off; auto-recluster off",
			spec: deltav1.OptimizePolicySpec{
				Compaction: &deltav1.CompactionSpec{Enabled: ptr.To(false)},
				Clustering: &deltav1.ClusteringSpec{ZOrderBy: []string{"x", "y"}, AutoRecluster: &deltav1.AutoReclusterSpec{Enabled: ptr.To(false)}},
				Checkpoint: &deltav1.CheckpointSpec{Enabled: ptr.To(false)},
			},
			table:   s3Table("t").obj(),
			want:    "maintain s3://lakehouse/sales/t --optimize --zorder-by x,y",
			wantOps: []deltav1.Operation{deltav1.OperationOptimize},
		},
		{
			name: "clustering by the table's inspected columns, a quality bound, auto-recluster off",
			spec: deltav1.OptimizePolicySpec{
				Compaction: &deltav1.CompactionSpec{Enabled: ptr.To(false)},
				Clustering: &deltav1.ClusteringSpec{MaxQualityGap: ptr.To(0.1),
					AutoRecluster: &deltav1.AutoReclusterSpec{Enabled: ptr.To(false), MinOffendingFiles: ptr.To[int32](9)}},
				Checkpoint: &deltav1.CheckpointSpec{Enabled: ptr.To(false)},
			},
			table: func() *deltav1.DeltaTable {
				t := s3Table("t").obj()
				t.Status.ClusteringColumns = []string{"c"}
				return t
			}(),
			want:    "maintain s3://lakehouse/sales/t --cluster --max-quality-gap 0.1 --auto-recluster=false",
			wantOps: []deltav1.Operation{deltav1.OperationCluster},
		},
		{
			name: "nothing enabled",
			spec: deltav1.OptimizePolicySpec{
				Compaction: &deltav1.CompactionSpec{Enabled: ptr.To(false)},
				Checkpoint: &deltav1.CheckpointSpec{Enabled: ptr.To(false)},
			},
			table: s3Table("t").obj(),
			want:  "maintain s3://lakehouse/sales/t",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			p := &deltav1.OptimizePolicy{Spec: tc.spec}
			args, ops, err := maintainArgs(p, tc.table)
			if err != nil {
				t.Fatal(err)
			}
			if got := strings.Join(args, " "); got != tc.want {
				t.Errorf("args =\n%s\nwant\n%s", got, tc.want)
			}
			if !slices.Equal(ops, tc.wantOps) {
				t.Errorf("ops = %v, want %v", ops, tc.wantOps)
			}
		})
	}
}
