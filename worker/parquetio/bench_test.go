package parquetio

import (
	"context"
	"errors"
	"fmt"
	"io"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// checkpointLike is shaped like a Delta checkpoint: one non-null top-level action per row, mostly adds.
func checkpointLike() *types.StructType {
	str := prim(types.TypeString)
	strMap := &types.MapType{KeyType: str, ValueType: str, ValueContainsNull: true}
	return structOf(
		field("txn", structOf(field("appId", str, true), field("version", prim(types.TypeLong), true)), true),
		field("add", structOf(
			field("path", str, true), field("partitionValues", strMap, true), field("size", prim(types.TypeLong), true),
			field("modificationTime", prim(types.TypeLong), true), field("dataChange", prim(types.TypeBoolean), true),
			field("stats", str, true), field("tags", strMap, true),
			field("deletionVector", structOf(field("storageType", str, true), field("pathOrInlineDv", str, true),
				field("offset", prim(types.TypeInteger), true), field("sizeInBytes", prim(types.TypeInteger), true),
				field("cardinality", prim(types.TypeLong), true)), true),
			field("baseRowId", prim(types.TypeLong), true), field("defaultRowCommitVersion", prim(types.TypeLong), true),
		), true),
		field("remove", structOf(field("path", str, true), field("deletionTimestamp", prim(types.TypeLong), true),
			field("dataChange", prim(types.TypeBoolean), true)), true),
		field("metaData", structOf(field("id", str, true), field("schemaString", str, true)), true),
		field("protocol", structOf(field("minReaderVersion", prim(types.TypeInteger), true)), true),
	)
}

func checkpointRows(n int) []types.Struct {
	rows := make([]types.Struct, n)
	for i := range rows {
		stats := fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":%d},"maxValues":{"id":%d},"nullCount":{"id":0}}`, i, i, i+100)
		add := types.Struct{fmt.Sprintf("date=2024-01-%02d/part-%05d-1f2e3d4c-5b6a-7980-a1b2-c3d4e5f60718.c000.zstd.parquet", i%28+1, i),
			types.Map{{Key: "date", Value: fmt.Sprintf("2024-01-%02d", i%28+1)}}, int64(1_000_000 + i), int64(1_700_000_000_000 + i), false,
			stats, nil, nil, int64(i) * 1000, int64(3)}
		rows[i] = types.Struct{nil, add, nil, nil, nil}
	}
	return rows
}

// BenchmarkRows_CheckpointAdds measures the logical reader on checkpoint-shaped rows, the log layer's
// hot path when it loads a snapshot.
func BenchmarkRows_CheckpointAdds(b *testing.B) {
	schema := checkpointLike()
	const n = 100_000
	data, _ := writeRows(b, schema, checkpointRows(n), WriterOptions{Codec: "snappy"})
	f := openBytes(b, data)
	b.ReportAllocs()
	b.ResetTimer()
	for range b.N {
		rr, err := f.Rows(context.Background(), schema, ReadOptions{BatchSize: 4096})
		if err != nil {
			b.Fatal(err)
		}
		rows := 0
		for {
			batch, err := rr.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				b.Fatal(err)
			}
			rows += len(batch.Rows)
		}
		rr.Close()
		if rows != n {
			b.Fatalf("read %d rows", rows)
		}
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*n), "ns/row")
}
