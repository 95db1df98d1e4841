//go:build e2e

package e2e

// Scale-out (issue 16): a policy with parallelism 3 spreads one compaction, and one clustering run, of an S3
// table over the three pods of an Indexed Job at 0.5 CPU each. The first pod of index 1 is killed and the
// Job retries that index, which redoes exactly its share; index 0 makes the run's one commit, and then every
// index vacuums its part of the table (key ranges split by the pinned version's file names) and index 0
// sums the parts into the run's status. The host then reads the table: every row is there, exactly one
// commit was made, every index vacuumed, and the bucket holds only live files (the shares' vacuums removed
// the rewritten inputs and whatever the killed pod wrote).

import (
	"context"
	"encoding/json"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// halfCPUTemplate runs every index at 0.5 CPU: three of them fit the single node next to the manager.
func halfCPUTemplate() *deltav1.JobTemplate {
	t := localImageJobTemplate()
	t.Resources = corev1.ResourceRequirements{
		Requests: corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("256Mi")},
		Limits:   corev1.ResourceList{corev1.ResourceCPU: resource.MustParse("500m"), corev1.ResourceMemory: resource.MustParse("1Gi")},
	}
	t.BackoffLimit = ptr.To[int32](2)
	return t
}

func TestMaintenance_ScaleOutCompactionSurvivesAKilledIndexAndCommitsOnce(t *testing.T) {
	requireCommands(t, []string{"demo-data"}, []string{"worker", "maintain"})
	ns := newNamespace(t, "scaleout")
	// Large enough that each share takes several seconds at 0.5 CPU: on a quiet machine a share of a
	// 13 MiB table (8,000 rows a file) could finish between the kill's look at the pod and the kill,
	// and the Job then counted the pod as succeeded, not as a failed index to retry.
	const files, rowsPerFile = 120, 40000
	prefix := "orders-" + randomSuffix(t)
	location := fmt.Sprintf("s3://%s/%s", cfg.s3.bucket, prefix)
	writeDemoTable(t, location, files, rowsPerFile)

	createS3Secret(t, ns, "orders-s3")
	table := s3DeltaTable(ns, "orders", location, "orders-s3")
	if err := k8sClient.Create(context.Background(), table); err != nil {
		t.Fatalf("creating DeltaTable: %v", err)
	}
	before := waitForTable(t, table, 4*time.Minute, "the first inspection",
		func(st deltav1.DeltaTableStatus) bool {
			return isReady(st) && st.NumFiles == files && st.Version != nil
		})

	policy := runNowPolicy(ns, "spread-orders", "orders", "1")
	policy.Spec.Parallelism = ptr.To[int32](3)
	// 8 MiB bins: the unpartitioned table (about 66 MiB) becomes several bins to share out.
	target := resource.MustParse("8Mi")
	policy.Spec.Compaction = &deltav1.CompactionSpec{TargetFileSize: &target}
	policy.Spec.JobTemplate = halfCPUTemplate()
	policy.Spec.Vacuum = &deltav1.VacuumSpec{Enabled: ptr.To(true), Retention: &metav1.Duration{}, AllowShortRetention: true}
	if err := k8sClient.Create(context.Background(), policy); err != nil {
		t.Fatalf("creating OptimizePolicy: %v", err)
	}
	job := waitIndexedJob(t, ns, "spread-orders")
	killed := killFirstPodOfIndex(t, ns, job.Name, 1)
	t.Logf("killed %s, the first pod of index 1", killed)

	run := waitForRun(t, table, deltav1.OperationOptimize, 8*time.Minute)
	assertJobSucceeded(t, ns, run.JobName)
	var final batchv1.Job
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: run.JobName}, &final); err != nil {
		t.Fatal(err)
	}
	sh := run.Shares
	t.Logf("run %s: %s; shares %+v; Job status failed=%d completedIndexes=%q", run.JobName, run.Message, sh, final.Status.Failed, final.Status.CompletedIndexes)
	if sh == nil || sh.Parallelism != 3 || sh.AtVersion != *before.Version || sh.Committed != "0,1,2" || sh.Completed != "0-2" {
		t.Fatalf("run shares %+v: want all three shares committed, planned from version %d", sh, *before.Version)
	}
	if final.Status.Failed < 1 || sh.Retries < 1 {
		t.Fatalf("the Job counts %d failed pods (status %d): the killed index was not retried", final.Status.Failed, sh.Retries)
	}

	// The host: exactly one commit after the pinned version, the OPTIMIZE of this run; every row; only live
	// files left (the inputs and anything the killed pod wrote are gone).
	_, removed, added := assertOneScaleOutCommit(t, prefix, *before.Version, run.JobName)
	if removed < files-3 || added == 0 || added >= removed/3 {
		t.Errorf("the commit removed %d files and added %d, want (nearly) all %d compacted into a few", removed, added, files)
	}
	assertEveryIndexVacuumed(t, sh, removed)
	assertLiveFilesOnly(t, prefix, files*rowsPerFile)
}

func TestMaintenance_ScaleOutClusteringCommitsThreeZCubesOnce(t *testing.T) {
	requireCommands(t, []string{"demo-data"}, []string{"worker", "maintain"})
	ns := newNamespace(t, "scaleout-cluster")
	const files, rowsPerFile = 24, 10000
	prefix := "events-" + randomSuffix(t)
	location := fmt.Sprintf("s3://%s/%s", cfg.s3.bucket, prefix)
	writeDemoTable(t, location, files, rowsPerFile)

	createS3Secret(t, ns, "events-s3")
	table := s3DeltaTable(ns, "events", location, "events-s3")
	table.Spec.ClusterBy = []string{"customer_id", "order_ts"}
	target := resource.MustParse("1Mi")
	table.Spec.Properties = &deltav1.TableProperties{TargetFileSize: &target}
	if err := k8sClient.Create(context.Background(), table); err != nil {
		t.Fatalf("creating DeltaTable: %v", err)
	}
	before := waitForTable(t, table, 4*time.Minute, "the clustering columns committed",
		func(st deltav1.DeltaTableStatus) bool {
			return isReady(st) && len(st.ClusteringColumns) == 2 && st.Version != nil
		})

	policy := runNowPolicy(ns, "spread-events", "events", "1")
	policy.Spec.Parallelism = ptr.To[int32](3)
	policy.Spec.JobTemplate = halfCPUTemplate()
	policy.Spec.Clustering = &deltav1.ClusteringSpec{Mode: deltav1.ClusteringFull}
	policy.Spec.Vacuum = &deltav1.VacuumSpec{Enabled: ptr.To(true), Retention: &metav1.Duration{}, AllowShortRetention: true}
	if err := k8sClient.Create(context.Background(), policy); err != nil {
		t.Fatalf("creating OptimizePolicy: %v", err)
	}
	run := waitForRun(t, table, deltav1.OperationCluster, 8*time.Minute)
	assertJobSucceeded(t, ns, run.JobName)
	if sh := run.Shares; sh == nil || sh.Committed != "0,1,2" || sh.AtVersion != *before.Version {
		t.Fatalf("run shares %+v, want three committed shares planned from version %d", sh, *before.Version)
	}
	snap, removed, _ := assertOneScaleOutCommit(t, prefix, *before.Version, run.JobName)
	if removed != files {
		t.Errorf("the commit reclustered %d files, want all %d (FULL)", removed, files)
	}
	assertEveryIndexVacuumed(t, run.Shares, removed)
	cubes := map[string]bool{}
	for _, f := range snap.Files() {
		cubes[f.Tags["ZCUBE_ID"]] = true
	}
	if len(cubes) != 3 || cubes[""] {
		t.Errorf("the clustered files belong to ZCubes %v, want one per share", cubes)
	}
	assertLiveFilesOnly(t, prefix, files*rowsPerFile)
}

// assertEveryIndexVacuumed checks the run's status: all three indexes vacuumed their part of the table after
// the commit, and together deleted at least the superseded inputs (and whatever killed pods wrote).
func assertEveryIndexVacuumed(t *testing.T, sh *deltav1.ShareProgress, superseded int) {
	t.Helper()
	if sh.Vacuumed != "0,1,2" || sh.VacuumedFiles < int64(superseded) {
		t.Errorf("the run's vacuum: indexes %q deleted %d files; want all three indexes and at least the %d superseded inputs",
			sh.Vacuumed, sh.VacuumedFiles, superseded)
	}
}

// waitIndexedJob waits for the policy's Indexed Job and checks its shape.
func waitIndexedJob(t *testing.T, ns, policy string) *batchv1.Job {
	t.Helper()
	var job batchv1.Job
	waitFor(t, 3*time.Minute, "the policy's Indexed Job", func() (bool, string, error) {
		var list batchv1.JobList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{deltav1.LabelPolicy: policy}); err != nil {
			return false, "", err
		}
		if len(list.Items) == 0 {
			return false, "no Job yet", nil
		}
		job = list.Items[0]
		return true, job.Name, nil
	})
	if job.Spec.CompletionMode == nil || *job.Spec.CompletionMode != batchv1.IndexedCompletion || ptr.Deref(job.Spec.Parallelism, 0) != 3 {
		t.Fatalf("Job %s: completionMode %v, parallelism %v; want an Indexed Job of 3", job.Name, job.Spec.CompletionMode, job.Spec.Parallelism)
	}
	return &job
}

// killFirstPodOfIndex deletes, at once and without grace, the first pod of one index of a Job as soon as
// its worker container runs: the attempt dies before it can finish its share, and the Job counts it failed
// (a pod deleted before it started is replaced without counting as a failure).
func killFirstPodOfIndex(t *testing.T, ns, job string, index int) string {
	t.Helper()
	deadline := time.Now().Add(3 * time.Minute)
	for time.Now().Before(deadline) {
		var pods corev1.PodList
		if err := k8sClient.List(context.Background(), &pods, client.InNamespace(ns),
			client.MatchingLabels{"job-name": job, "batch.kubernetes.io/job-completion-index": fmt.Sprint(index)}); err != nil {
			t.Fatal(err)
		}
		for _, p := range pods.Items {
			for _, cs := range p.Status.ContainerStatuses {
				if cs.State.Running != nil {
					kubectl(t, "-n", ns, "delete", "pod", p.Name, "--grace-period=0", "--force", "--wait=false")
					return p.Name
				}
				if cs.State.Terminated != nil {
					t.Fatalf("pod %s of index %d finished (%s) before it could be killed: make the table larger", p.Name, index, cs.State.Terminated.Reason)
				}
			}
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("no running pod of index %d of %s within 3 minutes", index, job)
	return ""
}

// assertOneScaleOutCommit reads the table from the host: the latest version is the only one after the
// pinned version, and it is the OPTIMIZE of the run (commitInfo names it). It returns the snapshot and the
// commit's removes and adds.
func assertOneScaleOutCommit(t *testing.T, prefix string, pinned int64, run string) (*delta.Snapshot, int, int) {
	t.Helper()
	ctx := context.Background()
	st, snap := hostTable(t, prefix)
	if int64(snap.Version()) != pinned+1 {
		t.Fatalf("the table is at version %d after a run pinned at %d: want exactly one commit", snap.Version(), pinned)
	}
	data, err := st.Get(ctx, delta.CommitKey(snap.Version()))
	if err != nil {
		t.Fatal(err)
	}
	var ci *delta.CommitInfo
	var removes, adds int
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var a struct {
			CommitInfo *delta.CommitInfo `json:"commitInfo"`
			Add        *delta.AddFile    `json:"add"`
			Remove     *delta.RemoveFile `json:"remove"`
		}
		if err := json.Unmarshal([]byte(line), &a); err != nil {
			t.Fatalf("commit %d: %v", snap.Version(), err)
		}
		switch {
		case a.CommitInfo != nil:
			ci = a.CommitInfo
		case a.Add != nil:
			adds++
		case a.Remove != nil:
			removes++
		}
	}
	if ci == nil || ci.Operation != "OPTIMIZE" || ci.OperationParameters["scaleOutRun"] != run || ci.OperationParameters["scaleOutShares"] != "3" {
		t.Fatalf("commit %d is %+v, want the OPTIMIZE of run %s over 3 shares", snap.Version(), ci, run)
	}
	return snap, removes, adds
}
