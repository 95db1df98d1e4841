package table_test

import (
	"context"
	"errors"
	"io/fs"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func newStore(t *testing.T) (*storage.LocalStore, string) {
	t.Helper()
	dir := t.TempDir()
	s, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s, dir
}

func scanAll(t *testing.T, snap *delta.Snapshot, opts table.ScanOptions) ([]types.Struct, table.ScanStats) {
	t.Helper()
	scan, err := table.NewScan(snap, opts)
	if err != nil {
		t.Fatal(err)
	}
	var rows []types.Struct
	st, err := scan.Run(t.Context(), func(b []types.Struct) error {
		rows = append(rows, b...)
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return rows, st
}

func keys(rows []types.Struct) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = table.CanonicalRow(r)
	}
	slices.Sort(out)
	return out
}

var fileName = regexp.MustCompile(`^part-\d{5}-[0-9a-f-]{36}\.c000\.zstd\.parquet$`)

func TestWriter_RoundTripsEveryTypeAcrossPartitionsAndColumnMapping(t *testing.T) {
	rows := tabletest.AllTypesRows(300)
	for _, mode := range []delta.ColumnMappingMode{delta.ColumnMappingNone, delta.ColumnMappingName, delta.ColumnMappingID} {
		for _, parts := range [][]string{nil, {"part", "pday"}} {
			t.Run(string(mode)+"/partitions="+strings.Join(parts, ","), func(t *testing.T) {
				store, dir := newStore(t)
				tbl, snap, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), parts, mode, nil)
				if err != nil {
					t.Fatal(err)
				}
				res, err := table.Append(t.Context(), snap, rows, table.WriteOptions{})
				if err != nil {
					t.Fatal(err)
				}
				if res.Commit.Version != 1 {
					t.Errorf("committed version %d, want 1", res.Commit.Version)
				}
				snap, err = tbl.Latest(t.Context())
				if err != nil {
					t.Fatal(err)
				}
				got, st := scanAll(t, snap, table.ScanOptions{})
				if !slices.Equal(keys(got), keys(rows)) {
					t.Fatalf("rows read back differ from rows written (%d vs %d)", len(got), len(rows))
				}
				if st.FilesRead != snap.NumFiles() {
					t.Errorf("read %d files of %d", st.FilesRead, snap.NumFiles())
				}
				combos := map[string]bool{"": true}
				if parts != nil {
					combos = map[string]bool{}
					for _, r := range rows {
						combos[table.CanonicalRow(types.Struct{r[20], r[21]})] = true
					}
				}
				if snap.NumFiles() != len(combos) {
					t.Errorf("%d files, want one per partition: %d", snap.NumFiles(), len(combos))
				}
				for _, f := range snap.Files() {
					if !fileName.MatchString(filepath.Base(f.Path)) {
						t.Errorf("file name %q is not Spark-like", f.Path)
					}
					if f.Stats == "" || !strings.Contains(f.Stats, `"numRecords"`) {
						t.Errorf("%s has no stats", f.Path)
					}
					key, err := delta.ObjectKey(tbl.Location(), f.Path)
					if err != nil {
						t.Fatal(err)
					}
					if _, err := os.Stat(filepath.Join(dir, key)); err != nil {
						t.Errorf("log path %q does not name a file: %v", f.Path, err)
					}
				}
			})
		}
	}
}

func TestWriter_NamesPartitionDirectoriesLikeSpark(t *testing.T) {
	store, dir := newStore(t)
	tbl, snap, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), []string{"part", "pday"}, delta.ColumnMappingNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.Append(t.Context(), snap, tabletest.AllTypesRows(14), table.WriteOptions{}); err != nil {
		t.Fatal(err)
	}
	var dirs []string
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && d.IsDir() && strings.HasPrefix(d.Name(), "pday=") {
			rel, _ := filepath.Rel(dir, p)
			dirs = append(dirs, rel)
		}
		return nil
	})
	for _, want := range []string{"part=a%3Db%2Fc/pday=2023-05-23", "part=sp ace/pday=__HIVE_DEFAULT_PARTITION__",
		"part=pct%2525/pday=2023-05-25", "part=colon%3Ax/pday=2023-05-24", "part=ünï/pday=__HIVE_DEFAULT_PARTITION__",
		"part=__HIVE_DEFAULT_PARTITION__/pday=__HIVE_DEFAULT_PARTITION__"} {
		if !slices.Contains(dirs, want) {
			t.Errorf("no directory %q among %q", want, dirs)
		}
	}
	snap, err = tbl.Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	for _, f := range snap.Files() {
		pv, _ := f.PartitionValues.Get("part")
		if strings.Contains(f.Path, "HIVE_DEFAULT_PARTITION__/pday") && !pv.IsNull() {
			t.Errorf("%s: null partition directory but value %q", f.Path, pv.Value)
		}
	}
}

func TestWriter_RollsOverAtTheTargetFileSize(t *testing.T) {
	store, _ := newStore(t)
	tbl, snap, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), nil, delta.ColumnMappingNone,
		map[string]string{delta.PropCompressionCodec: "snappy"})
	if err != nil {
		t.Fatal(err)
	}
	rows := tabletest.AllTypesRows(20000)
	w, err := table.NewWriter(t.Context(), snap, table.WriteOptions{TargetFileSize: 256 << 10, DataChange: true})
	if err != nil {
		t.Fatal(err)
	}
	for i := 0; i < len(rows); i += 500 {
		if err := w.Write(rows[i : i+500]); err != nil {
			t.Fatal(err)
		}
	}
	adds, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	if len(adds) < 3 {
		t.Fatalf("%d files for ~%d bytes at a 256 KiB target", len(adds), adds[0].Size)
	}
	var total int64
	for _, a := range adds {
		total += *mustNumRecords(t, a)
		if !strings.HasSuffix(a.Path, ".c000.snappy.parquet") {
			t.Errorf("%s: codec not in the name", a.Path)
		}
		if a.Size > 256<<10*3/2 {
			t.Errorf("%s is %d bytes, far above the 256 KiB target", a.Path, a.Size)
		}
	}
	if total != int64(len(rows)) {
		t.Errorf("files hold %d rows, want %d", total, len(rows))
	}
	tx, err := snap.Begin(delta.OpAppend, delta.TxnOptions{Operation: "WRITE"})
	if err != nil {
		t.Fatal(err)
	}
	tx.Add(adds...)
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	snap, _ = tbl.Latest(t.Context())
	got, _ := scanAll(t, snap, table.ScanOptions{})
	if !slices.Equal(keys(got), keys(rows)) {
		t.Error("rows differ after roll-over")
	}
}

func mustNumRecords(t *testing.T, a *delta.AddFile) *int64 {
	n, ok := delta.NumRecords(a.Stats)
	if !ok {
		t.Fatalf("%s: no numRecords", a.Path)
	}
	return &n
}

func TestWriter_AbortDeletesEveryFileItWrote(t *testing.T) {
	store, dir := newStore(t)
	_, snap, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), []string{"part"}, delta.ColumnMappingNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, err := table.NewWriter(t.Context(), snap, table.WriteOptions{MaxOpenFiles: 2})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(tabletest.AllTypesRows(50)); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(t.Context()); err != nil {
		t.Fatal(err)
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			t.Errorf("aborted write left %s", p)
		}
		return nil
	})
	if err := w.Write(tabletest.AllTypesRows(1)); err == nil {
		t.Error("Write after Abort succeeded")
	}
}

func TestWriter_RefusesNullInANotNullColumn(t *testing.T) {
	store, _ := newStore(t)
	_, snap, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), nil, delta.ColumnMappingNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	w, _ := table.NewWriter(t.Context(), snap, table.WriteOptions{})
	row := make(types.Struct, 22)
	if err := w.Write([]types.Struct{row}); err == nil || !strings.Contains(err.Error(), "id is NOT NULL") {
		t.Errorf("err = %v", err)
	}
	w.Abort(context.Background())
}

// appendBatches commits each batch as its own file.
func appendBatches(t *testing.T, tbl *delta.Table, batches ...[]types.Struct) *delta.Snapshot {
	t.Helper()
	for _, b := range batches {
		snap, err := tbl.Latest(t.Context())
		if err != nil {
			t.Fatal(err)
		}
		if _, err := table.Append(t.Context(), snap, b, table.WriteOptions{}); err != nil {
			t.Fatal(err)
		}
	}
	snap, err := tbl.Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func TestScan_SkipsFilesByStatsAndPartitionsAndFiltersRowsExactly(t *testing.T) {
	store, _ := newStore(t)
	tbl, _, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), []string{"part"}, delta.ColumnMappingName, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := tabletest.AllTypesRows(70)
	snap := appendBatches(t, tbl, rows[:35], rows[35:])
	cases := []struct {
		where       string
		rows, files int
	}{
		{"id = 40", 1, 6},                   // the first commit's files end below 40; the second's all span it
		{"id >= 35 AND part = 'ünï'", 5, 1}, // partition value, then stats
		{"part IS NULL", 20, 2},             // one null partition per commit
		{"id < 0", 0, 0},                    //
		{"ts > '2100-01-01'", 0, 0},         //
		{"id IN (1, 69)", 2, 3},             // [0,28] and [1,29] of commit 1, the null partition's [40,69]
	}
	for _, c := range cases {
		t.Run(c.where, func(t *testing.T) {
			e, err := expr.Parse(c.where)
			if err != nil {
				t.Fatal(err)
			}
			got, st := scanAll(t, snap, table.ScanOptions{Where: e})
			want := 0
			p, _ := e.Bind(snap.Schema())
			for _, r := range rows {
				if p.Eval(r) {
					want++
				}
			}
			if len(got) != want || len(got) != c.rows {
				t.Errorf("%d rows, want %d (brute force %d)", len(got), c.rows, want)
			}
			if st.FilesRead != c.files {
				t.Errorf("read %d files, want %d (skipped %d)", st.FilesRead, c.files, st.FilesSkipped)
			}
		})
	}
}

func TestScan_ProjectsColumnsInTheRequestedOrder(t *testing.T) {
	store, _ := newStore(t)
	tbl, _, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), []string{"part"}, delta.ColumnMappingID, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := tabletest.AllTypesRows(20)
	snap := appendBatches(t, tbl, rows)
	got, _ := scanAll(t, snap, table.ScanOptions{Columns: []string{"part", "ID"}})
	var want []types.Struct
	for _, r := range rows {
		want = append(want, types.Struct{r[20], r[0]})
	}
	if !slices.Equal(keys(got), keys(want)) {
		t.Errorf("projection differs: %v", keys(got)[:3])
	}
	if _, err := table.NewScan(snap, table.ScanOptions{Columns: []string{"nope"}}); err == nil || !strings.Contains(err.Error(), `no column "nope"`) {
		t.Errorf("unknown column: err = %v", err)
	}
	onlyPart, _ := scanAll(t, snap, table.ScanOptions{Columns: []string{"part"}})
	if len(onlyPart) != len(rows) {
		t.Errorf("partition-only scan returned %d rows, want %d", len(onlyPart), len(rows))
	}
}

func TestScan_StopsWhenTheContextIsCancelled(t *testing.T) {
	store, _ := newStore(t)
	tbl, _, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), nil, delta.ColumnMappingNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := appendBatches(t, tbl, tabletest.AllTypesRows(10), tabletest.AllTypesRows(10))
	ctx, cancel := context.WithCancel(t.Context())
	scan, _ := table.NewScan(snap, table.ScanOptions{})
	_, err = scan.Run(ctx, func([]types.Struct) error { cancel(); return nil })
	if !errors.Is(err, context.Canceled) {
		t.Errorf("err = %v, want context.Canceled", err)
	}
}

func TestRewriteOutputs_TurnARewriteIntoAddFilesOfTheBin(t *testing.T) {
	store, _ := newStore(t)
	tbl, _, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), []string{"part"}, delta.ColumnMappingID, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := tabletest.AllTypesRows(70)
	snap := appendBatches(t, tbl, rows[:30], rows[30:])
	before, _ := scanAll(t, snap, table.ScanOptions{})
	// The bin: the files of partition "plain".
	var bin []*delta.AddFile
	for _, f := range snap.Files() {
		if pv, _ := f.PartitionValues.Get(f.PartitionValues[0].Column); pv.Value == "sp ace" {
			bin = append(bin, f)
		}
	}
	if len(bin) != 2 {
		t.Fatalf("bin has %d files", len(bin))
	}
	outs, err := table.NewRewriteOutputs(t.Context(), snap, bin[0].PartitionValues, table.WriteOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var inputs []parquetio.RewriteInput
	for _, f := range bin {
		key, _ := delta.ObjectKey(tbl.Location(), f.Path)
		r, err := store.Open(t.Context(), key)
		if err != nil {
			t.Fatal(err)
		}
		defer r.Close()
		inputs = append(inputs, parquetio.RewriteInput{File: r})
	}
	res, err := parquetio.Rewrite(t.Context(), inputs, outs.Create, outs.Options())
	if err != nil {
		t.Fatal(err)
	}
	adds, err := outs.AddFiles(res)
	if err != nil {
		t.Fatal(err)
	}
	if len(adds) != 1 || adds[0].DataChange || !strings.Contains(adds[0].Path, "=sp%20ace/") {
		t.Fatalf("adds = %+v", adds)
	}
	tx, err := snap.Begin(delta.OpRewrite, delta.TxnOptions{Operation: "OPTIMIZE"})
	if err != nil {
		t.Fatal(err)
	}
	tx.Remove(false, bin...)
	tx.Add(adds...)
	if _, err := tx.Commit(t.Context()); err != nil {
		t.Fatal(err)
	}
	snap, _ = tbl.Latest(t.Context())
	after, _ := scanAll(t, snap, table.ScanOptions{})
	if !slices.Equal(keys(before), keys(after)) {
		t.Error("rows changed by the rewrite")
	}
	if snap.NumFiles() != 12-1 {
		t.Errorf("%d files after compacting two into one, want 11", snap.NumFiles())
	}
}

func TestScan_DeliversRowsInFileOrderWhateverTheParallelism(t *testing.T) {
	store, _ := newStore(t)
	tbl, _, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), []string{"part"}, delta.ColumnMappingNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows := tabletest.AllTypesRows(200)
	snap := appendBatches(t, tbl, rows[:70], rows[70:140], rows[140:])
	var runs [][]string
	for _, par := range []int{1, 2, 7} {
		scan, err := table.NewScan(snap, table.ScanOptions{Parallelism: par, BatchSize: 3})
		if err != nil {
			t.Fatal(err)
		}
		var got []string
		var files []string
		st, err := scan.Each(t.Context(), func(f *delta.AddFile, b []types.Struct) error {
			if len(files) == 0 || files[len(files)-1] != f.Path {
				files = append(files, f.Path)
			}
			for _, r := range b {
				got = append(got, table.CanonicalRow(r))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		if st.Rows != 200 || st.FilesRead != snap.NumFiles() {
			t.Errorf("parallelism %d: %+v", par, st)
		}
		var want []string
		for _, f := range snap.Files() {
			want = append(want, f.Path)
		}
		if !slices.Equal(files, want) {
			t.Errorf("parallelism %d: files delivered out of order: %v", par, files)
		}
		runs = append(runs, got)
	}
	for i := 1; i < len(runs); i++ {
		if !slices.Equal(runs[0], runs[i]) {
			t.Errorf("run %d delivered rows in another order than run 0", i)
		}
	}
	// An error from the callback stops the scan and is returned as is.
	stop := errors.New("stop")
	scan, _ := table.NewScan(snap, table.ScanOptions{Parallelism: 4, BatchSize: 1})
	if _, err := scan.Run(t.Context(), func([]types.Struct) error { return stop }); !errors.Is(err, stop) {
		t.Errorf("err = %v, want the callback's", err)
	}
}

// failingCommits makes every commit write fail, as a lost race or a refused write would.
type failingCommits struct{ storage.Store }

func (failingCommits) PutIfAbsent(context.Context, string, []byte) error {
	return errors.New("injected: the commit write failed before reaching storage")
}

func TestAppend_DeletesItsFilesWhenTheCommitDoesNotLand(t *testing.T) {
	store, dir := newStore(t)
	if _, _, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), []string{"part"}, delta.ColumnMappingNone, nil); err != nil {
		t.Fatal(err)
	}
	broken, err := delta.NewTable(failingCommits{store}).Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	if _, err := table.Append(t.Context(), broken, tabletest.AllTypesRows(30), table.WriteOptions{}); err == nil {
		t.Fatal("append succeeded although every commit write fails")
	}
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			t.Errorf("failed append left %s", p)
		}
		return nil
	})
}
