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

func TestOptimize_ConcurrentDeleteOfAnInputDiscardsTheRewrite(t *testing.T) {
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
	progress := onLastOutput(func() {
		// Another writer deletes every row of one input file.
		latest := f.latest()
		tx, err := latest.Begin(delta.OpMerge, delta.TxnOptions{Operation: "DELETE"})
		if err != nil {
			t.Error(err)
			return
		}
		tx.Remove(true, victim)
		if _, err := tx.Commit(context.Background()); err != nil {
			t.Error(err)
		}
	})
	op, err := cluster.Optimize(f.ctx, f.tbl, snap, opts(func(o *cluster.Options) { o.Full = true }), progress)
	if err == nil || op.Outcome != result.Failed || op.Reason != result.ReasonConflict {
		t.Fatalf("optimize: %+v, %v; want a conflict failure", op, err)
	}
	// The table holds the rows of the surviving inputs, and no file of the discarded rewrite is left.
	want := canonicalRows(t, f.latest())
	if len(want) >= 20_000 {
		t.Fatalf("the delete did not land: %d rows", len(want))
	}
	live := map[string]bool{}
	for _, a := range f.latest().Files() {
		live[a.Path] = true
	}
	entries, _ := filepath.Glob(filepath.Join(dir, "*.parquet"))
	for _, p := range entries {
		name := filepath.Base(p)
		if !live[name] && name != victim.Path {
			t.Fatalf("file %s of the discarded rewrite is left behind", name)
		}
	}
	if strings.Contains(op.Message, "kept") {
		t.Fatalf("message %q claims outputs were kept", op.Message)
	}
}
