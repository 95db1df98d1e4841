package optimize

import (
	"errors"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/scaleout"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

var shareOpts = Options{MaxDeletedRowsRatio: DefaultMaxDeletedRowsRatio, TargetFileSize: 24 << 10, MaxReplans: -1}

func TestShareBins_PartitionThePlanExactly(t *testing.T) {
	tbl := demoTable(t, localStore(t), 40, 200, true)
	snap := latest(t, tbl)
	cfg, err := configure(snap, shareOpts)
	if err != nil {
		t.Fatal(err)
	}
	p, err := plan(snap, cfg)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Bins) < 6 {
		t.Fatalf("the plan has %d bins; the test needs several per share", len(p.Bins))
	}
	for count := 1; count <= 5; count++ {
		seen := map[*Bin]int{}
		for i := range count {
			got := ShareBins(p, i, count)
			if !slices.Equal(got, ShareBins(p, i, count)) {
				t.Fatalf("share %d/%d differs between two computations", i, count)
			}
			for _, b := range got {
				seen[b]++
			}
		}
		for _, b := range p.Bins {
			if seen[b] != 1 {
				t.Fatalf("count %d: bin of %s is in %d shares, want exactly 1", count, b.Dir, seen[b])
			}
		}
		if len(seen) != len(p.Bins) {
			t.Fatalf("count %d: shares hold %d bins, the plan %d", count, len(seen), len(p.Bins))
		}
	}
}

// runShares runs every share of a run at the table's current version (index 0 last, as a Job whose
// other pods finished first would), then the commit.
func runShares(t *testing.T, tbl *delta.Table, run string, count int) (*scaleout.CommitReport, []*ShareReport) {
	t.Helper()
	snap := latest(t, tbl)
	var reps []*ShareReport
	for i := range count {
		rep, err := RunShare(t.Context(), snap, shareOpts, scaleout.Share{RunID: run, Index: i, Count: count, Version: int64(snap.Version())}, nil)
		if err != nil {
			t.Fatalf("share %d: %v", i, err)
		}
		reps = append(reps, rep)
	}
	return commitRun(t, tbl, run, count, int64(snap.Version())), reps
}

func commitRun(t *testing.T, tbl *delta.Table, run string, count int, version int64) *scaleout.CommitReport {
	t.Helper()
	s := scaleout.Share{RunID: run, Count: count, Version: version}
	manifests, err := scaleout.WaitManifests(t.Context(), tbl.Store(), s, scaleout.WaitOptions{})
	if err != nil {
		t.Fatal(err)
	}
	rep, err := scaleout.Commit(t.Context(), tbl, s, manifests)
	if err != nil {
		t.Fatalf("commit: %v", err)
	}
	return rep
}

func TestRunShare_SharesCommitOnceWithTheSameRows(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			tbl := demoTable(t, b.open(t, "orders"), 30, 200, true)
			before := latest(t, tbl)
			wantRows := rowsAt(t, before)

			crep, shares := runShares(t, tbl, "run-1", 3)
			after := latest(t, tbl)
			sameRows(t, "after the scale-out run", rowsAt(t, after), wantRows)
			if after.Version() != before.Version()+1 || crep.Op.Version == nil || *crep.Op.Version != int64(after.Version()) {
				t.Fatalf("versions %d → %d, commit op %+v: want exactly one commit", before.Version(), after.Version(), crep.Op)
			}
			var inputs, outputs int
			for i, s := range shares {
				if s.Share.Units == 0 {
					t.Fatalf("share %d got no bins: %+v", i, s.Share)
				}
				inputs += s.Share.Inputs
				outputs += s.Share.Outputs
			}
			if crep.Op.Outcome != result.Succeeded || crep.Op.FilesRemoved != int64(inputs) || crep.Op.FilesAdded != int64(outputs) ||
				!slices.Equal(crep.Share.Committed, []int{0, 1, 2}) {
				t.Fatalf("commit %+v / %+v, the shares rewrote %d files into %d", crep.Op, crep.Share, inputs, outputs)
			}
			if txn, ok := after.Txn(scaleout.ScaleOutAppID); !ok || txn.Version != int64(before.Version()) {
				t.Fatalf("txn %+v, want version %d", txn, before.Version())
			}
			if o := orphans(t, tbl); len(o) != 3 {
				// Only the three manifests: every data file written was committed.
				t.Fatalf("stored files no commit added: %v", o)
			}

			// A repeated commit step (the pod died after committing) neither commits nor deletes.
			again := commitRun(t, tbl, "run-1", 3, int64(before.Version()))
			if !again.Share.AlreadyCommitted || again.Op.Version != nil || latest(t, tbl).Version() != after.Version() {
				t.Fatalf("second commit: %+v %+v", again.Op, again.Share)
			}
			sameRows(t, "after the repeated commit step", latestRows(t, tbl), wantRows)
		})
	}
}

func TestRunShare_KilledShareRedoesExactlyItsShare(t *testing.T) {
	tbl := demoTable(t, localStore(t), 30, 200, true)
	snap := latest(t, tbl)
	s := scaleout.Share{RunID: "run-k", Index: 1, Count: 3, Version: int64(snap.Version())}
	first, err := RunShare(t.Context(), snap, shareOpts, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	inputsOf := func(m *scaleout.Manifest) []string {
		var out []string
		for _, u := range m.Units {
			for _, f := range u.Inputs {
				out = append(out, f.Path)
			}
		}
		slices.Sort(out)
		return out
	}
	// The pod died after writing its files but before its manifest: the files stay, unreferenced.
	if err := tbl.Store().Delete(t.Context(), scaleout.ManifestKey(s.RunID, s.Index)); err != nil {
		t.Fatal(err)
	}
	retried, err := RunShare(t.Context(), snap, shareOpts, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !slices.Equal(inputsOf(first.Manifest), inputsOf(retried.Manifest)) || retried.Share.Reused {
		t.Fatalf("the retried share rewrote %v, the first attempt %v", inputsOf(retried.Manifest), inputsOf(first.Manifest))
	}
	// An attempt after the manifest was written does nothing and keeps it.
	stored := storedFiles(t, tbl.Store())
	third, err := RunShare(t.Context(), snap, shareOpts, s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if !third.Share.Reused || len(storedFiles(t, tbl.Store())) != len(stored) || !slices.Equal(inputsOf(third.Manifest), inputsOf(first.Manifest)) {
		t.Fatalf("third attempt %+v wrote files or changed the share", third.Share)
	}
	// A share given another version than the pinned one refuses to plan.
	if _, err := RunShare(t.Context(), snap, shareOpts, scaleout.Share{RunID: "run-k", Index: 0, Count: 3, Version: s.Version - 1}, nil); !errors.Is(err, errWrongSnapshot) {
		t.Fatalf("share at the wrong version: %v", err)
	}
}

func TestCommit_DropsTheUnitsWhoseInputsAConcurrentCommitRemoved(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			tbl := demoTable(t, b.open(t, "orders"), 30, 200, true)
			snap := latest(t, tbl)
			v := int64(snap.Version())
			var reps []*ShareReport
			for i := range 3 {
				rep, err := RunShare(t.Context(), snap, shareOpts, scaleout.Share{RunID: "run-c", Index: i, Count: 3, Version: v}, nil)
				if err != nil {
					t.Fatal(err)
				}
				reps = append(reps, rep)
			}
			// Another engine compacts the first day while the shares run: the bins of that day lose inputs.
			if err := concurrentWriters["compact-first-day"](t.Context(), tbl); err != nil {
				t.Fatal(err)
			}
			mid := latest(t, tbl)
			wantRows := rowsAt(t, mid)
			var doomed []string
			doomedShares := map[int]bool{}
			for i, r := range reps {
				for _, u := range r.Manifest.Units {
					if u.Inputs[0].PartitionValues[0].Value == "2024-01-01" {
						doomedShares[i] = true
						for _, a := range u.Adds {
							doomed = append(doomed, a.Path)
						}
					}
				}
			}
			if len(doomed) == 0 {
				t.Fatal("no share compacted the first day; the test needs one")
			}
			crep := commitRun(t, tbl, "run-c", 3, v)
			after := latest(t, tbl)
			sameRows(t, "after the commit", rowsAt(t, after), wantRows)
			if after.Version() != mid.Version()+1 || crep.Op.Outcome != result.Succeeded || crep.Share.UnitsDropped == 0 ||
				crep.Share.SupersededFiles != len(doomed) || len(crep.Share.Dropped) != len(doomedShares) {
				t.Fatalf("versions %d → %d; commit %+v / %+v; want one commit and the first day's %d outputs superseded",
					mid.Version(), after.Version(), crep.Op, crep.Share, len(doomed))
			}
			for _, path := range doomed {
				key, _ := delta.ObjectKey(tbl.Location(), path)
				if _, err := tbl.Store().Stat(t.Context(), key); !errors.Is(err, storage.ErrNotFound) {
					t.Fatalf("superseded output %s still stored (%v)", path, err)
				}
			}
		})
	}
}

// Two manifests that consume the same input (shares that planned differently) never commit both rewrites:
// the second is dropped, and the rows stay exactly the same.
func TestCommit_NeverCommitsTwoRewritesOfOneFile(t *testing.T) {
	tbl := demoTable(t, localStore(t), 12, 200, true)
	snap := latest(t, tbl)
	v := int64(snap.Version())
	wantRows := rowsAt(t, snap)
	var ms []*scaleout.Manifest
	for _, run := range []string{"plan-a", "plan-b"} {
		rep, err := RunShare(t.Context(), snap, shareOpts, scaleout.Share{RunID: run, Index: 0, Count: 1, Version: v}, nil)
		if err != nil {
			t.Fatal(err)
		}
		m := *rep.Manifest
		ms = append(ms, &m)
	}
	ms[1].Index, ms[0].Count, ms[1].Count = 1, 2, 2
	crep, err := scaleout.Commit(t.Context(), tbl, scaleout.Share{RunID: "plan-a", Count: 2, Version: v}, ms)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, "after committing overlapping manifests", latestRows(t, tbl), wantRows)
	if crep.Op.Version == nil || !slices.Equal(crep.Share.Committed, []int{0}) || !slices.Equal(crep.Share.Dropped, []int{1}) {
		t.Fatalf("commit %+v / %+v: want share 0 committed and share 1 dropped", crep.Op, crep.Share)
	}
}
