package delta

import (
	"context"
	"fmt"
	"runtime"
	"strconv"
	"testing"
	"time"
)

// syntheticTable writes a table whose latest version is a checkpoint of n files (partitioned,
// with JSON stats, as Spark writes them) plus one commit after it.
func syntheticTable(b testing.TB, n int) *Table {
	b.Helper()
	tbl, snap := testTable(b).Partitioned("p").Prop(PropCheckpointInterval, "1000000").Create()
	ctx := context.Background()
	files := make([]*AddFile, n)
	for i := range files {
		files[i] = &AddFile{
			Path:             fmt.Sprintf("p=%03d/part-%05d-%08d-c000.snappy.parquet", i%100, i%7919, i),
			PartitionValues:  PartitionValues{{Column: "p", Value: fmt.Sprintf("%03d", i%100)}},
			Size:             int64(100000 + i),
			ModificationTime: testEpoch.UnixMilli(),
			DataChange:       true,
			Stats:            `{"numRecords":1000,"minValues":{"id":` + strconv.Itoa(i) + `,"name":"aaaaaaaa"},"maxValues":{"id":` + strconv.Itoa(i+999) + `,"name":"zzzzzzzz"},"nullCount":{"id":0,"name":3}}`,
		}
	}
	big := *snap
	big.version = 1
	big.files = files
	must2(b, tbl.Store().PutIfAbsent(ctx, CommitKey(1), []byte(`{"commitInfo":{"operation":"WRITE"}}`+"\n")))
	must2(b, tbl.Checkpoint(ctx, &big))
	appendFiles(b, tbl, dataFile("p=000/extra.parquet", 1, "000"))
	return tbl
}

func must2(tb testing.TB, err error) {
	tb.Helper()
	if err != nil {
		tb.Fatal(err)
	}
}

// BenchmarkLatest_CheckpointedTable loads the latest snapshot of a table with a large checkpoint
// and reports the heap the snapshot keeps. Run with DELTAKEEPER_BENCH_FILES=1000000 for the
// million-file case (default 100000).
func BenchmarkLatest_CheckpointedTable(b *testing.B) {
	n := 100000
	if v, err := strconv.Atoi(getenv("DELTAKEEPER_BENCH_FILES")); err == nil {
		n = v
	}
	tbl := syntheticTable(b, n)
	ctx := context.Background()
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		runtime.GC()
		var before runtime.MemStats
		runtime.ReadMemStats(&before)
		start := time.Now()
		snap, err := tbl.Latest(ctx)
		if err != nil {
			b.Fatal(err)
		}
		elapsed := time.Since(start)
		runtime.GC()
		var after runtime.MemStats
		runtime.ReadMemStats(&after)
		if snap.NumFiles() != n+1 {
			b.Fatalf("%d files", snap.NumFiles())
		}
		b.ReportMetric(float64(after.HeapAlloc-before.HeapAlloc)/float64(n), "retained-B/file")
		b.ReportMetric(elapsed.Seconds(), "s/load")
		runtime.KeepAlive(snap)
	}
}
