package table_test

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

var dvProps = map[string]string{delta.PropEnableDeletionVectors: "true"}

// checkDV decodes a descriptor with both decoders and compares them with the intended positions.
func checkDV(t *testing.T, store storage.Store, dv *delta.DeletionVectorDescriptor, want []uint64) {
	t.Helper()
	got, err := specDecodeDV(t.Context(), store, dv)
	if err != nil {
		t.Fatalf("protocol decoder: %v (descriptor %+v)", err, dv)
	}
	if !slices.Equal(got, want) {
		t.Fatalf("protocol decoder: positions %v, want %v", got, want)
	}
	bm, err := delta.LoadDeletionVector(t.Context(), store, dv)
	if err != nil {
		t.Fatalf("project reader: %v", err)
	}
	if !slices.Equal(bm.ToArray(), want) {
		t.Fatalf("project reader: positions %v, want %v", bm.ToArray(), want)
	}
	if dv.Cardinality != int64(len(want)) || dv.MaxRowIndex == nil || *dv.MaxRowIndex != int64(want[len(want)-1]) {
		t.Fatalf("descriptor %+v: cardinality or maxRowIndex wrong for %d positions up to %d", dv, len(want), want[len(want)-1])
	}
}

func fileOf(t *testing.T, snap *delta.Snapshot, firstID int64) *delta.AddFile {
	t.Helper()
	for _, f := range snap.Files() {
		st, ok, err := snap.Stats(f)
		if err != nil || !ok {
			t.Fatalf("stats of %s: %v", f.Path, err)
		}
		if c, ok := st.Column("id"); ok && c.Min == any(firstID) {
			return f
		}
	}
	t.Fatalf("no file starts at id %d", firstID)
	return nil
}

func rangeU(from, to uint64) []uint64 {
	var out []uint64
	for v := from; v < to; v++ {
		out = append(out, v)
	}
	return out
}

func TestDeleteWhere_DeletionVectorsAreMergedSharedAndDecodeByTheProtocol(t *testing.T) {
	store, _ := newStore(t)
	tbl := dmlTable(t, store, nil, dvProps, 3)
	v0 := latestSnap(t, tbl)

	// One commit touching three files: three DVs in one DV file, at different offsets.
	rep := deleteWhere(t, tbl, "id IN (1, 2, 150, 299)", table.DeleteWhereOptions{})
	if rep.FilesTouched != 3 || rep.DVsWritten != 3 || rep.FilesRewritten != 0 || rep.RowsDeleted != 4 {
		t.Fatalf("report %+v", rep)
	}
	v1 := latestSnap(t, tbl)
	var dvPath string
	offsets := map[int32]bool{}
	for first, want := range map[int64][]uint64{0: {1, 2}, 100: {50}, 200: {99}} {
		f := fileOf(t, v1, first)
		dv := f.DeletionVector
		if dv == nil || dv.StorageType != "u" || dv.Offset == nil {
			t.Fatalf("file at %d: descriptor %+v, want one in a DV file", first, dv)
		}
		checkDV(t, store, dv, want)
		if dvPath != "" && dv.PathOrInlineDv != dvPath {
			t.Errorf("one commit wrote two DV files (%s, %s)", dvPath, dv.PathOrInlineDv)
		}
		dvPath = dv.PathOrInlineDv
		offsets[*dv.Offset] = true
		old := fileOf(t, v0, first)
		if f.Path != old.Path || f.Size != old.Size || f.ModificationTime != old.ModificationTime || !f.DataChange {
			t.Errorf("file at %d: add %+v, want the same file with a DV", first, f)
		}
		if !strings.Contains(f.Stats, `"tightBounds":false`) || !strings.HasPrefix(f.Stats, `{"numRecords":100,`) {
			t.Errorf("file at %d: stats %s, want wide bounds and the physical row count", first, f.Stats)
		}
	}
	if len(offsets) != 3 {
		t.Errorf("DV offsets %v, want three records", offsets)
	}
	var removes, adds int
	for _, a := range commitActions(t, store, v1.Version()) {
		switch {
		case a.Remove != nil:
			removes++
			if a.Remove.DeletionVector != nil || !a.Remove.DataChange {
				t.Errorf("remove %+v: want the old (path, no DV) with dataChange", a.Remove)
			}
		case a.Add != nil:
			adds++
		case a.CommitInfo != nil:
			m := a.CommitInfo.OperationMetrics
			if m["numDeletionVectorsAdded"] != "3" || m["numRemovedFiles"] != "0" || m["numDeletedRows"] != "4" || m["numAddedFiles"] != "0" {
				t.Errorf("metrics %v", m)
			}
		}
	}
	if removes != 3 || adds != 3 {
		t.Errorf("%d removes and %d adds, want 3 each", removes, adds)
	}

	// A second delete merges with the file's DV (rows already deleted are not matched again).
	rep = deleteWhere(t, tbl, "id >= 140 AND id < 160", table.DeleteWhereOptions{})
	if rep.RowsDeleted != 19 || rep.DVsWritten != 1 {
		t.Fatalf("report %+v", rep)
	}
	v2 := latestSnap(t, tbl)
	oldDV := fileOf(t, v1, 100).DeletionVector
	checkDV(t, store, fileOf(t, v2, 100).DeletionVector, rangeU(40, 60))
	for _, a := range commitActions(t, store, v2.Version()) {
		if a.Remove != nil && a.Remove.DeletionVector.UniqueID() != oldDV.UniqueID() {
			t.Errorf("remove carries DV %q, want the replaced %q", a.Remove.DeletionVector.UniqueID(), oldDV.UniqueID())
		}
		if a.CommitInfo != nil && a.CommitInfo.OperationMetrics["numDeletionVectorsUpdated"] != "1" {
			t.Errorf("metrics %v", a.CommitInfo.OperationMetrics)
		}
	}

	// Deleting the rest of a file removes it, DV and all, and adds nothing.
	rep = deleteWhere(t, tbl, "id >= 200", table.DeleteWhereOptions{})
	if rep.FilesRemoved != 1 || rep.DVsWritten != 0 || rep.RowsDeleted != 99 {
		t.Fatalf("report %+v", rep)
	}
	v3 := latestSnap(t, tbl)
	for _, a := range commitActions(t, store, v3.Version()) {
		if a.Add != nil {
			t.Errorf("emptied file re-added: %+v", a.Add)
		}
		if a.Remove != nil && a.Remove.DeletionVector == nil {
			t.Errorf("remove of the emptied file lacks its DV")
		}
	}
	gone := func(id int64) bool { return id == 1 || id == 2 || id >= 140 && id < 160 || id >= 200 }
	if got, want := sortedIDs(t, v3), wantIDs(300, gone); !slices.Equal(got, want) {
		t.Fatalf("rows after deletes: %v, want %v", got, want)
	}
	for v, n := range map[delta.Version]int{v0.Version(): 300, v1.Version(): 296, v2.Version(): 277} {
		snap, err := tbl.At(t.Context(), v)
		if err != nil {
			t.Fatal(err)
		}
		if got := len(sortedIDs(t, snap)); got != n {
			t.Errorf("time travel to %d: %d rows, want %d", v, got, n)
		}
	}
}

func TestDeleteRows_InlineDVsAndEveryContainerKindDecodeByTheProtocol(t *testing.T) {
	store, _ := newStore(t)
	tbl, snap, err := createDML(t, store, dvProps)
	if err != nil {
		t.Fatal(err)
	}
	var rows []types.Struct
	for i := range 70000 {
		rows = append(rows, dmlRow(int64(i)))
	}
	if _, err := table.Append(t.Context(), snap, rows, table.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	snap = latestSnap(t, tbl)
	f := snap.Files()[0]
	// An array container (few values), a bitmap container (every other row of 10,000), a run
	// container (a range) in the second 64K block, in one DV.
	positions := roaring64.BitmapOf(3, 17, 4000)
	for v := uint64(10000); v < 20000; v += 2 {
		positions.Add(v)
	}
	positions.AddRange(66000, 69000)
	tx, err := snap.Begin(delta.OpMerge, delta.TxnOptions{Operation: "DELETE"})
	if err != nil {
		t.Fatal(err)
	}
	res, err := table.DeleteRows(t.Context(), tx, []table.FileDeletes{{File: f, Positions: positions}}, table.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(errors.Join(err, res.Abort(t.Context())))
	}
	after := latestSnap(t, tbl)
	checkDV(t, store, after.Files()[0].DeletionVector, positions.ToArray())
	if got := len(idsInOrder(t, after)); got != 70000-int(positions.GetCardinality()) {
		t.Fatalf("%d rows after the delete", got)
	}

	// Small bitmaps go inline when asked; the log then holds them and no DV file is written.
	before := countObjects(t, store, "deletion_vector_")
	rep := deleteWhere(t, tbl, "id IN (5, 6, 7)", table.DeleteWhereOptions{Write: table.WriteOptions{DVInlineMaxBytes: 64 << 10}})
	dv := latestSnap(t, tbl).Files()[0].DeletionVector
	if rep.DVsWritten != 1 || dv.StorageType != "i" || dv.Offset != nil || countObjects(t, store, "deletion_vector_") != before {
		t.Fatalf("report %+v, descriptor %+v: want an inline DV and no new DV file", rep, dv)
	}
	positions.AddMany([]uint64{5, 6, 7})
	checkDV(t, store, dv, positions.ToArray())
}

func createDML(t *testing.T, store storage.Store, props map[string]string) (*delta.Table, *delta.Snapshot, error) {
	t.Helper()
	tbl := delta.NewTable(store)
	snap, err := tbl.Create(t.Context(), delta.CreateOptions{Schema: dmlSchema(), Configuration: props})
	return tbl, snap, err
}

// A table written by Databricks (kernel-rs/table-with-dv-small: values 0-9, rows 0 and 9 deleted by a
// DV in a DV file): deleting more rows merges into Spark's DV.
func TestDeleteWhere_MergesIntoASparkWrittenDeletionVector(t *testing.T) {
	corpus := os.Getenv("DELTA_CONFORMANCE_DIR")
	if corpus == "" {
		corpus = filepath.Join("..", "..", "..", "shared", "delta-conformance")
	}
	dir := t.TempDir()
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(corpus, "kernel-rs", "table-with-dv-small", "delta"))); err != nil {
		t.Fatalf("copy the conformance table (set DELTA_CONFORMANCE_DIR): %v", err)
	}
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	tbl := delta.NewTable(store)
	sparkDV := latestSnap(t, tbl).Files()[0].DeletionVector
	e, _ := expr.Parse("value = 0")
	if rep, err := table.DeleteWhere(t.Context(), tbl, e, table.DeleteWhereOptions{}); err != nil || rep.Committed {
		t.Fatalf("deleting a row Spark's DV already deleted: %+v, %v; want no commit", rep, err)
	}
	rep := deleteWhere(t, tbl, "value IN (3, 4, 9)", table.DeleteWhereOptions{})
	if rep.RowsDeleted != 2 || rep.DVsWritten != 1 {
		t.Fatalf("report %+v", rep)
	}
	snap := latestSnap(t, tbl)
	checkDV(t, store, snap.Files()[0].DeletionVector, []uint64{0, 3, 4, 9})
	rows, _ := scanAll(t, snap, table.ScanOptions{})
	var got []int32
	for _, r := range rows {
		got = append(got, r[0].(int32))
	}
	slices.Sort(got)
	if !slices.Equal(got, []int32{1, 2, 5, 6, 7, 8}) {
		t.Fatalf("rows %v", got)
	}
	for _, a := range commitActions(t, store, snap.Version()) {
		if a.Remove != nil && a.Remove.DeletionVector.UniqueID() != sparkDV.UniqueID() {
			t.Errorf("remove carries %q, want Spark's DV %q", a.Remove.DeletionVector.UniqueID(), sparkDV.UniqueID())
		}
	}

	// With DVs switched off, copy-on-write drops the DV's rows and the new ones alike.
	tx, err := snap.Begin(delta.OpMetadataChange, delta.TxnOptions{Operation: "SET TBLPROPERTIES"})
	if err != nil {
		t.Fatal(err)
	}
	md := snap.Metadata()
	md.Configuration = maps.Clone(md.Configuration)
	md.Configuration[delta.PropEnableDeletionVectors] = "false"
	if err := tx.UpdateMetadata(md); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	rep = deleteWhere(t, tbl, "value = 5", table.DeleteWhereOptions{})
	snap = latestSnap(t, tbl)
	if rep.FilesRewritten != 1 || rep.DVsWritten != 0 || rep.RowsCopied != 5 || snap.Files()[0].DeletionVector != nil {
		t.Fatalf("report %+v, file %+v: want a copy-on-write rewrite without DV", rep, snap.Files()[0])
	}
	if n, _ := delta.NumRecords(snap.Files()[0].Stats); n != 5 {
		t.Errorf("rewritten file holds %d rows, want the 5 survivors", n)
	}
	rows, _ = scanAll(t, snap, table.ScanOptions{})
	got = got[:0]
	for _, r := range rows {
		got = append(got, r[0].(int32))
	}
	slices.Sort(got)
	if !slices.Equal(got, []int32{1, 2, 6, 7, 8}) {
		t.Fatalf("rows %v after the copy-on-write delete", got)
	}
}

func TestDeleteWhere_RefusesTablesWithChangeDataFeed(t *testing.T) {
	store, _ := newStore(t)
	tbl := dmlTable(t, store, nil, map[string]string{delta.PropEnableCDF: "true"}, 1)
	e, _ := expr.Parse("id < 10")
	_, err := table.DeleteWhere(t.Context(), tbl, e, table.DeleteWhereOptions{})
	if !errors.Is(err, delta.ErrUnsupportedTable) || !strings.Contains(err.Error(), "change data feed") {
		t.Fatalf("err = %v, want the gate's refusal naming the change data feed", err)
	}
	if n := len(sortedIDs(t, latestSnap(t, tbl))); n != 100 {
		t.Fatalf("%d rows left", n)
	}
}

func TestDeleteRows_AbortDeletesTheDVFile(t *testing.T) {
	store, _ := newStore(t)
	tbl := dmlTable(t, store, nil, dvProps, 2)
	snap := latestSnap(t, tbl)
	tx, err := snap.Begin(delta.OpMerge, delta.TxnOptions{Operation: "DELETE"})
	if err != nil {
		t.Fatal(err)
	}
	var deletes []table.FileDeletes
	for _, f := range snap.Files() {
		deletes = append(deletes, table.FileDeletes{File: f, Positions: roaring64.BitmapOf(1, 2)})
	}
	res, err := table.DeleteRows(t.Context(), tx, deletes, table.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if n := countObjects(t, store, "deletion_vector_"); n != 1 || res.DVsWritten != 2 {
		t.Fatalf("%d DV files, %d DVs; want both DVs in one file", n, res.DVsWritten)
	}
	if err := res.Abort(t.Context()); err != nil {
		t.Fatal(err)
	}
	if n := countObjects(t, store, "deletion_vector_"); n != 0 {
		t.Fatalf("%d DV files left after Abort", n)
	}
}

// The DVs a delete wrote survive a checkpoint: a table loaded from it reads the same rows.
func TestDeleteWhere_DeletionVectorsSurviveACheckpoint(t *testing.T) {
	store, _ := newStore(t)
	tbl := dmlTable(t, store, []string{"p"}, dvProps, 2)
	deleteWhere(t, tbl, "id IN (4, 5, 104, 150)", table.DeleteWhereOptions{})
	deleteWhere(t, tbl, "id >= 190", table.DeleteWhereOptions{Write: table.WriteOptions{DVInlineMaxBytes: 1 << 10}})
	snap := latestSnap(t, tbl)
	want := sortedIDs(t, snap)
	if err := tbl.Checkpoint(t.Context(), snap); err != nil {
		t.Fatal(err)
	}
	fresh := latestSnap(t, delta.NewTable(store))
	if fresh.Version() != snap.Version() || len(fresh.Files()) != len(snap.Files()) {
		t.Fatalf("reloaded version %d with %d files, want %d with %d", fresh.Version(), len(fresh.Files()), snap.Version(), len(snap.Files()))
	}
	for _, f := range snap.Files() {
		g, ok := fresh.File(f.Key())
		if !ok || g.DeletionVector == nil || *g.DeletionVector.MaxRowIndex != *f.DeletionVector.MaxRowIndex {
			t.Fatalf("file %s (DV %s) not reloaded from the checkpoint as it was", f.Path, f.Key().DVID)
		}
	}
	if got := sortedIDs(t, fresh); !slices.Equal(got, want) {
		t.Fatalf("rows after reloading from the checkpoint: %d, want %d", len(got), len(want))
	}
}
