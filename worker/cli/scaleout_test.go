package cli

import (
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
)

// The shares of a maintain run start together, as an Indexed Job's pods do: share 0 waits for the others'
// manifests, commits once, then vacuums its part of the table; the others rewrite their share, wait for
// the commit and vacuum their part.
func TestMaintainCommand_SharesRunTogetherAndShareZeroCommitsOnce(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 24, 200, "--partitioned")
	rows := canonicalScan(t, loc)
	out, _, _ := execute(t, newInspectCmd, loc, "-o", "json")
	v := *decodeResult(t, out).Version

	outs := make([]string, 3)
	codes := make([]int, 3)
	var wg sync.WaitGroup
	for i := range 3 {
		wg.Go(func() {
			out, _, code := executeAs(t, Job, newMaintainCmd, loc, "--optimize", "--target-file-size", "24k", "--vacuum",
				"--share", strconv.Itoa(i)+"/3", "--run-id", "policy-orders-1", "--at-version", strconv.FormatInt(v, 10), "-o", "json")
			outs[i], codes[i] = out, code
		})
	}
	wg.Wait()
	results := make([]*result.Result, 3)
	for i, r := range outs {
		results[i] = decodeResult(t, r)
	}
	for i, r := range results {
		if codes[i] != 0 || r.Share == nil || r.Share.Index != i || r.Share.Units == 0 {
			t.Fatalf("share %d exited %d: %+v %+v", i, codes[i], r, r.Share)
		}
	}
	if got := opNames(results[1]); got != "optimize:succeeded vacuum:nothing_to_do" {
		t.Fatalf("share 1 ran %s, want its optimize share and its part of the vacuum", got)
	}
	r0 := results[0]
	if got := opNames(r0); got != "optimize:succeeded vacuum:nothing_to_do" {
		t.Fatalf("share 0 ran %s", got)
	}
	if r0.Ops[0].Version == nil || *r0.Ops[0].Version != v+1 || *r0.Version != v+1 || !slices.Equal(r0.Share.Committed, []int{0, 1, 2}) {
		t.Fatalf("share 0's commit %+v / %+v: want version %d from all three shares", r0.Ops[0], r0.Share, v+1)
	}
	if got := canonicalScan(t, loc); !slices.Equal(got, rows) {
		t.Fatalf("%d rows after the run, %d before", len(got), len(rows))
	}
	// The run directory is gone once committed.
	if m, _ := filepath.Glob(filepath.Join(loc, "_deltakeeper", "runs", "policy-orders-1", "*")); len(m) != 0 {
		t.Fatalf("manifests left after the commit: %v", m)
	}
	// A share's pod retried after the commit finds the run committed and writes nothing.
	files := dataFiles(t, loc)
	out, _, code := executeAs(t, Job, newMaintainCmd, loc, "--optimize", "--target-file-size", "24k",
		"--share", "2/3", "--run-id", "policy-orders-1", "--at-version", strconv.FormatInt(v, 10), "-o", "json")
	if r := decodeResult(t, out); code != 0 || r.Share == nil || !r.Share.AlreadyCommitted || !slices.Equal(dataFiles(t, loc), files) {
		t.Fatalf("retried share exited %d: %+v; files %d → %d", code, r.Share, len(files), len(dataFiles(t, loc)))
	}
}

// With retention 0 every unreferenced file is a candidate, the other shares' fresh outputs included until
// the commit references them. Shares 1 and 2 finish their rewrite first and must wait for index 0's commit
// before vacuuming; then each vacuums its part, and together they remove exactly the superseded inputs.
func TestMaintainCommand_ShareVacuumWithRetentionZeroWaitsForTheCommitAndSplitsTheDeletes(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 24, 200, "--partitioned")
	rows := canonicalScan(t, loc)
	out, _, _ := execute(t, newInspectCmd, loc, "-o", "json")
	v := *decodeResult(t, out).Version
	inputs := slices.DeleteFunc(dataFiles(t, loc), func(p string) bool { return strings.Contains(p, "_delta_log") })

	share := func(i int) *result.Result {
		out, errOut, code := executeAs(t, Job, newMaintainCmd, loc, "--optimize", "--target-file-size", "24k",
			"--vacuum", "--retention", "0s", "--allow-short-retention",
			"--share", strconv.Itoa(i)+"/3", "--run-id", "policy-orders-2", "--at-version", strconv.FormatInt(v, 10), "-o", "json")
		if code != 0 {
			t.Errorf("share %d exited %d: %s", i, code, errOut)
		}
		return decodeResult(t, out)
	}
	results := make([]*result.Result, 3)
	var wg sync.WaitGroup
	for _, i := range []int{1, 2} {
		wg.Go(func() { results[i] = share(i) })
	}
	// Index 0 starts once the other two have written their outputs and manifests and are waiting.
	waitFiles(t, filepath.Join(loc, "_deltakeeper", "runs", "policy-orders-2", "share-00[12].json"), 2)
	if got := dataFiles(t, loc); len(got) <= len(inputs) {
		t.Fatalf("%d data files after shares 1 and 2 rewrote theirs, %d before", len(got), len(inputs))
	}
	results[0] = share(0)
	wg.Wait()

	if got := canonicalScan(t, loc); !slices.Equal(got, rows) {
		t.Fatalf("%d rows after the run, %d before: a share's vacuum deleted another's output", len(got), len(rows))
	}
	var live []string
	snap := latestSnapshot(t, loc)
	if int64(snap.Version()) != v+1 {
		t.Fatalf("version %d after the run, want one commit after %d", snap.Version(), v)
	}
	for _, f := range snap.Files() {
		live = append(live, filepath.Join(loc, filepath.FromSlash(f.Path)))
	}
	slices.Sort(live)
	got := slices.DeleteFunc(dataFiles(t, loc), func(p string) bool { return strings.Contains(p, "_delta_log") })
	if !slices.Equal(got, live) {
		t.Fatalf("data files after the run %q\nwant the live ones %q", got, live)
	}
	superseded := int64(len(inputs))
	for _, f := range inputs {
		if _, found := slices.BinarySearch(live, f); found {
			superseded-- // an input the compaction left as it was
		}
	}
	var sum int64
	for i, r := range results {
		if r.Share == nil || len(r.Share.Vacuumed) == 0 || r.Share.VacuumFilesDeleted == 0 {
			t.Errorf("share %d did not vacuum a part: %+v", i, r.Share)
			continue
		}
		sum += r.Share.VacuumFilesDeleted
	}
	r0 := results[0]
	if !slices.Equal(r0.Share.Vacuumed, []int{0, 1, 2}) || r0.Share.VacuumFilesDeleted != superseded {
		t.Errorf("index 0's run totals %+v: want all three shares and the %d superseded inputs", r0.Share, superseded)
	}
	if r0.Ops[1].Name != "vacuum" || r0.Ops[1].FilesRemoved != superseded {
		t.Errorf("index 0's vacuum op %+v, want the run's %d files", r0.Ops[1], superseded)
	}
	if others := sum - r0.Share.VacuumFilesDeleted; others >= r0.Share.VacuumFilesDeleted {
		t.Errorf("shares 1 and 2 deleted %d files, index 0's total for all three is %d", others, r0.Share.VacuumFilesDeleted)
	}
	if m, _ := filepath.Glob(filepath.Join(loc, "_deltakeeper", "runs", "policy-orders-2", "*")); len(m) != 0 {
		t.Fatalf("files left in the run directory after a committed run: %v", m)
	}
}

// waitFiles waits until pattern matches n files.
func waitFiles(t *testing.T, pattern string, n int) {
	t.Helper()
	for range 1200 {
		if m, _ := filepath.Glob(pattern); len(m) >= n {
			return
		}
		time.Sleep(50 * time.Millisecond)
	}
	t.Fatalf("%s: not %d files within a minute", pattern, n)
}

func latestSnapshot(t *testing.T, loc string) *delta.Snapshot {
	t.Helper()
	store, err := storage.Open(t.Context(), loc, storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := delta.NewTable(store).Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestMaintainCommand_RefusesShareFlagsWithoutTheirStep(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 2, 10)
	for _, args := range [][]string{
		{"--vacuum", "--share", "0/2", "--run-id", "r", "--at-version", "1"},
		{"--optimize", "--run-id", "r"},
		{"--optimize", "--share", "2/2", "--run-id", "r", "--at-version", "1"},
		{"--optimize", "--share", "0/2", "--at-version", "1"},
		{"--optimize", "--share", "0/2", "--run-id", "r"},
	} {
		if _, _, code := execute(t, newMaintainCmd, append([]string{loc}, args...)...); code != result.ExitRefused {
			t.Errorf("maintain %v exited %d, want %d", args, code, result.ExitRefused)
		}
	}
}

// dataFiles lists the Parquet files under a local table, sorted.
func dataFiles(t *testing.T, loc string) []string {
	t.Helper()
	out, err := tabletest.ParquetFiles(loc)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// vacuum --share splits a plain vacuum over processes: three shares of the same version delete, between
// them, exactly what one vacuum would, each a part of it.
func TestVacuumCommand_SharesDeleteTheWholeTableBetweenThem(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 24, 200, "--partitioned")
	out, _, _ := execute(t, newInspectCmd, loc, "-o", "json")
	v := strconv.FormatInt(*decodeResult(t, out).Version, 10)
	out, _, code := execute(t, newOptimizeCmd, loc, "--target-file-size", "24k", "-o", "json")
	compacted := decodeResult(t, out).Ops[0].FilesRemoved
	if code != 0 || compacted == 0 {
		t.Fatalf("optimize exited %d, compacted %d files", code, compacted)
	}
	var total int64
	for i := range 3 {
		out, errOut, code := execute(t, newVacuumCmd, loc, "--retention", "0s", "--allow-short-retention",
			"--share", strconv.Itoa(i)+"/3", "--at-version", v, "-o", "json")
		r := decodeResult(t, out)
		if code != 0 || r.Ops[0].FilesRemoved == 0 {
			t.Fatalf("vacuum share %d exited %d, removed %d files: %s", i, code, r.Ops[0].FilesRemoved, errOut)
		}
		total += r.Ops[0].FilesRemoved
	}
	var live []string
	for _, f := range latestSnapshot(t, loc).Files() {
		live = append(live, filepath.Join(loc, filepath.FromSlash(f.Path)))
	}
	slices.Sort(live)
	got := slices.DeleteFunc(dataFiles(t, loc), func(p string) bool { return strings.Contains(p, "_delta_log") })
	if !slices.Equal(got, live) || total != compacted {
		t.Fatalf("after three vacuum shares (%d files deleted, want the %d compacted): %q\nwant the live %q", total, compacted, got, live)
	}
	for _, args := range [][]string{{"--at-version", v}, {"--share", "3/3", "--at-version", v}, {"--share", "0/3"}} {
		if _, _, code := execute(t, newVacuumCmd, append([]string{loc}, args...)...); code != result.ExitRefused {
			t.Errorf("vacuum %v exited %d, want %d", args, code, result.ExitRefused)
		}
	}
}
