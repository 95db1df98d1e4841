//go:build e2e

package e2e

// Phase C: tables on Azure and GCS. Azurite (Microsoft's Azure Storage emulator) and fake-gcs-server run on
// the host, bound to the pod bridge like the S3 server, so the host writes a table of small files and the
// worker pods maintain it over the bridge. The Azure table's account key reaches the worker from a Secret;
// a policy reclusters (and so compacts) it and vacuums; the GCS table is compacted. The host then reads
// every row back: each order id exactly once, and nothing but live data files left.

import (
	"context"
	"fmt"
	"net/url"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/internal/testutil/azurite"
	"github.com/deltakeeper/deltakeeper/internal/testutil/gcsserver"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// cloudFiles and cloudRowsPerFile size the cloud tables: enough files for compaction and clustering to
// have work, small enough that the phase stays short.
const cloudFiles, cloudRowsPerFile = 16, 5000

func TestCloud_AzuriteTableWithAKeyFromASecretIsReclusteredAndVacuumed(t *testing.T) {
	requireCommands(t, []string{"demo-data"}, []string{"worker", "inspect"}, []string{"worker", "maintain"})
	ns := newNamespace(t, "azure")
	srv := azurite.StartOn(t, bridgeIP(t))
	prefix := "orders-" + randomSuffix(t)
	location := srv.Location(prefix)
	writeCloudDemoTable(t, location, srv.Env())

	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Name: "azurite-key", Namespace: ns},
		StringData: map[string]string{"AZURE_STORAGE_KEY": srv.Key}}
	if err := k8sClient.Create(context.Background(), secret); err != nil {
		t.Fatalf("creating Secret: %v", err)
	}
	clusterBy := []string{"customer_id", "order_ts"}
	targetSize := resource.MustParse("1Mi")
	dt := &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec: deltav1.DeltaTableSpec{
			Location: location,
			Storage: &deltav1.StorageSpec{Azure: &deltav1.AzureStorage{
				Endpoint:    srv.Endpoint,
				Credentials: deltav1.AzureCredentials{AccountKeySecretRef: &deltav1.SecretKeyRef{Name: "azurite-key"}},
			}},
			ClusterBy:   clusterBy,
			Properties:  &deltav1.TableProperties{TargetFileSize: &targetSize},
			JobTemplate: localImageJobTemplate(),
		},
	}
	if err := k8sClient.Create(context.Background(), dt); err != nil {
		t.Fatalf("creating DeltaTable: %v", err)
	}
	before := waitForTable(t, dt, 4*time.Minute, "the clustering columns to be committed and measured",
		func(st deltav1.DeltaTableStatus) bool {
			return isReady(st) && slices.Equal(st.ClusteringColumns, clusterBy) && len(st.Clustering) == len(clusterBy)
		})
	if before.NumFiles != cloudFiles {
		t.Fatalf("inspected numFiles = %d, want the %d files demo-data wrote", before.NumFiles, cloudFiles)
	}

	policy := runNowPolicy(ns, "recluster-orders", "orders", "1")
	policy.Spec.Clustering = &deltav1.ClusteringSpec{Mode: deltav1.ClusteringFull}
	policy.Spec.Vacuum = &deltav1.VacuumSpec{Enabled: ptr.To(true), Retention: &metav1.Duration{}, AllowShortRetention: true}
	if err := k8sClient.Create(context.Background(), policy); err != nil {
		t.Fatalf("creating OptimizePolicy: %v", err)
	}
	run := waitForRun(t, dt, deltav1.OperationCluster, 6*time.Minute)
	assertJobSucceeded(t, ns, run.JobName)
	after := waitForTable(t, dt, 4*time.Minute, "an inspection after the clustering run",
		func(st deltav1.DeltaTableStatus) bool {
			return isReady(st) && st.Version != nil && run.TableVersion != nil && *st.Version >= *run.TableVersion &&
				len(st.Clustering) == len(clusterBy)
		})
	t.Logf("azure: %d files -> %d files; %s -> %s", before.NumFiles, after.NumFiles,
		describeQuality(before.Clustering), describeQuality(after.Clustering))
	if after.UnclusteredBytes != 0 || after.NumFiles >= before.NumFiles {
		t.Errorf("after a FULL clustering run: %d files (from %d), %d unclustered bytes; want fewer files and none unclustered",
			after.NumFiles, before.NumFiles, after.UnclusteredBytes)
	}

	st, err := storage.Open(context.Background(), location, storage.Config{Azure: srv.AzureConfig()})
	if err != nil {
		t.Fatal(err)
	}
	assertEveryOrderOnceAndLiveFilesOnly(t, st, cloudFiles*cloudRowsPerFile)
}

func TestCloud_GCSEmulatorTableIsCompacted(t *testing.T) {
	requireCommands(t, []string{"demo-data"}, []string{"worker", "inspect"}, []string{"worker", "maintain"})
	ns := newNamespace(t, "gcs")
	srv := gcsserver.StartOn(t, bridgeIP(t))
	location := srv.Location("orders-" + randomSuffix(t))
	writeCloudDemoTable(t, location, srv.Env())

	dt := &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: "orders", Namespace: ns},
		Spec: deltav1.DeltaTableSpec{
			Location:    location,
			Storage:     &deltav1.StorageSpec{GCS: &deltav1.GCSStorage{EmulatorHost: srv.Endpoint}},
			JobTemplate: localImageJobTemplate(),
		},
	}
	if err := k8sClient.Create(context.Background(), dt); err != nil {
		t.Fatalf("creating DeltaTable: %v", err)
	}
	before := waitForTable(t, dt, 4*time.Minute, "the first inspection to report the table",
		func(st deltav1.DeltaTableStatus) bool { return isReady(st) && st.NumFiles > 0 })
	if before.NumFiles != cloudFiles {
		t.Fatalf("inspected numFiles = %d, want the %d files demo-data wrote", before.NumFiles, cloudFiles)
	}
	policy := runNowPolicy(ns, "compact-orders", "orders", "1")
	policy.Spec.Vacuum = &deltav1.VacuumSpec{Enabled: ptr.To(true), Retention: &metav1.Duration{}, AllowShortRetention: true}
	if err := k8sClient.Create(context.Background(), policy); err != nil {
		t.Fatalf("creating OptimizePolicy: %v", err)
	}
	run := waitForRun(t, dt, deltav1.OperationOptimize, 6*time.Minute)
	assertJobSucceeded(t, ns, run.JobName)
	if run.FilesRemoved == 0 || run.FilesAdded >= run.FilesRemoved {
		t.Errorf("run record says %d files removed and %d added, want a compaction", run.FilesRemoved, run.FilesAdded)
	}

	st, err := storage.Open(context.Background(), location, storage.Config{GCS: srv.GCSConfig()})
	if err != nil {
		t.Fatal(err)
	}
	assertEveryOrderOnceAndLiveFilesOnly(t, st, cloudFiles*cloudRowsPerFile)
}

// bridgeIP is the pod bridge's address on the host: where hack/e2e.sh bound the S3 server, and where the
// emulators must listen for pods to reach them.
func bridgeIP(t *testing.T) string {
	t.Helper()
	u, err := url.Parse(cfg.s3.endpoint)
	if err != nil || u.Hostname() == "" {
		t.Fatalf("cannot tell the bridge address from the S3 endpoint %q: %v", cfg.s3.endpoint, err)
	}
	return u.Hostname()
}

// writeCloudDemoTable writes a table of cloudFiles small files at location from the host, with the
// emulator's environment.
func writeCloudDemoTable(t *testing.T, location string, env []string) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cfg.binary, "demo-data", location,
		"--files", fmt.Sprint(cloudFiles), "--rows-per-file", fmt.Sprint(cloudRowsPerFile))
	cmd.Env = append(os.Environ(), env...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deltakeeper demo-data %s: %v\n%s", location, err, out)
	}
}

// assertEveryOrderOnceAndLiveFilesOnly reads the table's rows from the host: demo-data numbers its orders
// 1..n, so every id must come back exactly once; and every data object under the table must be a live
// file of the latest version (vacuum left nothing behind).
func assertEveryOrderOnceAndLiveFilesOnly(t *testing.T, st storage.Store, wantRows int) {
	t.Helper()
	ctx := context.Background()
	snap, err := delta.NewTable(st).Latest(ctx)
	if err != nil {
		t.Fatalf("loading the table from the host: %v", err)
	}
	scan, err := table.NewScan(snap, table.ScanOptions{Columns: []string{"order_id"}})
	if err != nil {
		t.Fatal(err)
	}
	seen := make(map[int64]int, wantRows)
	if _, err := scan.Run(ctx, func(rows []types.Struct) error {
		for _, r := range rows {
			id, ok := r[0].(int64)
			if !ok {
				return fmt.Errorf("order_id %v is a %T, want int64", r[0], r[0])
			}
			seen[id]++
		}
		return nil
	}); err != nil {
		t.Fatalf("reading the table's rows from the host: %v", err)
	}
	// demo-data numbers its orders consecutively: wantRows distinct ids, each once, with no gap.
	var minID, maxID int64 = 1 << 62, -1
	var twice []int64
	for id, n := range seen {
		minID, maxID = min(minID, id), max(maxID, id)
		if n != 1 {
			twice = append(twice, id)
		}
	}
	if len(seen) != wantRows || maxID-minID+1 != int64(wantRows) || len(twice) > 0 {
		t.Errorf("the table holds %d distinct order ids in [%d, %d], %d of them more than once (e.g. %v); want each of %d consecutive ids once",
			len(seen), minID, maxID, len(twice), twice[:min(len(twice), 5)], wantRows)
	}
	live := map[string]bool{}
	for _, f := range snap.Files() {
		live[f.Path] = true
	}
	var stray []string
	for obj, err := range st.List(ctx, "", "") {
		if err != nil {
			t.Fatal(err)
		}
		if strings.HasPrefix(obj.Key, "_delta_log/") || live[obj.Key] {
			continue
		}
		stray = append(stray, obj.Key)
	}
	if len(stray) > 0 {
		t.Errorf("vacuum left %d files that are not live: %v", len(stray), stray)
	}
}
