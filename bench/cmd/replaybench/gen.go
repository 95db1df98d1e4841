package main

import (
	"context"
	"fmt"
	"strconv"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// generate writes the benchmark table's log through deltakeeper's own transactions (no data files):
// big commits adding cpFiles files, a classic checkpoint, then `commits` JSON commits that each remove
// `removes` checkpointed files and add `removes+perCommit` new ones, so the latest version has
// cpFiles - commits*removes + commits*(removes+perCommit) live files. Files are partitioned by day
// and carry JSON statistics shaped like Spark's.
func generate(ctx context.Context, dir string, cpFiles, commits, perCommit, removes int) error {
	store, err := storage.NewLocal(dir)
	if err != nil {
		return err
	}
	tbl := delta.NewTable(store)
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: true},
		{Name: "ts", Type: types.Primitive(types.TypeTimestamp), Nullable: true},
		{Name: "region", Type: types.Primitive(types.TypeString), Nullable: true},
		{Name: "amount", Type: types.Decimal(12, 2), Nullable: true},
		{Name: "day", Type: types.Primitive(types.TypeDate), Nullable: true},
	}}
	snap, err := tbl.Create(ctx, delta.CreateOptions{Schema: schema, PartitionColumns: []string{"day"},
		Configuration: map[string]string{delta.PropCheckpointInterval: "1000000"}})
	if err != nil {
		return err
	}
	seq := 0
	next := func() *delta.AddFile {
		i := seq
		seq++
		day := time.Date(2020, 1, 1, 0, 0, 0, 0, time.UTC).AddDate(0, 0, i%1000).Format("2006-01-02")
		id := strconv.Itoa(i * 1000)
		return &delta.AddFile{
			Path:             fmt.Sprintf("day=%s/part-%05d-%08x-0000-4000-8000-%012d.c000.zstd.parquet", day, i%2000, i, i),
			PartitionValues:  delta.PartitionValues{{Column: "day", Value: day}},
			Size:             int64(64<<10 + i%100000),
			ModificationTime: 1_700_000_000_000 + int64(i),
			DataChange:       true,
			Stats: `{"numRecords":1000,"minValues":{"id":` + id + `,"ts":"2020-01-01T00:00:00.000Z","region":"ap-northeast","amount":1.00},` +
				`"maxValues":{"id":` + id + `999,"ts":"2020-01-01T23:59:59.999Z","region":"us-west","amount":4999.99},` +
				`"nullCount":{"id":0,"ts":0,"region":0,"amount":7}}`,
		}
	}
	const batch = 100_000
	for done := 0; done < cpFiles; done += batch {
		tx, err := snap.Begin(delta.OpAppend, delta.TxnOptions{Operation: "WRITE", NoAutoCheckpoint: true})
		if err != nil {
			return err
		}
		for range min(batch, cpFiles-done) {
			tx.Add(next())
		}
		if _, err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("bulk commit: %w", err)
		}
		if snap, err = tbl.Latest(ctx); err != nil {
			return err
		}
	}
	if err := tbl.Checkpoint(ctx, snap); err != nil {
		return fmt.Errorf("checkpoint: %w", err)
	}
	files := snap.Files()
	for c := range commits {
		tx, err := snap.Begin(delta.OpMerge, delta.TxnOptions{Operation: "MERGE", NoAutoCheckpoint: true,
			Retry: delta.RetryPolicy{MaxAttempts: 3}})
		if err != nil {
			return err
		}
		tx.Remove(true, files[c*removes:(c+1)*removes]...)
		for range removes + perCommit {
			tx.Add(next())
		}
		if _, err := tx.Commit(ctx); err != nil {
			return fmt.Errorf("commit %d after the checkpoint: %w", c+1, err)
		}
	}
	return nil
}
