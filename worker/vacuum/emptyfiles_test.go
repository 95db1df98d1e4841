package vacuum

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
)

// A zero-row file without statistics (an old Spark overwrite's) is an ordinary live file to vacuum:
// kept while referenced, deleted once compaction removed it and the retention passed.
func TestVacuum_EmptyFileWithoutStatisticsIsKeptWhileLiveAndDeletedOnceRemoved(t *testing.T) {
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			store := b.open(t)
			tbl, _ := compactedTable(t, store)
			snap := latest(t, tbl)
			adds, err := tabletest.AppendWithoutStats(t.Context(), snap, snap.Files()[0].PartitionValues, nil)
			if err != nil {
				t.Fatal(err)
			}
			empty, _ := delta.ObjectKey(tbl.Location(), adds[0].Path)
			rows := scanRows(t, tbl)
			zero := time.Duration(0)
			short := Options{Retention: &zero, AllowShortRetention: true}
			vacuumAt(t, tbl, short, time.Hour)
			if _, err := store.Stat(t.Context(), empty); err != nil {
				t.Fatalf("the live empty file was deleted: %v", err)
			}
			rep, err := optimize.Run(t.Context(), tbl, optimize.Options{}, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, live := latest(t, tbl).File(adds[0].Key()); live || rep.FilesRemoved == 0 {
				t.Fatalf("optimize left the empty file live (%+v)", rep.Op)
			}
			vacuumAt(t, tbl, short, time.Hour)
			if _, err := store.Stat(t.Context(), empty); !errors.Is(err, storage.ErrNotFound) {
				t.Fatalf("the removed empty file is still there: %v", err)
			}
			if got := scanRows(t, tbl); !slices.Equal(got, rows) {
				t.Fatal("the table reads differently")
			}
		})
	}
}
