//go:build e2e

package e2e

// The clustering scenario: a DeltaTable declares liquid-clustering columns on a table Spark-like writers
// left unclustered; the inspect Job commits them, a run-now policy reclusters the table (FULL) and vacuums
// what the rewrite removed, and status shows the clustering quality before and after. The host then reads
// the table itself: every row is still there and the bucket holds only live data files.

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/delta"
)

func TestMaintenance_ClusteringPolicyReclustersAndVacuumsAnS3Table(t *testing.T) {
	requireCommands(t, []string{"demo-data"}, []string{"worker", "inspect"}, []string{"worker", "maintain"})
	ns := newNamespace(t, "clustering")
	const files, rowsPerFile = 24, 20000
	prefix := "events-" + randomSuffix(t)
	location := fmt.Sprintf("s3://%s/%s", cfg.s3.bucket, prefix)
	writeDemoTable(t, location, files, rowsPerFile)

	// 1. The declaration adds clustering columns; the inspect Job commits them and reports quality.
	createS3Secret(t, ns, "events-s3")
	table := s3DeltaTable(ns, "events", location, "events-s3")
	clusterBy := []string{"customer_id", "order_ts"}
	table.Spec.ClusterBy = clusterBy
	// Small target files, so that the clustered table has several files and quality means something.
	targetSize := resource.MustParse("1Mi")
	table.Spec.Properties = &deltav1.TableProperties{TargetFileSize: &targetSize}
	if err := k8sClient.Create(context.Background(), table); err != nil {
		t.Fatalf("creating DeltaTable: %v", err)
	}
	before := waitForTable(t, table, 4*time.Minute, "the clustering columns to be committed and measured",
		func(st deltav1.DeltaTableStatus) bool {
			return isReady(st) && slices.Equal(st.ClusteringColumns, clusterBy) && len(st.Clustering) == len(clusterBy)
		})
	applied := meta.FindStatusCondition(before.Conditions, deltav1.ConditionPropertiesApplied)
	if applied == nil || applied.Status != metav1.ConditionTrue {
		t.Fatalf("PropertiesApplied = %+v, want True once the clustering columns are committed", applied)
	}
	if before.UnclusteredBytes == 0 {
		t.Errorf("unclusteredBytes = 0 before any clustering run, want the whole table (%d bytes)", before.SizeBytes)
	}

	// 2. A run-now policy reclusters everything and vacuums at once (zero retention, explicitly allowed).
	policy := runNowPolicy(ns, "recluster-events", "events", "1")
	policy.Spec.Clustering = &deltav1.ClusteringSpec{Mode: deltav1.ClusteringFull}
	policy.Spec.Vacuum = &deltav1.VacuumSpec{Enabled: ptr.To(true), Retention: &metav1.Duration{}, AllowShortRetention: true}
	if err := k8sClient.Create(context.Background(), policy); err != nil {
		t.Fatalf("creating OptimizePolicy: %v", err)
	}
	run := waitForRun(t, table, deltav1.OperationCluster, 6*time.Minute)
	assertJobSucceeded(t, ns, run.JobName)
	if !slices.Contains(run.Operations, deltav1.OperationVacuum) {
		t.Errorf("run operations %v, want Cluster and Vacuum", run.Operations)
	}
	after := waitForTable(t, table, 4*time.Minute, "an inspection after the clustering run",
		func(st deltav1.DeltaTableStatus) bool {
			return isReady(st) && st.Version != nil && run.TableVersion != nil && *st.Version >= *run.TableVersion &&
				len(st.Clustering) == len(clusterBy)
		})
	t.Logf("clustering: %d files -> %d files; %s -> %s", before.NumFiles, after.NumFiles,
		describeQuality(before.Clustering), describeQuality(after.Clustering))
	if after.UnclusteredBytes != 0 {
		t.Errorf("unclusteredBytes = %d after a FULL run, want 0", after.UnclusteredBytes)
	}
	if after.NumFiles < 3 || after.NumFiles >= before.NumFiles {
		t.Errorf("%d files after clustering %d files at a 1Mi target, want a few (at least 3, fewer than before)",
			after.NumFiles, before.NumFiles)
	}
	// demo-data writes in order_ts order, so order_ts starts out well clustered and customer_id not at
	// all: the curve trades a little of the first for much of the second.
	if a, b := after.Clustering[0], before.Clustering[0]; a.Column != "customer_id" || a.SkippingEffectiveness < b.SkippingEffectiveness+0.2 {
		t.Errorf("customer_id skipping effectiveness %.3f after clustering, want at least 0.2 above the %.3f before",
			a.SkippingEffectiveness, b.SkippingEffectiveness)
	}
	if mean(after.Clustering) <= mean(before.Clustering) {
		t.Errorf("mean skipping effectiveness %.3f after clustering, not above %.3f before", mean(after.Clustering), mean(before.Clustering))
	}

	// 3. The host reads the table: every row is there, and only live files are left in the bucket.
	assertLiveFilesOnly(t, prefix, files*rowsPerFile)

	describe := kubectl(t, "-n", ns, "describe", "deltatable", "events")
	t.Logf("$ kubectl describe deltatable events\n%s", describe)
	for _, want := range []string{"customer_id", "order_ts", run.JobName, string(deltav1.OperationCluster)} {
		if !strings.Contains(describe, want) {
			t.Errorf("kubectl describe deltatable does not show %q", want)
		}
	}
}

// assertLiveFilesOnly loads the table under prefix from the host and checks its row count, and that every
// data object in the bucket under it is a live file of the latest version (vacuum left nothing behind).
func assertLiveFilesOnly(t *testing.T, prefix string, wantRows int64) {
	t.Helper()
	ctx := context.Background()
	root := s3Store(t)
	_, snap := hostTable(t, prefix)
	var rows int64
	live := map[string]bool{}
	for _, f := range snap.Files() {
		n, ok := delta.NumRecords(f.Stats)
		if !ok {
			t.Fatalf("file %s has no numRecords", f.Path)
		}
		rows += n
		live[prefix+"/"+f.Path] = true
	}
	if rows != wantRows {
		t.Errorf("the table holds %d rows after clustering, want the %d demo-data wrote", rows, wantRows)
	}
	var stray []string
	for obj, err := range root.List(ctx, prefix+"/", "") {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(obj.Key, prefix+"/_delta_log/") || live[obj.Key] {
			continue
		}
		stray = append(stray, obj.Key)
	}
	if len(stray) > 0 {
		t.Errorf("vacuum left %d files that are not live: %v", len(stray), stray)
	}
}

func mean(qs []deltav1.ColumnQuality) float64 {
	var sum float64
	for _, q := range qs {
		sum += q.SkippingEffectiveness
	}
	return sum / float64(len(qs))
}

func describeQuality(qs []deltav1.ColumnQuality) string {
	var parts []string
	for _, q := range qs {
		parts = append(parts, fmt.Sprintf("%s depth %.2f skipping %.3f", q.Column, q.AvgDepth, q.SkippingEffectiveness))
	}
	return strings.Join(parts, ", ")
}
