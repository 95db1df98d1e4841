package optimize

import (
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// TestLoadOptions_LeanLoadWritesTheSameCommitAsFullLoad compacts two identical copies of a
// partitioned table (files from a checkpoint and from JSON commits after it), one planned on a
// snapshot loaded in full and one through Run, which loads with row counts only: the commits must be
// the same action for action — the same removes, field by field, and adds that differ only in their
// random file names — with the same commitInfo metrics, and both tables must hold the same rows.
func TestLoadOptions_LeanLoadWritesTheSameCommitAsFullLoad(t *testing.T) {
	for _, where := range []string{"", "order_date >= '2024-01-02'"} {
		t.Run("where="+where, func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "orders")
			src, err := storage.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			tbl := demoTable(t, src, 9, 150, true)
			if err := tbl.Checkpoint(t.Context(), latest(t, tbl)); err != nil {
				t.Fatal(err)
			}
			if _, err := table.WriteDemoData(t.Context(), tbl, table.DemoOptions{Files: 5, RowsPerFile: 120, Partitioned: true, Seed: 4}, nil); err != nil {
				t.Fatal(err)
			}
			clock := clockAt(time.Date(2026, 12, 2, 5, 0, 0, 0, time.UTC))
			fullTbl := delta.NewTable(copyStore(t, dir, "full"), delta.WithClock(clock))
			leanTbl := delta.NewTable(copyStore(t, dir, "lean"), delta.WithClock(clock))
			want := latestRows(t, fullTbl)
			opts := Options{MaxDeletedRowsRatio: DefaultMaxDeletedRowsRatio, Parallelism: 1}
			if where != "" {
				if opts.Where, err = expr.Parse(where); err != nil {
					t.Fatal(err)
				}
			}

			fullSnap := latest(t, fullTbl)
			if fullSnap.LoadOptions().RowCountsOnly || fullSnap.CheckpointVersion() == delta.NoVersion {
				t.Fatalf("the full snapshot has row counts only or no checkpoint (%d)", fullSnap.CheckpointVersion())
			}
			fullRep, err := RunSnapshot(t.Context(), fullSnap, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			leanRep, err := Run(t.Context(), leanTbl, opts, nil)
			if err != nil {
				t.Fatal(err)
			}
			if !leanRep.Plan.Snapshot.LoadOptions().RowCountsOnly {
				t.Fatal("Run did not plan on a row-counts-only snapshot")
			}
			if len(fullRep.Commits) != 1 || !slices.Equal(fullRep.Commits, leanRep.Commits) || fullRep.FilesRemoved < 4 {
				t.Fatalf("full load committed %v (%d files removed), lean load %v", fullRep.Commits, fullRep.FilesRemoved, leanRep.Commits)
			}
			v := fullRep.Commits[0]
			fullCommit, leanCommit := comparableCommit(t, fullTbl.Store(), v), comparableCommit(t, leanTbl.Store(), v)
			if !slices.Equal(fullCommit, leanCommit) {
				t.Fatalf("the commits differ:\nfull:\n%s\nlean:\n%s", strings.Join(fullCommit, "\n"), strings.Join(leanCommit, "\n"))
			}
			removes := 0
			for _, a := range commitActions(t, fullTbl.Store(), v) {
				if r := a.Remove; r != nil {
					removes++
					if n, ok := delta.NumRecords(r.Stats); !ok || r.Stats != `{"numRecords":`+itoa(n)+`}` {
						t.Fatalf("remove %s carries stats %q, want its row count alone", r.Path, r.Stats)
					}
				}
			}
			if removes != fullRep.FilesRemoved {
				t.Fatalf("%d removes in the commit, the report says %d", removes, fullRep.FilesRemoved)
			}
			sameRows(t, "full-load compaction", latestRows(t, fullTbl), want)
			sameRows(t, "lean-load compaction", latestRows(t, leanTbl), want)
		})
	}
}

// comparableCommit is a commit's actions as JSON lines, with what is random per run taken out: the
// names and write times of added files and the commitInfo's transaction id.
func comparableCommit(t *testing.T, store storage.Store, v delta.Version) []string {
	t.Helper()
	var out []string
	for _, a := range commitActions(t, store, v) {
		switch {
		case a.Add != nil:
			c := *a.Add
			c.Path = filepath.Dir(c.Path) // the partition directory stays
			c.ModificationTime = 0        // when the store wrote it
			out = append(out, "add "+mustJSON(t, c))
		case a.Remove != nil:
			out = append(out, "remove "+mustJSON(t, a.Remove))
		case a.CommitInfo != nil:
			ci := *a.CommitInfo
			ci.TxnID = ""
			out = append(out, "commitInfo "+mustJSON(t, ci))
		}
	}
	slices.Sort(out)
	return out
}

func mustJSON(t *testing.T, v any) string {
	t.Helper()
	b, err := json.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

func itoa(n int64) string { b, _ := json.Marshal(n); return string(b) }

// copyStore copies a local table directory (log and data) to a new store.
func copyStore(t *testing.T, dir, name string) storage.Store {
	t.Helper()
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(dir)); err != nil {
		t.Fatal(err)
	}
	s, err := storage.NewLocal(dst)
	if err != nil {
		t.Fatal(err)
	}
	return s
}
