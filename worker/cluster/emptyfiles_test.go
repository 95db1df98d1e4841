package cluster_test

import (
	"bytes"
	"encoding/json"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
)

// Clustering a table whose only unclustered files are zero-row files without statistics (an old
// Spark overwrite leaves them) removes them and adds nothing.
func TestCluster_RemovesEmptyFilesWithoutStatistics(t *testing.T) {
	f := newFixture(t, nil)
	f.clusterBy("a", "b")
	for range 2 {
		if _, err := tabletest.AppendWithoutStats(f.ctx, f.latest(), nil, nil); err != nil {
			t.Fatal(err)
		}
	}
	op := f.optimize(cluster.Options{})
	after := f.latest()
	if op.Outcome != result.Succeeded || op.FilesRemoved != 2 || op.FilesAdded != 0 || after.NumFiles() != 0 {
		t.Fatalf("op %+v, %d files left", op, after.NumFiles())
	}
}

// Empty and stat-less files mixed with real ones: the rows survive and every remove carries the
// row count the commit check needs.
func TestCluster_CountsRowsOfFilesWithoutStatisticsFromTheirFooters(t *testing.T) {
	f := newFixture(t, nil)
	f.appendFiles(eventRows(3000, 0, 1), 3)
	f.clusterBy("a", "b")
	if _, err := tabletest.AppendWithoutStats(f.ctx, f.latest(), nil, nil); err != nil {
		t.Fatal(err)
	}
	if _, err := tabletest.AppendWithoutStats(f.ctx, f.latest(), nil, eventRows(500, 10_000, 2)); err != nil {
		t.Fatal(err)
	}
	before := f.rows()
	op := f.optimize(cluster.Options{})
	if op.Outcome != result.Succeeded || op.FilesRemoved != 5 {
		t.Fatalf("op %+v", op)
	}
	sameRows(t, before, f.rows())
	v := f.latest().Version()
	data, err := f.store.Get(f.ctx, delta.CommitKey(v))
	if err != nil {
		t.Fatal(err)
	}
	var removes int
	for _, a := range decodeActions(t, data) {
		if a.Remove != nil {
			removes++
			if _, ok := delta.NumRecords(a.Remove.Stats); !ok {
				t.Errorf("remove of %s carries no row count", a.Remove.Path)
			}
		}
	}
	if removes != 5 || !slices.ContainsFunc(f.latest().Files(), func(a *delta.AddFile) bool { return a.Stats != "" }) {
		t.Errorf("%d removes in version %d", removes, v)
	}
}

type loggedAction struct {
	Add    *delta.AddFile    `json:"add"`
	Remove *delta.RemoveFile `json:"remove"`
}

func decodeActions(t *testing.T, commit []byte) []loggedAction {
	t.Helper()
	var out []loggedAction
	for line := range bytes.SplitSeq(bytes.TrimSpace(commit), []byte("\n")) {
		var a loggedAction
		if err := json.Unmarshal(line, &a); err != nil {
			t.Fatal(err)
		}
		out = append(out, a)
	}
	return out
}
