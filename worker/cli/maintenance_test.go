package cli

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// executeAs runs a command in the given mode (Job for `deltakeeper worker …`).
func executeAs(t *testing.T, mode Mode, newCmd func(Mode) *cobra.Command, args ...string) (string, string, int) {
	t.Helper()
	cmd := newCmd(mode)
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(t.Context())
	var ec interface{ ExitCode() int }
	code := 0
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

func opNames(r *result.Result) string {
	var names []string
	for _, op := range r.Ops {
		names = append(names, op.Name+":"+string(op.Outcome))
	}
	return strings.Join(names, " ")
}

func TestOptimizeCommand_CompactsAndReportsWithExitCodes(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 12, 200, "--partitioned")
	rows := canonicalScan(t, loc)

	out, _, code := execute(t, newOptimizeCmd, loc, "--dry-run")
	if code != 0 || !strings.Contains(out, "dry run: would rewrite 12 files") || !strings.Contains(out, "order_date=2024-01-01") {
		t.Fatalf("dry run exited %d:\n%s", code, out)
	}
	out, _, code = execute(t, newOptimizeCmd, loc, "-o", "json")
	r := decodeResult(t, out)
	if code != 0 || r.Outcome != result.Succeeded || len(r.Ops) != 1 || r.Ops[0].FilesRemoved != 12 || r.Ops[0].FilesAdded != 3 || r.Table.NumFiles != 3 || *r.Version != 13 {
		t.Fatalf("optimize exited %d: %s", code, out)
	}
	if got := canonicalScan(t, loc); !slices.Equal(got, rows) {
		t.Fatal("optimize changed the rows")
	}
	// Nothing left: 3 for people, 0 under `worker` (the result still says nothing_to_do).
	if _, _, code := execute(t, newOptimizeCmd, loc); code != 3 {
		t.Errorf("interactive nothing-to-do exited %d, want 3", code)
	}
	out, _, code = executeAs(t, Job, newOptimizeCmd, loc, "-o", "json")
	if code != 0 || decodeResult(t, out).Outcome != result.NothingToDo {
		t.Errorf("job nothing-to-do exited %d: %s", code, out)
	}
}

func TestOptimizeCommand_RefusesWhatItCannotDoWithoutWriting(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 4, 100, "--partitioned")
	clustered := filepath.Join(t.TempDir(), "clustered")
	demoTable(t, clustered, 4, 100)
	if _, errOut, code := execute(t, newInspectCmd, clustered, "--cluster-by", "region"); code != 0 {
		t.Fatal(errOut)
	}
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"a data column in --where", []string{loc, "--where", "amount > 3"}, "not a partition column"},
		{"a malformed --where", []string{loc, "--where", "order_date >"}, "--where"},
		{"a malformed size", []string{loc, "--target-file-size", "big"}, "--target-file-size"},
		{"Z-order on a clustered table", []string{clustered, "--zorder-by", "amount"}, "is clustered"},
		{"Z-order by a partition column", []string{loc, "--zorder-by", "order_date"}, "order_date"},
		{"a missing table", []string{filepath.Join(t.TempDir(), "nothing")}, "not a Delta table"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			before := listTree(t, c.args[0])
			out, _, code := execute(t, newOptimizeCmd, append(c.args, "-o", "json")...)
			r := decodeResult(t, out)
			if code != 2 || r.Outcome != result.Refused || !strings.Contains(r.Message, c.want) {
				t.Fatalf("exit %d, result %s; want a refusal mentioning %q", code, out, c.want)
			}
			if !slices.Equal(listTree(t, c.args[0]), before) {
				t.Fatal("a refused optimize wrote files")
			}
		})
	}
}

func TestOptimizeCommand_DispatchesClusteredTablesAndZOrderToClustering(t *testing.T) {
	plain := filepath.Join(t.TempDir(), "orders")
	demoTable(t, plain, 8, 200, "--partitioned")
	clustered := filepath.Join(t.TempDir(), "clustered")
	demoTable(t, clustered, 8, 200)
	if _, errOut, code := execute(t, newInspectCmd, clustered, "--cluster-by", "region"); code != 0 {
		t.Fatal(errOut)
	}
	cases := []struct {
		name, loc string
		cmd       func(Mode) *cobra.Command
		args      []string
		steps     string
	}{
		{"optimize of a clustered table clusters it", clustered, newOptimizeCmd, nil, "cluster:succeeded"},
		{"optimize --zorder-by Z-orders", plain, newOptimizeCmd, []string{"--zorder-by", "customer_id,amount"}, "optimize:succeeded"},
		{"maintain --optimize --cluster clusters once", clustered, newMaintainCmd, []string{"--optimize", "--cluster"}, "cluster:nothing_to_do"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows := canonicalScan(t, c.loc)
			out, errOut, code := executeAs(t, Job, c.cmd, append([]string{c.loc, "-o", "json"}, c.args...)...)
			r := decodeResult(t, out)
			if code != 0 || opNames(r) != c.steps {
				t.Fatalf("exit %d, steps %q (want %q): %s %s", code, opNames(r), c.steps, out, errOut)
			}
			if got := canonicalScan(t, c.loc); !slices.Equal(got, rows) {
				t.Fatal("the rows changed")
			}
			// The facts after the run carry the clustering quality of a clustered table, so that
			// status (and triggers on quality) reflect the run without waiting for an inspection.
			if wantQuality := c.loc == clustered; r.Table == nil || (len(r.Table.Quality) == 1) != wantQuality {
				t.Fatalf("table facts %+v: want quality %v", r.Table, wantQuality)
			}
			if c.loc == clustered {
				if q := r.Table.Quality[0]; q.Column != "region" || q.NumFiles != r.Table.NumFiles {
					t.Errorf("quality %+v for %d files", q, r.Table.NumFiles)
				}
			}
		})
	}
}

func TestMaintainCommand_RunsTheStepsInOrderAndReportsEach(t *testing.T) {
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			loc := filepath.Join(t.TempDir(), "orders")
			if backend == "s3" {
				loc = s3Location(t, "lake/orders")
			}
			demoTable(t, loc, 12, 200, "--partitioned")
			rows := canonicalScan(t, loc)
			resultFile := filepath.Join(t.TempDir(), "termination-log")
			out, errOut, code := executeAs(t, Job, newMaintainCmd, loc, "--optimize", "--target-file-size", "268435456",
				"--vacuum", "--retention", "0s", "--allow-short-retention", "--vacuum-mode", "full",
				"--checkpoint", "--log-cleanup", "-o", "json", "--result-file", resultFile)
			if code != 0 {
				t.Fatalf("maintain exited %d: %s %s", code, out, errOut)
			}
			r := decodeResult(t, out)
			if opNames(r) != "optimize:succeeded vacuum:succeeded checkpoint:succeeded logCleanup:nothing_to_do" || r.Outcome != result.Succeeded {
				t.Fatalf("steps %s, outcome %s", opNames(r), r.Outcome)
			}
			if r.Ops[1].FilesRemoved != 12 || r.Table == nil || r.Table.NumFiles != 3 || r.Table.Version != 13 {
				t.Errorf("vacuum %+v, table %+v", r.Ops[1], r.Table)
			}
			data, err := os.ReadFile(resultFile)
			if err != nil || strings.TrimSpace(string(data)) != strings.TrimSpace(out) || len(data) > result.MaxBytes {
				t.Errorf("result file %q (%v)", data, err)
			}
			if got := canonicalScan(t, loc); !slices.Equal(got, rows) {
				t.Fatal("maintain changed the rows")
			}
			// A second run finds nothing to do anywhere but still exits 0 as a Job.
			out, _, code = executeAs(t, Job, newMaintainCmd, loc, "--optimize", "--vacuum", "--checkpoint", "-o", "json")
			if r := decodeResult(t, out); code != 0 || r.Outcome != result.NothingToDo {
				t.Errorf("second run exited %d: %s", code, out)
			}
		})
	}
}

func TestMaintainCommand_RefusesFlagsWithoutTheirStep(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 2, 100)
	cases := []struct {
		args []string
		want string
	}{
		{[]string{}, "nothing to run"},
		{[]string{"--retention", "1h", "--checkpoint"}, "--retention belongs to --vacuum"},
		{[]string{"--vacuum", "--where", "a = 1"}, "--where belongs to --optimize"},
		{[]string{"--vacuum", "--full"}, "--full belongs to --cluster"},
		{[]string{"--optimize", "--log-cleanup"}, "--log-cleanup belongs to --checkpoint"},
		{[]string{"--vacuum", "--vacuum-mode", "fast"}, "use full or lite"},
		{[]string{"--vacuum", "--retention", "soon"}, "--retention"},
	}
	for _, c := range cases {
		out, _, code := executeAs(t, Job, newMaintainCmd, append([]string{loc, "-o", "json"}, c.args...)...)
		r := decodeResult(t, out)
		if code != 2 || r.Reason != result.ReasonBadArgument || !strings.Contains(r.Message, c.want) {
			t.Errorf("%v: exit %d %s; want a bad-argument refusal mentioning %q", c.args, code, out, c.want)
		}
	}
}

func TestMaintainCommand_AFailedStepDoesNotStopTheLaterOnes(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 4, 100, "--partitioned")
	// --where on a data column refuses the optimize step; vacuum and checkpoint still run.
	out, _, code := executeAs(t, Job, newMaintainCmd, loc, "--optimize", "--where", "amount > 1", "--vacuum", "--checkpoint", "-o", "json")
	r := decodeResult(t, out)
	if code != 2 || r.Outcome != result.Refused || opNames(r) != "optimize:refused vacuum:nothing_to_do checkpoint:succeeded" {
		t.Fatalf("exit %d, steps %s: %s", code, opNames(r), out)
	}
}

func TestCheckpointCommand_CleanupKeepsEveryRetainedVersionReadable(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 14, 100) // versions 1..14; Delta's automatic checkpoint at 10
	// Versions up to 10 were written 40 days ago, beyond the 30-day log retention.
	old := time.Now().AddDate(0, 0, -40)
	entries, err := os.ReadDir(filepath.Join(loc, "_delta_log"))
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		var v int
		if n, _ := fmt.Sscanf(e.Name(), "%d.", &v); n == 1 && v <= 10 {
			if err := os.Chtimes(filepath.Join(loc, "_delta_log", e.Name()), old, old); err != nil {
				t.Fatal(err)
			}
		}
	}
	rows := canonicalScan(t, loc)
	out, _, code := execute(t, newCheckpointCmd, loc, "--log-cleanup", "-o", "json")
	r := decodeResult(t, out)
	if code != 0 || opNames(r) != "checkpoint:succeeded logCleanup:succeeded" || *r.Ops[0].Version != 14 || r.Ops[1].FilesRemoved < 10 {
		t.Fatalf("exit %d: %s", code, out)
	}
	if got := canonicalScan(t, loc); !slices.Equal(got, rows) {
		t.Fatal("the latest version reads differently after cleanup")
	}
	// Time travel works from the kept checkpoint on, and says clearly why it does not before it.
	for v := 10; v <= 14; v++ {
		if _, errOut, code := execute(t, newScanCmd, loc, "--version", strconv.Itoa(v), "--out", filepath.Join(t.TempDir(), "rows.jsonl")); code != 0 {
			t.Errorf("version %d no longer readable: %s", v, errOut)
		}
	}
	_, errOut, code := execute(t, newScanCmd, loc, "--version", "9")
	if code != 2 || !strings.Contains(errOut, "can no longer be reconstructed") {
		t.Errorf("version 9: exit %d %s", code, errOut)
	}
	// A second checkpoint of the same version has nothing to do.
	if _, _, code := execute(t, newCheckpointCmd, loc); code != 3 {
		t.Errorf("second checkpoint exited %d, want 3", code)
	}
}

func TestVacuumCommand_DryRunListsFilesAndDeletesNothing(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 3, 100)
	if _, _, code := execute(t, newOptimizeCmd, loc); code != 0 {
		t.Fatal("optimize failed")
	}
	before := listTree(t, loc)
	out, _, code := execute(t, newVacuumCmd, loc, "--retention", "0", "--allow-short-retention", "--dry-run")
	if code != 0 || !strings.Contains(out, "dry run: would delete 3 files") || strings.Count(out, ".parquet") != 3 {
		t.Fatalf("exit %d:\n%s", code, out)
	}
	if !slices.Equal(listTree(t, loc), before) {
		t.Fatal("a dry run deleted files")
	}
	out, _, code = execute(t, newVacuumCmd, loc, "--retention", "1h", "-o", "json")
	if r := decodeResult(t, out); code != 2 || !strings.Contains(r.Message, "--allow-short-retention") {
		t.Errorf("short retention: exit %d %s", code, out)
	}
}

// s3Location starts the S3 test server, exports its credentials as a Job gets them, and returns a
// table location in its bucket.
func s3Location(t *testing.T, prefix string) string {
	srv := s3server.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretAccessKey)
	t.Setenv("AWS_REGION", s3server.Region)
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint)
	t.Setenv(storage.EnvS3PathStyle, "true")
	return srv.Location(prefix)
}

// listTree lists the files under a local table directory with their sizes.
func listTree(t *testing.T, dir string) []string {
	t.Helper()
	var out []string
	_ = filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			out = append(out, p+"="+strconv.Itoa(int(info.Size())))
		}
		return nil
	})
	return out
}

// TestMaintainCommand_AcceptsEveryFlagTheOperatorPasses runs the command lines controllers/worker_args.go
// builds, every flag set.
func TestMaintainCommand_AcceptsEveryFlagTheOperatorPasses(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 8, 100, "--partitioned")
	resultFile := filepath.Join(t.TempDir(), "termination-log")
	out, errOut, code := executeAs(t, Job, newMaintainCmd, loc,
		"--optimize", "--target-file-size", "268435456", "--min-file-size", "1048576", "--max-deleted-rows-ratio", "0.1",
		"--where", "order_date >= '2024-01-02'",
		"--cluster", "--full", "--auto-recluster=false", "--min-offending-files", "3", "--min-overlap-threshold", "0.8",
		"--vacuum", "--retention", "168h0m0s", "--allow-short-retention", "--vacuum-mode", "lite", "--dry-run",
		"--checkpoint", "--log-cleanup", "-o", "json", "--result-file", resultFile)
	r := decodeResult(t, out)
	want := "optimize:succeeded cluster:nothing_to_do vacuum:nothing_to_do checkpoint:succeeded logCleanup:nothing_to_do"
	if code != 0 || opNames(r) != want {
		t.Fatalf("exit %d, steps %q (want %q): %s %s", code, opNames(r), want, out, errOut)
	}
	if r.Ops[0].FilesRemoved != 4 { // demo files 4-7 hold 2024-01-02; 2024-01-01 is not selected
		t.Errorf("optimize removed %d files, want the 4 of the selected day", r.Ops[0].FilesRemoved)
	}
}

// Spilling itself is tested in worker/cluster; here the flags must reach the engine.
func TestOptimizeCommand_ClusteringSwitchesMirrorFabricAndReachTheEngine(t *testing.T) {
	clustered := filepath.Join(t.TempDir(), "clustered")
	demoTable(t, clustered, 6, 300)
	if _, errOut, code := execute(t, newInspectCmd, clustered, "--cluster-by", "customer_id,order_ts"); code != 0 {
		t.Fatal(errOut)
	}
	spill := t.TempDir()
	cases := []struct {
		name  string
		args  []string
		steps string
	}{
		{"a memory limit below the engine's minimum is refused", []string{"--memory-limit", "1mb"}, "cluster:refused"},
		{"incremental with a memory limit and a spill directory", []string{"--memory-limit", "64mb", "--tmp-dir", spill}, "cluster:succeeded"},
		{"again: everything is clustered", nil, "cluster:nothing_to_do"},
		{"--incremental=false reclusters everything", []string{"--incremental=false"}, "cluster:succeeded"},
		{"--full reclusters everything", []string{"--full", "--auto-recluster=false", "--min-offending-files", "2", "--min-overlap-threshold", "0.9"}, "cluster:succeeded"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rows := canonicalScan(t, clustered)
			out, errOut, code := executeAs(t, Job, newOptimizeCmd, append([]string{clustered, "-o", "json"}, c.args...)...)
			r := decodeResult(t, out)
			wantCode := 0
			if strings.HasSuffix(c.steps, "refused") {
				wantCode = 2
				if !strings.Contains(r.Message, "below the 16 MiB clustering needs") {
					t.Errorf("refusal does not explain the memory limit: %s", r.Message)
				}
			}
			if code != wantCode || opNames(r) != c.steps {
				t.Fatalf("exit %d, steps %q (want %q): %s %s", code, opNames(r), c.steps, out, errOut)
			}
			if got := canonicalScan(t, clustered); !slices.Equal(got, rows) {
				t.Fatal("the rows changed")
			}
		})
	}
	if entries, err := os.ReadDir(spill); err != nil || len(entries) != 0 {
		t.Errorf("spill directory not cleaned up: %v %v", entries, err)
	}

	plain := filepath.Join(t.TempDir(), "plain")
	demoTable(t, plain, 3, 100)
	out, _, code := execute(t, newOptimizeCmd, plain, "-o", "json", "--full")
	if r := decodeResult(t, out); code != 2 || r.Reason != result.ReasonBadArgument || !strings.Contains(r.Message, "--full applies to liquid-clustered tables") {
		t.Fatalf("--full on an unclustered table: exit %d, %s", code, out)
	}
	if _, _, code := execute(t, newOptimizeCmd, clustered, "--memory-limit", "lots"); code != 2 {
		t.Fatalf("--memory-limit lots: exit %d, want 2", code)
	}
}
