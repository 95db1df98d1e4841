//go:build e2e

package e2e

// The streaming scenario: CSV and NDJSON files keep arriving under S3 prefixes while two append streams
// feed one table and an upsert stream applies change records with deletes to another (stream_upsert_test.go); the CSV stream's ingest pod is deleted with --grace-period=0 --force in the middle of a
// batch (a batch planned in the stream's checkpoint and not yet marked committed), twice; an OptimizePolicy
// clusters the same table meanwhile. At the end the host reads the table and finds every source row exactly
// once, the backlogs at 0, no partition with 50 or more small files, and kubectl showing the batches.

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// The arrival pattern: bursts of files, so that every ingest Job finds a backlog to chew on.
const (
	streamBursts      = 10 // at least; more while the pods are not yet killed
	maxBursts         = 40
	burstEvery        = 4 * time.Second
	csvFilesPerBurst  = 3
	jsonFilesPerBurst = 2
	csvRowsPerFile    = 20000 // a batch of two such files takes long enough to be caught in the middle
	jsonRowsPerFile   = 1500
	podKills          = 2
)

func TestStream_StreamsSurviveKilledPodsAlongsideClustering(t *testing.T) {
	requireCommands(t, []string{"worker", "ingest"}, []string{"worker", "inspect"}, []string{"worker", "maintain"})
	ctx := context.Background()
	ns := newNamespace(t, "stream")
	suffix := randomSuffix(t)
	tablePrefix, landing := "stream-events-"+suffix, "landing-"+suffix
	location := fmt.Sprintf("s3://%s/%s", cfg.s3.bucket, tablePrefix)
	createS3Secret(t, ns, "lake-s3")
	src := newArrivals(t, landing)
	src.burst(t) // files already there when the streams start (includeExistingFiles)

	tbl := s3DeltaTable(ns, "events", location, "lake-s3")
	if err := k8sClient.Create(ctx, tbl); err != nil {
		t.Fatalf("creating DeltaTable: %v", err)
	}
	template := &deltav1.JobTemplate{ImagePullPolicy: corev1.PullNever, BackoffLimit: ptr.To[int32](4)}
	newFileStream := func(name, format string, options map[string]string) *deltav1.StreamIngest {
		si := &deltav1.StreamIngest{
			ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
			Spec: deltav1.StreamIngestSpec{
				Source: deltav1.IngestSource{Files: &deltav1.FileSource{
					Location: fmt.Sprintf("s3://%s/%s/%s/", cfg.s3.bucket, landing, format), Format: format, Options: options}},
				Target:             "events",
				Trigger:            &deltav1.IngestTrigger{Interval: &metav1.Duration{Duration: 10 * time.Second}},
				MaxFilesPerTrigger: ptr.To[int32](2),
				AutoCompact:        ptr.To(true),
				JobTemplate:        template,
			},
		}
		if err := k8sClient.Create(ctx, si); err != nil {
			t.Fatalf("creating StreamIngest %s: %v", name, err)
		}
		return si
	}
	csvStream := newFileStream("csv-in", "csv", map[string]string{"header": "true"})

	// The upsert stream: change records with deletes into another table, applied by key.
	invPrefix := "stream-inventory-" + suffix
	inv := s3DeltaTable(ns, "inventory", fmt.Sprintf("s3://%s/%s", cfg.s3.bucket, invPrefix), "lake-s3")
	if err := k8sClient.Create(ctx, inv); err != nil {
		t.Fatalf("creating DeltaTable: %v", err)
	}
	chg := newChanges(t, landing+"/changes")
	chg.file(t)
	upsert := &deltav1.StreamIngest{
		ObjectMeta: metav1.ObjectMeta{Name: "inventory-upsert", Namespace: ns},
		Spec: deltav1.StreamIngestSpec{
			Source: deltav1.IngestSource{Files: &deltav1.FileSource{
				Location: fmt.Sprintf("s3://%s/%s/changes/", cfg.s3.bucket, landing), Format: "json"}},
			Target:                "inventory",
			Trigger:               &deltav1.IngestTrigger{Interval: &metav1.Duration{Duration: 10 * time.Second}},
			MaxFilesPerTrigger:    ptr.To[int32](2),
			Mode:                  deltav1.IngestUpsert,
			Keys:                  []string{"sku"},
			DeleteConditionColumn: "deleted",
			OrderBy:               "seq",
			JobTemplate:           template,
		},
	}
	if err := k8sClient.Create(ctx, upsert); err != nil {
		t.Fatalf("creating StreamIngest %s: %v", upsert.Name, err)
	}

	// The first batch creates the table; then the json stream joins, the table declares clustering
	// columns (a spec change: the inspect Job commits them) and a policy clusters it every minute.
	waitForStream(t, csvStream, 4*time.Minute, "its first batch", func(st deltav1.StreamIngestStatus) bool {
		return st.LastBatchID != nil
	})
	jsonStream := newFileStream("json-in", "json", nil)
	writerDone := make(chan time.Time, 1)
	var killsDone atomic.Bool
	go func() {
		for n := 0; n < maxBursts && (n < streamBursts || !killsDone.Load()); n++ {
			time.Sleep(burstEvery)
			src.burst(t)
			chg.file(t)
		}
		writerDone <- time.Now()
	}()
	patch := []byte(`{"spec":{"clusterBy":["id"]}}`)
	if err := k8sClient.Patch(ctx, tbl, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatalf("declaring clustering columns: %v", err)
	}
	// The upserted table is clustered by the same policy: merges and clustering commit side by side.
	waitForStream(t, upsert, 4*time.Minute, "its first batch", func(st deltav1.StreamIngestStatus) bool {
		return st.LastBatchID != nil
	})
	if err := k8sClient.Patch(ctx, inv, client.RawPatch("application/merge-patch+json", []byte(`{"spec":{"clusterBy":["sku"]}}`))); err != nil {
		t.Fatalf("declaring clustering columns: %v", err)
	}
	policy := &deltav1.OptimizePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "cluster-events", Namespace: ns},
		Spec: deltav1.OptimizePolicySpec{
			Targets:     deltav1.PolicyTargets{TableNames: []string{"events", "inventory"}},
			Schedule:    "* * * * *",
			Triggers:    &deltav1.Triggers{MinSmallFiles: ptr.To[int32](1)},
			JobTemplate: localImageJobTemplate(),
		},
	}
	if err := k8sClient.Create(ctx, policy); err != nil {
		t.Fatalf("creating OptimizePolicy: %v", err)
	}

	// Kill the csv stream's pod in the middle of a batch, twice.
	ckpt := fmt.Sprintf("%s/_deltakeeper/streams/%s.%s", tablePrefix, ns, csvStream.Name)
	killed := killMidBatch(t, ns, csvStream.Name, ckpt, podKills, 4*time.Minute)
	killsDone.Store(true)
	t.Logf("deleted ingest pods mid-batch: %v", killed)

	var done time.Time
	select {
	case done = <-writerDone:
	case <-time.After(3 * time.Minute):
		t.Fatal("the file writer did not finish")
	}
	if t.Failed() {
		t.FailNow() // a burst could not be written
	}
	caughtUp := func(st deltav1.StreamIngestStatus) bool {
		stalled := meta.FindStatusCondition(st.Conditions, deltav1.ConditionStalled)
		return len(st.RecentJobs) > 0 && st.RecentJobs[0].StartTime != nil && st.RecentJobs[0].StartTime.After(done) &&
			stalled != nil && stalled.Reason == deltav1.ReasonCaughtUp && st.Backlog != nil && st.Backlog.Files == 0
	}
	for _, si := range []*deltav1.StreamIngest{csvStream, jsonStream, upsert} {
		st := waitForStream(t, si, 5*time.Minute, "caught up after the last file", caughtUp)
		if !meta.IsStatusConditionTrue(st.Conditions, deltav1.ConditionReady) {
			t.Errorf("stream %s caught up but not Ready: %+v", si.Name, st.Conditions)
		}
	}
	run := waitForRun(t, tbl, deltav1.OperationCluster, 4*time.Minute)
	t.Logf("clustering run while streaming: %s", describeRun(run))
	run = waitForRun(t, inv, deltav1.OperationCluster, 4*time.Minute)
	t.Logf("clustering run while upserting: %s", describeRun(run))

	// The host reads the table: every row exactly once, and no partition piled up small files.
	assertRowsExactlyOnce(t, tablePrefix, src.ids)
	chg.assertEqualsModel(t, invPrefix)
	for _, si := range []*deltav1.StreamIngest{csvStream, jsonStream} {
		var got deltav1.StreamIngest
		if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(si), &got); err != nil {
			t.Fatal(err)
		}
		if len(got.Status.RecentBatches) == 0 || got.Status.CommittedVersion == nil {
			t.Errorf("stream %s status shows no batches: %+v", si.Name, got.Status)
		}
	}
	getSI := kubectl(t, "-n", ns, "get", "si", "-o", "wide")
	t.Logf("$ kubectl get si -o wide\n%s", getSI)
	describe := kubectl(t, "-n", ns, "describe", "si", "csv-in")
	t.Logf("$ kubectl describe si csv-in\n%s", describe)
	for _, want := range []string{"BATCH", "BACKLOG", "LAG", "csv-in", "json-in", "inventory-upsert", "Upsert", "CaughtUp"} {
		if !strings.Contains(getSI, want) {
			t.Errorf("kubectl get si does not show %q", want)
		}
	}
	for _, want := range []string{"Recent Batches", "Batch Id", "Committed Version", "BatchesCommitted"} {
		if !strings.Contains(describe, want) {
			t.Errorf("kubectl describe si does not show %q", want)
		}
	}
	dt := waitForTable(t, tbl, time.Minute, "names its streams", func(st deltav1.DeltaTableStatus) bool {
		return strings.Join(st.Streams, ",") == "csv-in,json-in"
	})
	t.Logf("table: %s", describeTableStatus(dt))
	var up deltav1.StreamIngest
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(upsert), &up); err != nil {
		t.Fatal(err)
	}
	if lb := up.Status.LastBatch; lb == nil || lb.Merge == nil || lb.Merge.RowsInserted+lb.Merge.RowsUpdated+lb.Merge.RowsDeleted == 0 {
		t.Errorf("the upsert stream's last batch shows no merge figures: %+v", up.Status.LastBatch)
	}
	t.Logf("$ kubectl describe si inventory-upsert\n%s", kubectl(t, "-n", ns, "describe", "si", "inventory-upsert"))
}

// arrivals writes source files with unique ids and remembers every id.
type arrivals struct {
	store   storage.Store
	landing string
	mu      sync.Mutex
	ids     map[int64]bool
	next    int64
	files   int
}

func newArrivals(t *testing.T, landing string) *arrivals {
	return &arrivals{store: s3Store(t), landing: landing, ids: map[int64]bool{}, next: 1}
}

// burst writes csvFilesPerBurst CSV and jsonFilesPerBurst NDJSON files. Keys sort in arrival order.
func (a *arrivals) burst(t *testing.T) {
	a.mu.Lock()
	defer a.mu.Unlock()
	ctx := context.Background()
	write := func(format string, rows int, render func(*bytes.Buffer, int64)) {
		var buf bytes.Buffer
		if format == "csv" {
			buf.WriteString("id,src,amount\n")
		}
		for range rows {
			render(&buf, a.next)
			a.ids[a.next] = true
			a.next++
		}
		key := fmt.Sprintf("%s/%s/part-%05d.%s", a.landing, format, a.files, format)
		a.files++
		if err := a.store.Put(ctx, key, buf.Bytes()); err != nil {
			t.Errorf("writing %s: %v", key, err)
		}
	}
	for range csvFilesPerBurst {
		write("csv", csvRowsPerFile, func(b *bytes.Buffer, id int64) { fmt.Fprintf(b, "%d,csv,%d\n", id, id%997) })
	}
	for range jsonFilesPerBurst {
		write("json", jsonRowsPerFile, func(b *bytes.Buffer, id int64) {
			line, _ := json.Marshal(map[string]any{"id": id, "src": "json", "amount": id % 997})
			b.Write(append(line, '\n'))
		})
	}
}

// killMidBatch deletes the stream's running ingest pod with --grace-period=0 --force whenever its checkpoint
// holds a planned batch that is not marked committed, until it has done so n times; it returns the pods.
func killMidBatch(t *testing.T, ns, stream, ckptPrefix string, n int, timeout time.Duration) []string {
	t.Helper()
	ctx := context.Background()
	store := s3Store(t)
	ids := func(dir string) map[string]bool {
		out := map[string]bool{}
		for obj, err := range store.List(ctx, ckptPrefix+"/"+dir+"/", "") {
			if err != nil {
				return out
			}
			out[obj.Key[strings.LastIndex(obj.Key, "/")+1:]] = true
		}
		return out
	}
	var killed []string
	deadline := time.Now().Add(timeout)
	for len(killed) < n {
		if time.Now().After(deadline) {
			t.Fatalf("deleted %d ingest pods mid-batch in %s, want %d: %v", len(killed), timeout, n, killed)
		}
		time.Sleep(100 * time.Millisecond)
		// The planned batch first, then the markers: a batch marked between the two listings then shows as
		// marked, never as pending.
		pending := ""
		for off := range ids("offsets") {
			pending = max(pending, off) // the names are zero-padded batch numbers
		}
		if pending == "" || ids("commits")[pending] {
			continue
		}
		// A pod whose worker container is running right now (read from the API server, not a cache).
		var pods corev1.PodList
		if err := k8sClient.List(ctx, &pods, client.InNamespace(ns), client.MatchingLabels{deltav1.LabelStream: stream}); err != nil {
			continue
		}
		running := ""
		for _, p := range pods.Items {
			if p.DeletionTimestamp != nil || containsString(killed, p.Name) {
				continue
			}
			for _, cs := range p.Status.ContainerStatuses {
				if cs.Name == "worker" && cs.State.Running != nil {
					running = p.Name
				}
			}
		}
		if running == "" {
			continue
		}
		kubectl(t, "-n", ns, "delete", "pod", running, "--grace-period=0", "--force")
		t.Logf("deleted pod %s while batch %s was planned and not marked committed", running, strings.TrimLeft(pending, "0"))
		killed = append(killed, running)
	}
	return killed
}

func containsString(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// waitForStream waits until the StreamIngest's status satisfies ok.
func waitForStream(t *testing.T, si *deltav1.StreamIngest, timeout time.Duration, what string,
	ok func(deltav1.StreamIngestStatus) bool) deltav1.StreamIngestStatus {
	t.Helper()
	var got deltav1.StreamIngest
	waitFor(t, timeout, "StreamIngest "+si.Name+": "+what, func() (bool, string, error) {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(si), &got); err != nil {
			return false, "", err
		}
		return ok(got.Status), describeStreamStatus(got.Status), nil
	})
	return got.Status
}

func describeStreamStatus(st deltav1.StreamIngestStatus) string {
	var parts []string
	for _, c := range st.Conditions {
		parts = append(parts, fmt.Sprintf("%s=%s/%s", c.Type, c.Status, c.Reason))
	}
	if st.LastBatchID != nil {
		parts = append(parts, fmt.Sprintf("batch %d", *st.LastBatchID))
	}
	if st.Backlog != nil {
		parts = append(parts, fmt.Sprintf("backlog %d files", st.Backlog.Files))
	}
	parts = append(parts, fmt.Sprintf("jobs %d, failures %d, active %q", st.JobsStarted, st.ConsecutiveFailures, st.ActiveJob))
	return strings.Join(parts, ", ")
}

// assertRowsExactlyOnce reads the table under prefix from the host: every id in want exactly once and no
// other, and fewer than 50 small files (all of this table's files are small) in every partition.
func assertRowsExactlyOnce(t *testing.T, prefix string, want map[int64]bool) {
	t.Helper()
	ctx := context.Background()
	_, snap := hostTable(t, prefix)
	perPartition := map[string]int{}
	for _, f := range snap.Files() {
		perPartition[fmt.Sprint(f.PartitionValues)]++
	}
	for part, n := range perPartition {
		if n >= 50 {
			t.Errorf("partition %s holds %d small files, want fewer than 50 (auto compaction and the policy keep them down)", part, n)
		}
	}
	scan, err := table.NewScan(snap, table.ScanOptions{Columns: []string{"id"}})
	if err != nil {
		t.Fatal(err)
	}
	seen := map[string]int{}
	if _, err := scan.Run(ctx, func(rows []types.Struct) error {
		for _, r := range rows {
			seen[fmt.Sprint(r[0])]++
		}
		return nil
	}); err != nil {
		t.Fatalf("scanning the table from the host: %v", err)
	}
	var dup, missing, extra []string
	for id, n := range seen {
		if n > 1 && len(dup) < 10 {
			dup = append(dup, fmt.Sprintf("%s×%d", id, n))
		}
	}
	for id := range want {
		if seen[fmt.Sprint(id)] == 0 && len(missing) < 10 {
			missing = append(missing, fmt.Sprint(id))
		}
	}
	if len(seen) != len(want) {
		extra = append(extra, fmt.Sprintf("%d distinct ids, want %d", len(seen), len(want)))
	}
	if len(dup)+len(missing)+len(extra) > 0 {
		t.Errorf("rows not exactly once: duplicated %v, missing %v, %v", dup, missing, extra)
	}
	t.Logf("the table holds %d rows, each source row once, in %d files at version %d", len(seen), len(snap.Files()), snap.Version())
}
