package cluster_test

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// Environment of the helper process that appends to a table while clustering runs.
const (
	envHelperTable = "DELTAKEEPER_CLUSTER_TEST_APPEND_TO"
	envHelperFirst = "DELTAKEEPER_CLUSTER_TEST_FIRST_ID"
)

// TestHelperProcessAppend is not a test: run as a child process, it appends rows to the table named
// in its environment, as another writer would.
func TestHelperProcessAppend(t *testing.T) {
	dir := os.Getenv(envHelperTable)
	if dir == "" {
		return
	}
	first, _ := strconv.Atoi(os.Getenv(envHelperFirst))
	ctx := context.Background()
	store, err := storage.Open(ctx, dir, storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	snap, err := delta.NewTable(store).Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.Append(ctx, snap, eventRows(700, first, 99), table.WriteOptions{DataChange: true}); err != nil {
		t.Fatal(err)
	}
}

// onLastOutput runs fn once, when the last output file of a run has been written: between the rewrite
// and its commit.
func onLastOutput(fn func()) func(string) {
	var once sync.Once
	return func(msg string) {
		var done, total int
		if n, _ := fmt.Sscanf(msg, "wrote %d/%d files", &done, &total); n == 2 && done == total {
			once.Do(fn)
		}
	}
}

func TestOptimize_ConcurrentAppendFromAnotherProcessIsNeitherLostNorDuplicated(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.Open(context.Background(), dir, storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureOn(t, store, nil)
	f.appendFiles(eventRows(20_000, 0, 1), 5)
	f.clusterBy("a", "b")
	before := f.rows()
	appended := false
	progress := onLastOutput(func() {
		cmd := exec.Command(os.Args[0], "-test.run=^TestHelperProcessAppend$", "-test.count=1")
		cmd.Env = append(os.Environ(), envHelperTable+"="+dir, envHelperFirst+"=1000000")
		if out, err := cmd.CombinedOutput(); err != nil {
			t.Errorf("appending process: %v\n%s", err, out)
		}
		appended = true
	})
	op, err := cluster.Optimize(f.ctx, f.tbl, f.latest(), opts(func(o *cluster.Options) { o.Full = true }), progress)
	if err != nil || op.Outcome != result.Succeeded || !appended {
		t.Fatalf("optimize: %+v, %v (appended: %v)", op, err, appended)
	}
	want := slices.Clone(before)
	for _, r := range eventRows(700, 1_000_000, 99) {
		want = append(want, table.CanonicalRow(r))
	}
	slices.Sort(want)
	sameRows(t, want, f.rows())
}

// deleteFile commits a DELETE of every row of victim, as another writer would.
func deleteFile(t *testing.T, f *fixture, victim *delta.AddFile) {
	tx, err := f.latest().Begin(delta.OpMerge, delta.TxnOptions{Operation: "DELETE"})
	if err != nil {
		t.Error(err)
		return
	}
	tx.Remove(true, victim)
	if _, err := tx.Commit(context.Background()); err != nil {
		t.Error(err)
	}
}

// leftovers returns the data files in dir that the log does not reference (outputs of abandoned
// attempts), ignoring the run's inputs: the log removed them, VACUUM deletes them.
func leftovers(t *testing.T, f *fixture, dir string, inputs []*delta.AddFile) []string {
	t.Helper()
	live := map[string]bool{}
	for _, a := range f.latest().Files() {
		live[a.Path] = true
	}
	entries, err := filepath.Glob(filepath.Join(dir, "*.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	var left []string
	for _, p := range entries {
		if name := filepath.Base(p); !live[name] && !slices.ContainsFunc(inputs, func(in *delta.AddFile) bool { return in.Path == name }) {
			left = append(left, name)
		}
	}
	return left
}

func TestOptimize_ConcurrentDeleteOfAnInputReplansTheRest(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.Open(context.Background(), dir, storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureOn(t, store, nil)
	f.appendFiles(eventRows(20_000, 0, 1), 5)
	f.clusterBy("a", "b")
	snap := f.latest()
	victim := snap.Files()[0]
	var afterDelete []string
	progress := onLastOutput(func() {
		// Another writer deletes every row of one input file, between the rewrite and its commit.
		deleteFile(t, f, victim)
		afterDelete = canonicalRows(t, f.latest())
	})
	op, err := cluster.Optimize(f.ctx, f.tbl, snap, opts(func(o *cluster.Options) { o.Full = true }), progress)
	if err != nil || op.Outcome != result.Succeeded {
		t.Fatalf("optimize: %+v, %v; want the run to re-plan and succeed", op, err)
	}
	if len(afterDelete) == 0 || len(afterDelete) >= 20_000 {
		t.Fatalf("the delete did not land: %d rows", len(afterDelete))
	}
	// The four surviving inputs were clustered again, on the snapshot after the delete.
	if op.FilesRemoved != 4 || !strings.Contains(op.Message, "re-planned 1 times after concurrent commits removed 1 of its input files") {
		t.Fatalf("optimize removed %d files, message %q; want the 4 surviving inputs re-planned once", op.FilesRemoved, op.Message)
	}
	sameRows(t, afterDelete, f.rows())
	latest := f.latest()
	for _, a := range latest.Files() {
		if a.Tags[cluster.TagZCubeID] == "" {
			t.Fatalf("file %s is not clustered after the re-planned run", a.Path)
		}
	}
	if left := leftovers(t, f, dir, snap.Files()); len(left) > 0 {
		t.Fatalf("files of the abandoned attempt are left behind: %v", left)
	}
}

func TestOptimize_InputsRemovedOnEveryAttemptEndsWithAConflictWithinItsBounds(t *testing.T) {
	dir := t.TempDir()
	store, err := storage.Open(context.Background(), dir, storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	f := newFixtureOn(t, store, nil)
	f.appendFiles(eventRows(20_000, 0, 1), 6)
	f.clusterBy("a", "b")
	snap := f.latest()
	inputs := snap.Files()
	attempts := 0
	progress := func(msg string) {
		var done, total int
		if n, _ := fmt.Sscanf(msg, "wrote %d/%d files", &done, &total); n != 2 || done != total {
			return
		}
		// Every attempt loses one of its inputs before it commits.
		victim := inputs[attempts]
		attempts++
		deleteFile(t, f, victim)
	}
	op, err := cluster.Optimize(f.ctx, f.tbl, snap, opts(func(o *cluster.Options) { o.Full = true }), progress)
	if err == nil || op.Outcome != result.Failed || op.Reason != result.ReasonConflict {
		t.Fatalf("optimize: %+v, %v; want a conflict failure", op, err)
	}
	if attempts != 4 || !strings.Contains(op.Message, "already re-planned 3 times") {
		t.Fatalf("%d attempts, message %q; want the first attempt and 3 re-plans", attempts, op.Message)
	}
	if op.ConflictFiles != int64(attempts) {
		t.Fatalf("conflictFiles = %d, want %d: one input lost per attempt", op.ConflictFiles, attempts)
	}
	if len(f.latest().Files()) != len(inputs)-attempts {
		t.Fatalf("%d files; the failed run committed something", len(f.latest().Files()))
	}
	if left := leftovers(t, f, dir, inputs); len(left) > 0 {
		t.Fatalf("files of the abandoned attempts are left behind: %v", left)
	}
}
