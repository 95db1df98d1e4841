package vacuum

import (
	"errors"
	"maps"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
)

var backends = []struct {
	name string
	open func(t *testing.T) storage.Store
}{
	{"local", localStore},
	{"s3", func(t *testing.T) storage.Store {
		srv := s3server.Start(t)
		s, err := storage.Open(t.Context(), srv.Location("orders"), storage.Config{S3: srv.S3Config()})
		if err != nil {
			t.Fatal(err)
		}
		return s
	}},
}

func localStore(t *testing.T) storage.Store {
	s, err := storage.NewLocal(filepath.Join(t.TempDir(), "orders"))
	if err != nil {
		t.Fatal(err)
	}
	return s
}

// extras are objects a table directory accumulates besides its data files, and whether a vacuum
// (with everything older than the retention) deletes them.
var extras = map[string]bool{
	"orphan.parquet":                       true,  // a failed write's file
	"order_date=2024-01-01/orphan.parquet": true,  // same, inside a partition
	"_change_data/cdc-00000.parquet":       true,  // change data files age out like data files
	"_delta_index/index.bin":               true,  // not hidden either
	"_hidden/x.parquet":                    false, // hidden directory
	".staging.parquet":                     false, // hidden file
	"order_date=2024-01-01/_SUCCESS":       false, // hidden file inside a partition
	"order_date=2024-01-01/.part.crc":      false,
}

// compactedTable is a partitioned demo table whose 8 files were compacted (8 tombstones), plus the
// extra objects.
func compactedTable(t *testing.T, store storage.Store) (*delta.Table, []string) {
	t.Helper()
	tbl := delta.NewTable(store)
	if _, err := table.WriteDemoData(t.Context(), tbl, table.DemoOptions{Files: 8, RowsPerFile: 100, Partitioned: true, Seed: 1}, nil); err != nil {
		t.Fatal(err)
	}
	var inputs []string
	for _, f := range latest(t, tbl).Files() {
		key, _ := delta.ObjectKey(tbl.Location(), f.Path)
		inputs = append(inputs, key)
	}
	if _, err := optimize.Run(t.Context(), tbl, optimize.Options{}, nil); err != nil {
		t.Fatal(err)
	}
	for key := range extras {
		if err := store.Put(t.Context(), key, []byte("x")); err != nil {
			t.Fatal(err)
		}
	}
	slices.Sort(inputs)
	return tbl, inputs
}

func TestVacuum_FullDeletesUnreferencedFilesOlderThanTheRetentionOnly(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			store := b.open(t)
			tbl, inputs := compactedTable(t, store)
			rows := scanRows(t, tbl)
			live := liveKeys(t, tbl)

			// Everything is younger than a retention of 8 days and 1 hour: nothing goes.
			long := 8*24*time.Hour + time.Hour
			rep := vacuumAt(t, tbl, Options{Retention: &long}, 8*24*time.Hour)
			if rep.Op.Outcome != result.NothingToDo || rep.KeptRecent != int64(countTrue(extras)) {
				t.Fatalf("long retention: %+v (kept %d recent)", rep.Op, rep.KeptRecent)
			}

			// Eight days later, with the default 7-day retention: the compacted inputs and the
			// unreferenced non-hidden files go; live files, hidden paths and the log stay.
			before := stored(t, store)
			rep = vacuumAt(t, tbl, Options{SampleSize: 100}, 8*24*time.Hour)
			var want []string
			want = append(want, inputs...)
			for key, gone := range extras {
				if gone {
					want = append(want, key)
				}
			}
			slices.Sort(want)
			var deleted []string
			after := stored(t, store)
			for key := range before {
				if _, ok := after[key]; !ok {
					deleted = append(deleted, key)
				}
			}
			slices.Sort(deleted)
			if !slices.Equal(deleted, want) {
				t.Fatalf("deleted %q\nwant    %q", deleted, want)
			}
			if rep.FilesDeleted != int64(len(want)) || rep.Op.FilesRemoved != rep.FilesDeleted || rep.Op.Outcome != result.Succeeded || rep.Directories != 5 { // the root, two days, _change_data, _delta_index
				t.Errorf("report %+v", rep)
			}
			for key := range live {
				if _, ok := after[key]; !ok {
					t.Errorf("live file %s was deleted", key)
				}
			}
			if got := scanRows(t, tbl); !slices.Equal(got, rows) {
				t.Fatal("the table reads differently after vacuum")
			}
			if again := vacuumAt(t, tbl, Options{}, 8*24*time.Hour); again.Op.Outcome != result.NothingToDo {
				t.Errorf("second vacuum %+v", again.Op)
			}
		})
	}
}

func TestVacuum_LiteDeletesOnlyTheFilesOfExpiredTombstones(t *testing.T) {
	store := localStore(t)
	tbl, inputs := compactedTable(t, store)
	before := stored(t, store)
	rep := vacuumAt(t, tbl, Options{Mode: Lite}, 8*24*time.Hour)
	after := stored(t, store)
	var deleted []string
	for key := range before {
		if _, ok := after[key]; !ok {
			deleted = append(deleted, key)
		}
	}
	slices.Sort(deleted)
	if !slices.Equal(deleted, inputs) || rep.FilesDeleted != int64(len(inputs)) {
		t.Fatalf("lite deleted %q, want the compacted inputs %q", deleted, inputs)
	}
	// The tombstones are still in the log state, but their files are gone: nothing to do.
	if again := vacuumAt(t, tbl, Options{Mode: Lite}, 8*24*time.Hour); again.Op.Outcome != result.NothingToDo || again.FilesToDelete != 0 {
		t.Errorf("second lite vacuum %+v", again)
	}
}

func TestVacuum_RetentionRules(t *testing.T) {
	hour, negative := time.Hour, -time.Hour
	cases := []struct {
		name     string
		property string // delta.deletedFileRetentionDuration, "" for the default
		opts     Options
		refused  string // "" when allowed
	}{
		{"the table's retention by default", "", Options{}, ""},
		{"a shorter retention is refused", "", Options{Retention: &hour}, "shorter than the table's"},
		{"a shorter retention when allowed", "", Options{Retention: &hour, AllowShortRetention: true}, ""},
		{"a negative retention", "", Options{Retention: &negative, AllowShortRetention: true}, "negative"},
		{"the table's own short retention", "interval 1 hours", Options{Retention: &hour}, ""},
		{"an unknown mode", "", Options{Mode: "fast"}, "use full or lite"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			store := localStore(t)
			tbl, _ := compactedTable(t, store)
			if c.property != "" {
				if _, err := table.ApplyDeclaration(t.Context(), tbl, table.Declaration{Properties: map[string]string{delta.PropDeletedFileRetention: c.property}}); err != nil {
					t.Fatal(err)
				}
			}
			files := stored(t, store)
			c.opts.DryRun = true
			rep, err := Run(t.Context(), tbl, c.opts, nil)
			if c.refused == "" {
				if err != nil {
					t.Fatal(err)
				}
				if c.opts.Retention != nil && rep.Retention != *c.opts.Retention || c.opts.Retention == nil && rep.Retention != 7*24*time.Hour {
					t.Errorf("retention %s", rep.Retention)
				}
				return
			}
			var re *result.Error
			if !errors.As(err, &re) || re.Outcome != result.Refused || !strings.Contains(err.Error(), c.refused) {
				t.Fatalf("error %v, want a refusal mentioning %q", err, c.refused)
			}
			if !maps.Equal(stored(t, store), files) {
				t.Fatal("a refused vacuum deleted files")
			}
		})
	}
}

func TestVacuum_DryRunDeletesNothing(t *testing.T) {
	store := localStore(t)
	tbl, inputs := compactedTable(t, store)
	files := stored(t, store)
	rep := vacuumAt(t, tbl, Options{DryRun: true, SampleSize: 3}, 8*24*time.Hour)
	if rep.FilesToDelete != int64(len(inputs)+countTrue(extras)) || rep.FilesDeleted != 0 || len(rep.Sample) != 3 || rep.Op.Outcome != result.Succeeded {
		t.Fatalf("dry run %+v", rep)
	}
	if !maps.Equal(stored(t, store), files) {
		t.Fatal("a dry run deleted files")
	}
}

func TestVacuum_ChecksTheWriterProtocolBeforeDeleting(t *testing.T) {
	store := localStore(t)
	tbl, _ := compactedTable(t, store)
	snap := latest(t, tbl)
	// A newer writer upgraded the table with a feature deltakeeper does not know.
	commit := `{"commitInfo":{"operation":"SET TBLPROPERTIES"}}` + "\n" +
		`{"protocol":{"minReaderVersion":1,"minWriterVersion":7,"writerFeatures":["appendOnly","invariants","aFutureWriterFeature"]}}` + "\n"
	if err := store.PutIfAbsent(t.Context(), delta.CommitKey(snap.Version()+1), []byte(commit)); err != nil {
		t.Fatal(err)
	}
	files := stored(t, store)
	zero := time.Duration(0)
	_, err := Run(t.Context(), tbl, Options{Retention: &zero, AllowShortRetention: true}, nil)
	if !errors.Is(err, delta.ErrUnsupportedTable) || !strings.Contains(err.Error(), "aFutureWriterFeature") {
		t.Fatalf("error %v, want a refusal naming the unknown writer feature", err)
	}
	if !maps.Equal(stored(t, store), files) {
		t.Fatal("vacuum deleted files of a table whose protocol it does not understand")
	}
}

func TestVacuum_DeletesDeletionVectorsOfExpiredRemovesOnly(t *testing.T) {
	// A Spark table with a deletion vector on its live file.
	corpus := testutil.ConformanceDir(t)
	dir := filepath.Join(t.TempDir(), "t")
	if err := os.CopyFS(dir, os.DirFS(filepath.Join(corpus, "kernel-rs", "table-with-dv-small", "delta"))); err != nil {
		t.Fatal(err)
	}
	store, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	tbl := delta.NewTable(store)
	rows := scanRows(t, tbl)
	f := latest(t, tbl).Files()[0]
	dvKey, err := f.DeletionVector.StorageKey(tbl.Location())
	if err != nil {
		t.Fatal(err)
	}
	zero := time.Duration(0)
	short := Options{Retention: &zero, AllowShortRetention: true}
	// While the file is live, its deletion vector is referenced and stays.
	vacuumAt(t, tbl, short, time.Hour)
	if _, err := store.Stat(t.Context(), dvKey); err != nil {
		t.Fatalf("the live file's deletion vector was deleted: %v", err)
	}
	// Compaction purges the deleted rows; the old file and its DV are now an expired remove's.
	if _, err := optimize.Run(t.Context(), tbl, optimize.Options{}, nil); err != nil {
		t.Fatal(err)
	}
	rep := vacuumAt(t, tbl, Options{Retention: &zero, AllowShortRetention: true, Mode: Lite}, time.Hour)
	if _, err := store.Stat(t.Context(), dvKey); !errors.Is(err, storage.ErrNotFound) || rep.FilesDeleted != 2 {
		t.Fatalf("deletion vector still there (%v) or %d files deleted, want the file and its DV", err, rep.FilesDeleted)
	}
	if got := scanRows(t, tbl); !slices.Equal(got, rows) {
		t.Fatal("the table reads differently after vacuum")
	}
}

func TestHiddenPath_FollowsSparksIsHiddenDirectory(t *testing.T) {
	rule := hiddenRuleFor([]string{"_p", "a b"})
	cases := map[string]bool{
		"part-0.parquet":              false,
		"_delta_log/00.json":          true,
		"_tmp/part-0.parquet":         true,
		".hidden/part-0.parquet":      true,
		"x=1/.part-0.parquet.crc":     true,
		"x=1/_SUCCESS":                true,
		"_change_data/cdc.parquet":    false,
		"_delta_index/z.bin":          false,
		"_p=3/part-0.parquet":         false, // a partition column starting with _
		"_q=3/part-0.parquet":         true,  // not a partition column
		"a b=1/part-0.parquet":        false,
		"deletion_vector_x.bin":       false,
		"x=1/_p=2/part-0.parquet":     false,
		"x=1/_staging/part-0.parquet": true,
	}
	for key, want := range cases {
		if got := hiddenPath(key, rule); got != want {
			t.Errorf("%s: hidden=%v, want %v", key, got, want)
		}
	}
}

// vacuumAt runs a vacuum with the clock moved forward by ahead.
func vacuumAt(t *testing.T, tbl *delta.Table, opts Options, ahead time.Duration) *Report {
	t.Helper()
	opts.Now = func() time.Time { return time.Now().Add(ahead) }
	rep, err := Run(t.Context(), tbl, opts, nil)
	if err != nil {
		t.Fatal(err)
	}
	return rep
}

func latest(t *testing.T, tbl *delta.Table) *delta.Snapshot {
	t.Helper()
	snap, err := tbl.Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	return snap
}

func liveKeys(t *testing.T, tbl *delta.Table) map[string]bool {
	out := map[string]bool{}
	for _, f := range latest(t, tbl).Files() {
		key, _ := delta.ObjectKey(tbl.Location(), f.Path)
		out[key] = true
	}
	return out
}

// stored maps every object of the store (log included) to its size.
func stored(t *testing.T, store storage.Store) map[string]int64 {
	t.Helper()
	out := map[string]int64{}
	for obj, err := range store.List(t.Context(), "", "") {
		if err != nil {
			t.Fatal(err)
		}
		out[obj.Key] = obj.Size
	}
	return out
}

func scanRows(t *testing.T, tbl *delta.Table) []string {
	t.Helper()
	rows, err := tabletest.SortedRows(t.Context(), latest(t, tbl))
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func countTrue(m map[string]bool) int {
	n := 0
	for _, v := range m {
		if v {
			n++
		}
	}
	return n
}
