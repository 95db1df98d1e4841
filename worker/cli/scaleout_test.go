package cli

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/result"
)

// The shares of a maintain run start together, as an Indexed Job's pods do: share 0 waits for the others'
// manifests, commits once, then vacuums; the others only rewrite their share.
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
	if got := opNames(results[1]); got != "optimize:succeeded" {
		t.Fatalf("share 1 ran %s, want only its optimize share", got)
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
	var out []string
	err := filepath.WalkDir(loc, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".parquet") {
			out = append(out, path)
		}
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	slices.Sort(out)
	return out
}
