package table_test

import (
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// ScanStats.BytesRead is what was read from storage, not what the log claims: a bogus add.size (one
// table reported "888.2 PiB read") must not show, and a projection reads less than whole files.
func TestScan_BytesReadCountsTheBytesFetchedFromStorage(t *testing.T) {
	for _, backend := range []string{"local", "s3"} {
		t.Run(backend, func(t *testing.T) {
			var store storage.Store
			if backend == "local" {
				store, _ = newStore(t)
			} else {
				srv := s3server.Start(t)
				var err error
				if store, err = storage.Open(t.Context(), srv.Location("orders"), storage.Config{S3: srv.S3Config()}); err != nil {
					t.Fatal(err)
				}
			}
			tbl := delta.NewTable(store)
			if _, err := table.WriteDemoData(t.Context(), tbl, table.DemoOptions{Files: 3, RowsPerFile: 2000, Seed: 5}, nil); err != nil {
				t.Fatal(err)
			}
			snap, err := tbl.Latest(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			// One more file whose add claims an absurd size.
			w, err := table.NewWriter(t.Context(), snap, table.WriteOptions{DataChange: true})
			if err != nil {
				t.Fatal(err)
			}
			if err := w.Write(table.OrdersRows(5, 9, 1_000_000, 500)); err != nil {
				t.Fatal(err)
			}
			adds, err := w.Close()
			if err != nil {
				t.Fatal(err)
			}
			adds[0].Size = 1 << 60
			tx, err := snap.Begin(delta.OpAppend, delta.TxnOptions{Operation: "WRITE"})
			if err != nil {
				t.Fatal(err)
			}
			tx.Add(adds...)
			if _, err := tx.Commit(t.Context()); err != nil {
				t.Fatal(err)
			}
			if snap, err = tbl.Latest(t.Context()); err != nil {
				t.Fatal(err)
			}
			var stored int64
			for _, f := range snap.Files() {
				key, _ := delta.ObjectKey(tbl.Location(), f.Path)
				info, err := store.Stat(t.Context(), key)
				if err != nil {
					t.Fatal(err)
				}
				stored += info.Size
			}

			// Every byte read is counted, also when read twice: a small file's footer is fetched with an
			// optimistic read of the file's tail that can cover the whole file, its pages again.
			rows, st := scanAll(t, snap, table.ScanOptions{})
			if len(rows) != 6500 || st.BytesRead < stored || st.BytesRead > 2*stored {
				t.Fatalf("%d rows, %d bytes read of %d stored", len(rows), st.BytesRead, stored)
			}
			_, one := scanAll(t, snap, table.ScanOptions{Columns: []string{"order_id"}})
			if one.BytesRead <= 0 || one.BytesRead >= st.BytesRead {
				t.Errorf("one column read %d bytes, every column %d", one.BytesRead, st.BytesRead)
			}
		})
	}
}
