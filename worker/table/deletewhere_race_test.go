package table_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// once runs fn the first time the hook fires only.
func once(fn func(ctx context.Context) error) func(ctx context.Context) error {
	done := false
	return func(ctx context.Context) error {
		if done {
			return nil
		}
		done = true
		return fn(ctx)
	}
}

func TestDeleteWhere_StartsAgainWhenAConcurrentOptimizeRemovedAFileItRead(t *testing.T) {
	for _, props := range []map[string]string{nil, dvProps} {
		store, _ := newStore(t)
		tbl := dmlTable(t, store, nil, props, 4)
		restore := table.SetBeforeDeleteCommit(once(func(ctx context.Context) error {
			_, err := optimize.Run(ctx, tbl, optimize.Options{}, nil) // compacts the four files into one
			return err
		}))
		t.Cleanup(restore)
		rep := deleteWhere(t, tbl, "id IN (5, 105, 399)", table.DeleteWhereOptions{})
		if rep.Replans != 1 || !rep.Committed || rep.RowsDeleted != 3 {
			t.Fatalf("report %+v, want one fresh start after the OPTIMIZE", rep)
		}
		snap := latestSnap(t, tbl)
		if got, want := sortedIDs(t, snap), wantIDs(400, func(id int64) bool { return id == 5 || id == 105 || id == 399 }); !slices.Equal(got, want) {
			t.Fatalf("rows after delete racing optimize: %d, want %d", len(got), len(want))
		}
		if n := countObjects(t, store, "deletion_vector_"); props != nil && n != 1 {
			t.Errorf("%d DV files, want only the committed attempt's (the first one's aborted)", n)
		}
	}
}

func TestDeleteWhere_ConflictsWithAConcurrentNonBlindAddThePredicateMightMatch(t *testing.T) {
	store, _ := newStore(t)
	tbl := dmlTable(t, store, nil, nil, 2)
	// A concurrent MERGE-like commit (not a blind append) adds a file holding id 7.
	defer table.SetBeforeDeleteCommit(once(func(ctx context.Context) error {
		snap, err := tbl.Latest(ctx)
		if err != nil {
			return err
		}
		return commitRows(ctx, snap, delta.OpMerge, "MERGE", []types.Struct{dmlRow(7)})
	}))()
	e, _ := expr.Parse("id < 10")
	_, err := table.DeleteWhere(t.Context(), tbl, e, table.DeleteWhereOptions{})
	if !errors.Is(err, delta.ErrConcurrentAppend) {
		t.Fatalf("err = %v, want a ConcurrentAppend conflict", err)
	}
	if got := len(sortedIDs(t, latestSnap(t, tbl))); got != 201 {
		t.Fatalf("%d rows: the delete must not have committed", got)
	}
	if n := countObjects(t, store, "") - countObjects(t, store, "_delta_log/"); n != 3 {
		t.Errorf("%d data files, want the three committed ones (the delete's rewrite deleted again)", n)
	}
}

func TestDeleteWhere_ABlindAppendRacingItIsSerialisedAfterTheDelete(t *testing.T) {
	store, _ := newStore(t)
	tbl := dmlTable(t, store, nil, nil, 2)
	defer table.SetBeforeDeleteCommit(once(func(ctx context.Context) error {
		snap, err := tbl.Latest(ctx)
		if err != nil {
			return err
		}
		_, err = table.Append(ctx, snap, []types.Struct{dmlRow(7)}, table.WriteOptions{})
		return err
	}))()
	rep := deleteWhere(t, tbl, "id < 10", table.DeleteWhereOptions{})
	if rep.RowsDeleted != 10 || rep.Replans != 0 {
		t.Fatalf("report %+v", rep)
	}
	ids := sortedIDs(t, latestSnap(t, tbl))
	if len(ids) != 191 || ids[0] != 7 {
		t.Fatalf("%d rows starting at %d: want the appended row 7 kept (append after delete)", len(ids), ids[0])
	}
}

// commitRows writes rows as new files and commits them with kind (not as a blind append).
func commitRows(ctx context.Context, snap *delta.Snapshot, kind delta.Operation, op string, rows []types.Struct) error {
	w, err := table.NewWriter(ctx, snap, table.WriteOptions{DataChange: true})
	if err != nil {
		return err
	}
	if err := w.Write(rows); err != nil {
		return err
	}
	adds, err := w.Close()
	if err != nil {
		return err
	}
	tx, err := snap.Begin(kind, delta.TxnOptions{Operation: op})
	if err != nil {
		return err
	}
	tx.ReadWholeTable() // it read the table: not a blind append
	tx.Add(adds...)
	_, err = tx.Commit(ctx)
	return err
}

// A data file that does not decode stops the delete with an error naming it, whichever reader
// (of the files read in parallel) meets it; nothing is committed.
func TestDeleteWhere_ACorruptFileStopsItNamingTheFile(t *testing.T) {
	store, _ := newStore(t)
	tbl := dmlTable(t, store, nil, nil, 4)
	snap := latestSnap(t, tbl)
	bad := snap.Files()[2]
	if err := store.Put(t.Context(), bad.Path, []byte("not parquet at all, but long enough to have a footer?")); err != nil {
		t.Fatal(err)
	}
	e, _ := expr.Parse("v != 'x'")
	_, err := table.DeleteWhere(t.Context(), tbl, e, table.DeleteWhereOptions{})
	if !errors.Is(err, parquetio.ErrCorruptFile) || !strings.Contains(err.Error(), bad.Path) {
		t.Fatalf("err = %v, want a corrupt-file error naming %s", err, bad.Path)
	}
	if v := latestSnap(t, tbl).Version(); v != snap.Version() {
		t.Fatalf("version %d after a failed delete", v)
	}
}
