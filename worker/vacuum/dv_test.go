package vacuum

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// A DELETE that merges rows into a file's DV leaves the data file live with a new DV and the old DV
// file referenced only by the remove tombstone: vacuum must keep the live data file and the new DV
// file and delete the old DV file once the tombstone expired, in both modes.
func TestVacuum_KeepsLiveDeletionVectorsAndDeletesReplacedOnes(t *testing.T) {
	for _, mode := range []Mode{Full, Lite} {
		t.Run(string(mode), func(t *testing.T) {
			dir := filepath.Join(t.TempDir(), "t")
			if err := os.CopyFS(dir, os.DirFS(filepath.Join(testutil.ConformanceDir(t), "kernel-rs", "table-with-dv-small", "delta"))); err != nil {
				t.Fatal(err)
			}
			store, err := storage.NewLocal(dir)
			if err != nil {
				t.Fatal(err)
			}
			tbl := delta.NewTable(store)
			oldDV := dvKey(t, tbl)
			where, _ := expr.Parse("value IN (3, 4)")
			if _, err := table.DeleteWhere(t.Context(), tbl, where, table.DeleteWhereOptions{}); err != nil {
				t.Fatal(err)
			}
			newDV := dvKey(t, tbl)
			rows := scanRows(t, tbl)
			dataKey, _ := delta.ObjectKey(tbl.Location(), latest(t, tbl).Files()[0].Path)

			// Within the table's retention nothing goes: the tombstone still references the old DV.
			vacuumAt(t, tbl, Options{Mode: mode}, 0)
			for _, k := range []string{oldDV, newDV, dataKey} {
				if _, err := store.Stat(t.Context(), k); err != nil {
					t.Fatalf("%s deleted within the retention: %v", k, err)
				}
			}
			zero := time.Duration(0)
			rep := vacuumAt(t, tbl, Options{Mode: mode, Retention: &zero, AllowShortRetention: true}, time.Hour)
			if _, err := store.Stat(t.Context(), oldDV); !errors.Is(err, storage.ErrNotFound) {
				t.Errorf("the replaced DV file %s survived its tombstone's expiry (%v); report %+v", oldDV, err, rep)
			}
			for _, k := range []string{newDV, dataKey} {
				if _, err := store.Stat(t.Context(), k); err != nil {
					t.Fatalf("live %s deleted: %v", k, err)
				}
			}
			if got := scanRows(t, tbl); !slices.Equal(got, rows) {
				t.Fatal("the table reads differently after vacuum")
			}
		})
	}
}

func dvKey(t *testing.T, tbl *delta.Table) string {
	t.Helper()
	dv := latest(t, tbl).Files()[0].DeletionVector
	if dv == nil {
		t.Fatal("the file has no deletion vector")
	}
	key, err := dv.StorageKey(tbl.Location())
	if err != nil {
		t.Fatal(err)
	}
	return key
}
