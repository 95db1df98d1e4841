package table_test

import (
	"context"
	"syscall"
	"testing"
	"time"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// BenchmarkDeleteRows_CopyOnWrite compares, on one 500,000-row file of the demo orders table (9
// columns), what deleting 1 % of its rows (scattered) costs through DeleteRows' column copy with a row
// filter against the row-by-row alternative (decode every kept row to logical values, encode it again
// through the Writer), and against the column copy without a filter (a plain compaction of the
// file). Reported as CPU time (user+sys, getrusage) per operation, the figure to compare on a loaded
// machine: go test ./worker/table -run '^$' -bench DeleteRows_CopyOnWrite -benchtime 3x
func BenchmarkDeleteRows_CopyOnWrite(b *testing.B) {
	ctx := context.Background()
	store, err := storage.NewLocal(b.TempDir())
	if err != nil {
		b.Fatal(err)
	}
	tbl := delta.NewTable(store)
	if _, err := table.WriteDemoData(ctx, tbl, table.DemoOptions{Files: 1, RowsPerFile: 500_000, Seed: 1}, nil); err != nil {
		b.Fatal(err)
	}
	snap, err := tbl.Latest(ctx)
	if err != nil {
		b.Fatal(err)
	}
	f := snap.Files()[0]
	positions := roaring64.New()
	for p := uint64(37); p < 500_000; p += 100 {
		positions.Add(p)
	}
	measure := func(b *testing.B, run func() error) {
		var cpu time.Duration
		for b.Loop() {
			before := cpuTime()
			if err := run(); err != nil {
				b.Fatal(err)
			}
			cpu += cpuTime() - before
		}
		b.ReportMetric(float64(cpu.Milliseconds())/float64(b.N), "cpu-ms/op")
	}
	b.Run("column-copy-with-row-filter", func(b *testing.B) {
		measure(b, func() error {
			tx, err := snap.Begin(delta.OpMerge, delta.TxnOptions{Operation: "DELETE"})
			if err != nil {
				return err
			}
			res, err := table.DeleteRows(ctx, tx, []table.FileDeletes{{File: f, Positions: positions}}, table.WriteOptions{})
			if err != nil {
				return err
			}
			return res.Abort(ctx)
		})
	})
	b.Run("column-copy-without-filter", func(b *testing.B) {
		measure(b, func() error {
			outs, err := table.NewRewriteOutputs(ctx, snap, f.PartitionValues, table.WriteOptions{})
			if err != nil {
				return err
			}
			key, err := delta.ObjectKey(store.Location(), f.Path)
			if err != nil {
				return err
			}
			r, err := store.Open(ctx, key)
			if err != nil {
				return err
			}
			defer r.Close()
			if _, err := parquetio.Rewrite(ctx, []parquetio.RewriteInput{{File: r}}, outs.Create, outs.Options()); err != nil {
				return err
			}
			return outs.Abort(ctx)
		})
	})
	b.Run("row-by-row-decode-encode", func(b *testing.B) {
		measure(b, func() error {
			scan, err := table.NewScan(snap, table.ScanOptions{})
			if err != nil {
				return err
			}
			w, err := table.NewWriter(ctx, snap, table.WriteOptions{DataChange: true})
			if err != nil {
				return err
			}
			var row uint64
			if _, err := scan.Run(ctx, func(rows []types.Struct) error {
				kept := rows[:0:0]
				for _, r := range rows {
					if !positions.Contains(row) {
						kept = append(kept, r)
					}
					row++
				}
				return w.Write(kept)
			}); err != nil {
				return err
			}
			if _, err := w.Close(); err != nil {
				return err
			}
			return w.Abort(ctx)
		})
	})
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	_ = syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}
