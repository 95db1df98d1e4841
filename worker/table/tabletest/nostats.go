package tabletest

import (
	"context"
	"fmt"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// AppendWithoutStats appends rows (logical, table column order; may be empty) as data files whose add
// actions carry no statistics, the way old Spark writers with stats collection off and some overwrites
// leave them. With no rows it writes one real Parquet file of zero rows into the partition pv (nil for
// an unpartitioned table). Only the footer of such a file knows how many rows it holds.
func AppendWithoutStats(ctx context.Context, snap *delta.Snapshot, pv delta.PartitionValues, rows []types.Struct) ([]*delta.AddFile, error) {
	var adds []*delta.AddFile
	if len(rows) == 0 {
		add, err := writeEmptyFile(ctx, snap, pv)
		if err != nil {
			return nil, err
		}
		adds = []*delta.AddFile{add}
	} else {
		w, err := table.NewWriter(ctx, snap, table.WriteOptions{DataChange: true})
		if err != nil {
			return nil, err
		}
		if err := w.Write(rows); err != nil {
			return nil, err
		}
		if adds, err = w.Close(); err != nil {
			return nil, err
		}
	}
	for _, a := range adds {
		a.Stats = ""
	}
	tx, err := snap.Begin(delta.OpAppend, delta.TxnOptions{Operation: "WRITE"})
	if err != nil {
		return nil, err
	}
	tx.Add(adds...)
	if _, err := tx.Commit(ctx); err != nil {
		return nil, err
	}
	return adds, nil
}

// writeEmptyFile writes a zero-row Parquet file with the table's data-file schema (physical names, no
// partition columns) and returns its add action, without statistics.
func writeEmptyFile(ctx context.Context, snap *delta.Snapshot, pv delta.PartitionValues) (*delta.AddFile, error) {
	parts := snap.Metadata().PartitionColumns
	fileSchema := &types.StructType{}
	for i, f := range snap.PhysicalSchema().Fields {
		if !slices.Contains(parts, snap.Schema().Fields[i].Name) {
			fileSchema.Fields = append(fileSchema.Fields, f)
		}
	}
	dir, err := snap.PartitionDir(pv)
	if err != nil {
		return nil, err
	}
	key := delta.DataFileName(0, "snappy")
	if dir != "" {
		key = dir + "/" + key
	}
	out, err := snap.Table().Store().Create(ctx, key)
	if err != nil {
		return nil, err
	}
	pw, err := parquetio.NewWriter(out, fileSchema, parquetio.WriterOptions{Codec: "snappy",
		WriteFieldIDs: snap.ColumnMappingMode() == delta.ColumnMappingID})
	if err != nil {
		out.Abort()
		return nil, err
	}
	res, err := pw.Close()
	if err != nil {
		out.Abort()
		return nil, err
	}
	if res.NumRows != 0 {
		out.Abort()
		return nil, fmt.Errorf("empty file has %d rows", res.NumRows)
	}
	if err := out.Close(); err != nil {
		return nil, err
	}
	return &delta.AddFile{Path: delta.EncodePath(key), PartitionValues: slices.Clone(pv), Size: res.Bytes,
		ModificationTime: 1, DataChange: true}, nil
}
