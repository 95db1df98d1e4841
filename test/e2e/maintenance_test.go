//go:build e2e

package e2e

// Phase B: the product scenario. A Delta table with many small files sits in the S3 test server's bucket; a
// DeltaTable points the operator at it and a run-now OptimizePolicy asks for compaction. The operator's own
// worker Jobs inspect and compact it, and kubectl shows the result.
//
// Contract with the rest of the project (this test fails with a clear message until it exists):
//   - `deltakeeper demo-data s3://bucket/prefix --files N --rows-per-file R` writes a Delta table of N small
//     files on the host, configured by AWS_ENDPOINT_URL_S3, AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY,
//     AWS_REGION and DELTAKEEPER_S3_PATH_STYLE=true;
//   - `deltakeeper worker inspect` and `deltakeeper worker maintain` exist, and the manager runs them as Jobs
//     that report into DeltaTable status (numFiles, conditions, recentRuns) and OptimizePolicy status.

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

const (
	// runNowAnnotation asks an OptimizePolicy for one immediate run; a new value asks again.
	runNowAnnotation = "deltakeeper.io/run-now"
	demoFiles        = 60
	demoRowsPerFile  = 1000
)

func TestMaintenance_RunNowPolicyCompactsSmallFilesOfAnS3Table(t *testing.T) {
	requireCommands(t, []string{"demo-data"}, []string{"worker", "inspect"}, []string{"worker", "maintain"})
	ns := newNamespace(t, "maintenance")

	// 1. A table of many small files in the bucket, written from the host.
	location := fmt.Sprintf("s3://%s/orders-%s", cfg.s3.bucket, randomSuffix(t))
	writeDemoTable(t, location, demoFiles, demoRowsPerFile)

	// 2. The operator is told about it: keys in a Secret, the DeltaTable pointing at the host's S3 server.
	createS3Secret(t, ns, "orders-s3")
	table := s3DeltaTable(ns, "orders", location, "orders-s3")
	if err := k8sClient.Create(context.Background(), table); err != nil {
		t.Fatalf("creating DeltaTable: %v", err)
	}
	before := waitForTable(t, table, 4*time.Minute, "the first inspection to report the table",
		func(st deltav1.DeltaTableStatus) bool { return isReady(st) && st.NumFiles > 0 })
	if before.NumFiles != demoFiles {
		t.Fatalf("inspected numFiles = %d, want the %d files demo-data wrote", before.NumFiles, demoFiles)
	}

	// 3. A policy asks for compaction now, whatever the schedule.
	policy := runNowPolicy(ns, "compact-orders", "orders", "1")
	if err := k8sClient.Create(context.Background(), policy); err != nil {
		t.Fatalf("creating OptimizePolicy: %v", err)
	}
	run := waitForRun(t, table, deltav1.OperationOptimize, 6*time.Minute)

	// 4. A real worker pod did the work, and the table has fewer files for it.
	assertJobSucceeded(t, ns, run.JobName)
	after := waitForTable(t, table, 4*time.Minute, "numFiles to drop below "+fmt.Sprint(before.NumFiles),
		func(st deltav1.DeltaTableStatus) bool {
			return isReady(st) && st.NumFiles > 0 && st.NumFiles < before.NumFiles
		})
	t.Logf("compaction: %d files -> %d files (run %s removed %d, added %d)", before.NumFiles, after.NumFiles,
		run.JobName, run.FilesRemoved, run.FilesAdded)
	if run.FilesRemoved == 0 || run.FilesAdded == 0 || run.FilesAdded >= run.FilesRemoved {
		t.Errorf("run record says %d files removed and %d added, want a compaction (fewer added than removed)",
			run.FilesRemoved, run.FilesAdded)
	}
	var got deltav1.OptimizePolicy
	if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(policy), &got); err != nil {
		t.Fatal(err)
	}
	if got.Status.LastRunNow != "1" {
		t.Errorf("OptimizePolicy status.lastRunNow = %q, want the annotation's value %q", got.Status.LastRunNow, "1")
	}

	// 5. What a person sees.
	list := kubectl(t, "-n", ns, "get", "deltatables,optimizepolicies", "-o", "wide")
	describe := kubectl(t, "-n", ns, "describe", "deltatable", "orders")
	t.Logf("$ kubectl get deltatables,optimizepolicies -o wide\n%s", list)
	t.Logf("$ kubectl describe deltatable orders\n%s", describe)
	for _, want := range []string{"orders", "compact-orders", string(deltav1.RunSucceeded), location} {
		if !strings.Contains(list, want) {
			t.Errorf("kubectl get does not show %q", want)
		}
	}
	for _, want := range []string{location, run.JobName, string(deltav1.OperationOptimize), fmt.Sprint(after.NumFiles)} {
		if !strings.Contains(describe, want) {
			t.Errorf("kubectl describe deltatable does not show %q", want)
		}
	}
}

// requireCommands fails the test, naming what is missing, when the binary under test lacks a command the
// scenario needs: a clear message rather than a confusing timeout later.
func requireCommands(t *testing.T, commands ...[]string) {
	t.Helper()
	var missing []string
	for _, c := range commands {
		out, err := exec.Command(cfg.binary, append(c, "--help")...).CombinedOutput()
		// cobra prints the parent's help for an unknown subcommand of a command group; compare Usage lines.
		if err != nil || !strings.Contains(string(out), "deltakeeper "+strings.Join(c, " ")) {
			missing = append(missing, "deltakeeper "+strings.Join(c, " "))
		}
	}
	if len(missing) > 0 {
		t.Fatalf("%s has no %s yet: this scenario needs the worker commands and the demo-data helper "+
			"(see the contract at the top of maintenance_test.go)", cfg.binary, strings.Join(missing, ", "))
	}
}

// writeDemoTable writes a Delta table of small files at location on the S3 test server, from the host.
func writeDemoTable(t *testing.T, location string, files, rowsPerFile int) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, cfg.binary, "demo-data", location,
		"--files", fmt.Sprint(files), "--rows-per-file", fmt.Sprint(rowsPerFile))
	cmd.Env = append(os.Environ(),
		"AWS_ENDPOINT_URL_S3="+cfg.s3.endpoint,
		"AWS_ACCESS_KEY_ID="+cfg.s3.accessKeyID,
		"AWS_SECRET_ACCESS_KEY="+cfg.s3.secretAccessKey,
		"AWS_REGION="+cfg.s3.region,
		"DELTAKEEPER_S3_PATH_STYLE=true",
	)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("deltakeeper demo-data %s: %v\n%s", location, err, out)
	}
	t.Logf("deltakeeper demo-data %s --files %d --rows-per-file %d:\n%s", location, files, rowsPerFile, out)
}

// s3DeltaTable declares a table on the host's S3 test server, reached by the worker pods over the bridge.
func s3DeltaTable(ns, name, location, secret string) *deltav1.DeltaTable {
	return &deltav1.DeltaTable{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: deltav1.DeltaTableSpec{
			Location: location,
			Storage: &deltav1.StorageSpec{S3: &deltav1.S3Storage{
				Endpoint:       cfg.s3.endpoint,
				Region:         cfg.s3.region,
				ForcePathStyle: true,
				Credentials:    &deltav1.S3Credentials{SecretRef: &deltav1.S3SecretRef{Name: secret}},
			}},
			JobTemplate: localImageJobTemplate(),
		},
	}
}

// runNowPolicy is a schedule-less policy on one table whose run-now annotation asks for a run at once, with a
// trigger any table with small files crosses.
func runNowPolicy(ns, name, table, runNow string) *deltav1.OptimizePolicy {
	return &deltav1.OptimizePolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns, Annotations: map[string]string{runNowAnnotation: runNow}},
		Spec: deltav1.OptimizePolicySpec{
			Targets:     deltav1.PolicyTargets{TableNames: []string{table}},
			Triggers:    &deltav1.Triggers{MinSmallFiles: ptr.To[int32](1)},
			JobTemplate: localImageJobTemplate(),
		},
	}
}

// localImageJobTemplate pins the worker pods to the imported image: there is no registry to pull from.
func localImageJobTemplate() *deltav1.JobTemplate {
	return &deltav1.JobTemplate{ImagePullPolicy: corev1.PullNever}
}

func isReady(st deltav1.DeltaTableStatus) bool {
	return meta.IsStatusConditionTrue(st.Conditions, deltav1.ConditionReady)
}

// waitForTable waits until the DeltaTable's status satisfies ok and returns that status.
func waitForTable(t *testing.T, table *deltav1.DeltaTable, timeout time.Duration, what string,
	ok func(deltav1.DeltaTableStatus) bool) deltav1.DeltaTableStatus {
	t.Helper()
	var dt deltav1.DeltaTable
	waitFor(t, timeout, "DeltaTable "+table.Name+": "+what, func() (bool, string, error) {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(table), &dt); err != nil {
			return false, "", err
		}
		return ok(dt.Status), describeTableStatus(dt.Status), nil
	})
	return dt.Status
}

// waitForRun waits for a Succeeded run of op in the DeltaTable's recentRuns. A run that ends otherwise fails
// the test at once, with its message and its Job's log.
func waitForRun(t *testing.T, table *deltav1.DeltaTable, op deltav1.Operation, timeout time.Duration) deltav1.RunRecord {
	t.Helper()
	var found deltav1.RunRecord
	var dt deltav1.DeltaTable
	waitFor(t, timeout, fmt.Sprintf("a Succeeded %s run on DeltaTable %s", op, table.Name), func() (bool, string, error) {
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(table), &dt); err != nil {
			return false, "", err
		}
		for _, r := range dt.Status.RecentRuns {
			if !slices.Contains(r.Operations, op) {
				continue
			}
			switch r.Result {
			case deltav1.RunSucceeded:
				found = r
				return true, describeRun(r), nil
			case deltav1.RunFailed, deltav1.RunRefused:
				t.Fatalf("the %s run ended %s: %s\nJob log:\n%s", op, r.Result, describeRun(r), jobLogs(t, table.Namespace, r.JobName))
			}
		}
		return false, describeTableStatus(dt.Status), nil
	})
	return found
}

// assertJobSucceeded checks that the run's Job exists and completed: proof that a worker pod did the work.
func assertJobSucceeded(t *testing.T, ns, name string) {
	t.Helper()
	if name == "" {
		t.Fatal("the run record names no Job")
	}
	var job batchv1.Job
	if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: name}, &job); err != nil {
		t.Fatalf("the run's Job %s/%s: %v", ns, name, err)
	}
	complete := false
	for _, c := range job.Status.Conditions {
		complete = complete || (c.Type == batchv1.JobComplete && c.Status == corev1.ConditionTrue)
	}
	if !complete || job.Status.Succeeded < 1 {
		t.Fatalf("Job %s/%s is not complete (succeeded=%d, conditions %+v)", ns, name, job.Status.Succeeded, job.Status.Conditions)
	}
	if len(job.Spec.Template.Spec.Containers) == 0 || job.Spec.Template.Spec.Containers[0].Image != cfg.image {
		t.Errorf("Job %s/%s ran %v, want the worker image %s", ns, name, job.Spec.Template.Spec.Containers, cfg.image)
	}
	t.Logf("worker Job %s/%s succeeded; its log:\n%s", ns, name, jobLogs(t, ns, name))
}

func describeTableStatus(st deltav1.DeltaTableStatus) string {
	ready := meta.FindStatusCondition(st.Conditions, deltav1.ConditionReady)
	s := fmt.Sprintf("numFiles=%d activeJob=%q", st.NumFiles, st.ActiveJob)
	if ready != nil {
		s += fmt.Sprintf(" Ready=%s/%s (%s)", ready.Status, ready.Reason, ready.Message)
	}
	for _, r := range st.RecentRuns {
		s += "; run " + describeRun(r)
	}
	return s
}

func describeRun(r deltav1.RunRecord) string {
	return fmt.Sprintf("%s %v %s %s: %s", r.JobName, r.Operations, r.Result, r.Reason, r.Message)
}
