package optimize

import (
	"context"
	"errors"
	"maps"
	"slices"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestOptimize_CompactsSmallFilesWithoutChangingRows(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			store := b.open(t, "orders")
			tbl := demoTable(t, store, 16, 300, true)
			before := latest(t, tbl)
			wantRows := rowsAt(t, before)

			rep := run(t, tbl, Options{MaxDeletedRowsRatio: DefaultMaxDeletedRowsRatio})
			after := latest(t, tbl)
			sameRows(t, "after optimize", rowsAt(t, after), wantRows)
			if rep.Op.Outcome != result.Succeeded || len(rep.Commits) != 1 || after.Version() != before.Version()+1 {
				t.Fatalf("report %+v, versions %d → %d", rep.Op, before.Version(), after.Version())
			}
			if rep.FilesRemoved != 16 || after.NumFiles() != rep.Plan.Partitions || rep.FilesAdded != after.NumFiles() {
				t.Errorf("removed %d, added %d, %d files live in %d partitions", rep.FilesRemoved, rep.FilesAdded, after.NumFiles(), rep.Plan.Partitions)
			}

			// The commit is Spark's OPTIMIZE: every action dataChange=false, parameters and metrics set.
			var ci *delta.CommitInfo
			var adds, removes int
			for _, a := range commitActions(t, store, after.Version()) {
				switch {
				case a.CommitInfo != nil:
					ci = a.CommitInfo
				case a.Add != nil:
					adds++
					if a.Add.DataChange || a.Add.DeletionVector != nil {
						t.Errorf("add %+v", a.Add)
					}
				case a.Remove != nil:
					removes++
					if a.Remove.DataChange {
						t.Errorf("remove %s has dataChange=true", a.Remove.Path)
					}
				}
			}
			if ci == nil || ci.Operation != "OPTIMIZE" || ci.BlindAppend() || ci.OperationParameters["predicate"] != "[]" || ci.OperationParameters["auto"] != "false" {
				t.Fatalf("commitInfo %+v", ci)
			}
			m := ci.OperationMetrics
			for k, want := range map[string]int64{
				"numRemovedFiles": 16, "numAddedFiles": int64(adds), "numRemovedBytes": rep.BytesRemoved, "numAddedBytes": rep.BytesAdded,
				"numBins": int64(len(rep.Plan.Bins)), "partitionsOptimized": int64(rep.Plan.Partitions), "numBatches": 1,
			} {
				if m[k] != strconv.FormatInt(want, 10) {
					t.Errorf("operationMetrics[%s] = %q, want %d", k, m[k], want)
				}
			}
			for _, k := range []string{"minFileSize", "p25FileSize", "p50FileSize", "p75FileSize", "maxFileSize"} {
				if m[k] == "" {
					t.Errorf("operationMetrics lacks %s", k)
				}
			}
			if removes != 16 {
				t.Errorf("%d removes", removes)
			}

			// Nothing is left to do: each partition holds one file.
			again := run(t, tbl, Options{})
			if again.Op.Outcome != result.NothingToDo || latest(t, tbl).Version() != after.Version() {
				t.Errorf("second run %+v", again.Op)
			}
		})
	}
}

func TestOptimize_WhereCompactsOnlyTheSelectedPartitions(t *testing.T) {
	tbl := demoTable(t, localStore(t), 16, 300, true)
	before := latest(t, tbl)
	wantRows := rowsAt(t, before)
	where, _ := expr.Parse("order_date <= '2024-01-02'")
	rep := run(t, tbl, Options{Where: where})
	after := latest(t, tbl)
	sameRows(t, "after optimize --where", rowsAt(t, after), wantRows)
	if rep.Plan.Partitions != 2 || rep.Op.Outcome != result.Succeeded {
		t.Fatalf("plan %+v, op %+v", rep.Plan, rep.Op)
	}
	for _, f := range after.Files() {
		day := f.PartitionValues[0].Value
		if day > "2024-01-02" && !f.DataChange {
			t.Errorf("file %s of a partition outside --where was rewritten", f.Path)
		}
	}
	ci := commitActions(t, tbl.Store(), after.Version())[0].CommitInfo
	if ci.OperationParameters["predicate"] != `["order_date <= '2024-01-02'"]` {
		t.Errorf("predicate parameter %q", ci.OperationParameters["predicate"])
	}
}

func TestOptimize_RefusesBadArgumentsWithoutWriting(t *testing.T) {
	tbl := demoTable(t, localStore(t), 4, 100, true)
	v := latest(t, tbl).Version()
	onData, _ := expr.Parse("amount > 10")
	cases := []struct {
		name string
		opts Options
		want string
	}{
		{"a data column in --where", Options{Where: onData}, "not a partition column"},
		{"a ratio above one", Options{MaxDeletedRowsRatio: 2}, "between 0 and 1"},
		{"a negative target", Options{TargetFileSize: -1}, "must be positive"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			_, err := Run(t.Context(), tbl, c.opts, nil)
			var re *result.Error
			if !errors.As(err, &re) || re.Outcome != result.Refused || re.Reason != result.ReasonBadArgument || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want a BadArgument refusal mentioning %q", err, c.want)
			}
			if latest(t, tbl).Version() != v {
				t.Fatal("a refused run committed")
			}
		})
	}
}

func TestOptimize_DryRunWritesNothing(t *testing.T) {
	store := localStore(t)
	tbl := demoTable(t, store, 8, 100, false)
	files := storedFiles(t, store)
	v := latest(t, tbl).Version()
	rep := run(t, tbl, Options{DryRun: true})
	if n, _ := rep.Plan.Files(); n != 8 || len(rep.Plan.Bins) != 1 || rep.Op.Outcome != result.Succeeded || len(rep.Commits) != 0 {
		t.Fatalf("dry run plan %+v op %+v", rep.Plan, rep.Op)
	}
	if latest(t, tbl).Version() != v || !maps.Equal(storedFiles(t, store), files) {
		t.Fatal("a dry run changed the table")
	}
}

func TestOptimize_BatchSizeCommitsEveryNBins(t *testing.T) {
	tbl := demoTable(t, localStore(t), 24, 300, true)
	wantRows := latestRows(t, tbl)
	rep := run(t, tbl, Options{BatchSize: 3, Parallelism: 2})
	sameRows(t, "after batched optimize", latestRows(t, tbl), wantRows)
	bins := len(rep.Plan.Bins)
	wantCommits := (bins + 2) / 3
	if bins < 4 || len(rep.Commits) != wantCommits || rep.Batches != wantCommits {
		t.Fatalf("%d bins gave %d commits (%d batches), want %d", bins, len(rep.Commits), rep.Batches, wantCommits)
	}
	total := 0
	for _, v := range rep.Commits {
		m := commitActions(t, tbl.Store(), v)[0].CommitInfo.OperationMetrics
		n, _ := strconv.Atoi(m["numBins"])
		total += n
		if m["numBatches"] != strconv.Itoa(wantCommits) || n > 3 {
			t.Errorf("commit %d metrics %v", v, m)
		}
	}
	if total != bins {
		t.Errorf("commits hold %d bins, want %d", total, bins)
	}
}

func TestOptimize_TargetSizeBoundsTheBins(t *testing.T) {
	store := localStore(t)
	tbl := demoTable(t, store, 12, 500, false)
	snap := latest(t, tbl)
	sizes := make([]int64, 0, snap.NumFiles())
	for _, f := range snap.Files() {
		sizes = append(sizes, f.Size)
	}
	target := slices.Max(sizes) * 3
	wantRows := rowsAt(t, snap)
	rep := run(t, tbl, Options{TargetFileSize: target})
	sameRows(t, "after optimize", latestRows(t, tbl), wantRows)
	for _, b := range rep.Plan.Bins {
		if b.Bytes > target {
			t.Errorf("bin of %d bytes exceeds the target %d", b.Bytes, target)
		}
	}
	if len(rep.Plan.Bins) < 4 {
		t.Errorf("%d bins for 12 files with room for 3 per bin", len(rep.Plan.Bins))
	}
}

func TestOptimize_FailedRunDeletesItsUncommittedOutputs(t *testing.T) {
	cases := []struct {
		name    string
		breakIt func(t *testing.T, store storage.Store, snap *delta.Snapshot) storage.Store
		want    string
	}{
		{"an input file is missing", func(t *testing.T, store storage.Store, snap *delta.Snapshot) storage.Store {
			victim, _ := delta.ObjectKey(snap.Table().Location(), snap.Files()[len(snap.Files())-1].Path)
			if err := store.Delete(t.Context(), victim); err != nil {
				t.Fatal(err)
			}
			return store
		}, "object not found"},
		{"writing the third output fails after two bins completed", func(t *testing.T, store storage.Store, _ *delta.Snapshot) storage.Store {
			return &failingCreates{Store: store, allowed: 2}
		}, "injected"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := localStore(t)
			snap := latest(t, demoTable(t, store, 16, 200, true))
			tbl := delta.NewTable(c.breakIt(t, store, snap))
			files := storedFiles(t, store)
			_, err := Run(t.Context(), tbl, Options{Parallelism: 1}, nil)
			if err == nil || !strings.Contains(err.Error(), c.want) {
				t.Fatalf("error %v, want one mentioning %q", err, c.want)
			}
			if latest(t, tbl).Version() != snap.Version() {
				t.Fatal("a failed run committed")
			}
			if got := storedFiles(t, store); !maps.Equal(got, files) {
				t.Fatalf("the failed run left files behind: %d files, want %d", len(got), len(files))
			}
		})
	}
}

// failingCreates fails creating data files once allowed ones were created.
type failingCreates struct {
	storage.Store
	allowed int32
	created atomic.Int32
}

func (s *failingCreates) Create(ctx context.Context, key string) (storage.Writer, error) {
	if !strings.HasPrefix(key, delta.LogDir) && s.created.Add(1) > s.allowed {
		return nil, errors.New("injected create failure")
	}
	return s.Store.Create(ctx, key)
}

func TestOptimize_InterruptedRunKeepsCommittedBatchesAndLeavesNoOrphans(t *testing.T) {
	tbl := demoTable(t, localStore(t), 24, 100, true)
	wantRows := latestRows(t, tbl)
	ctx, cancel := context.WithCancel(t.Context())
	calls := 0
	// The first bin commits on its own (batch size 1); the interruption comes with the second.
	progress := func(string) {
		if calls++; calls == 2 {
			cancel()
		}
	}
	rep, err := Run(ctx, tbl, Options{BatchSize: 1, Parallelism: 1}, progress)
	if !errors.Is(err, context.Canceled) || !strings.Contains(err.Error(), "interrupted") {
		t.Fatalf("error %v, want an interruption", err)
	}
	if len(rep.Commits) != 1 || rep.Unknown || rep.Op.Outcome != result.Failed {
		t.Fatalf("commits %v, op %+v", rep.Commits, rep.Op)
	}
	sameRows(t, "after the interrupted run", latestRows(t, tbl), wantRows)
	if o := orphans(t, tbl); len(o) > 0 {
		t.Fatalf("the interrupted run left files behind: %v", o)
	}
}
