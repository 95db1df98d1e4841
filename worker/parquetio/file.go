package parquetio

import (
	"context"
	"fmt"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// File is an opened Parquet file: its footer and schema. Data pages are read lazily by Rows (and by
// Rewrite). A File is safe for concurrent readers; it does not own the storage.ReaderAt (close that
// yourself once every reader is done).
type File struct {
	r      storage.ReaderAt
	rec    *recordingReader // r, remembering storage errors (see classify)
	name   string           // for messages
	pf     *parquet.File
	root   *pqNode
	leaves []*pqNode
	// rowGroupStart[i] is the physical index of the first row of row group i (deletion vectors address
	// rows by their position in the whole file).
	rowGroupStart []int64
}

// RowGroupInfo describes one row group.
type RowGroupInfo struct {
	NumRows int64
	// FirstRow is the physical index of the group's first row within the file.
	FirstRow int64
	// CompressedBytes and UncompressedBytes sum the group's column chunks.
	CompressedBytes, UncompressedBytes int64
}

// Open reads the footer of a Parquet file. Only the footer is fetched (one ranged read for footers up
// to 64 KiB): page indexes and bloom filters are not loaded because neither scans nor rewrites use them.
func Open(ctx context.Context, r storage.ReaderAt) (*File, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	rec := &recordingReader{ReaderAt: r}
	name := fileName(r)
	pf, err := parquet.OpenFile(rec, r.Size(),
		parquet.SkipPageIndex(true),
		parquet.SkipBloomFilters(true),
		parquet.OptimisticRead(true),
		parquet.ReadBufferSize(64<<10),
	)
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, classify(rec, name, fmt.Errorf("open parquet file (%d bytes): %w; the object is not a readable Parquet file, check that it is complete and not encrypted", r.Size(), err))
	}
	root, leaves, err := buildSchemaTree(pf.Metadata().Schema)
	if err != nil {
		return nil, classify(rec, name, fmt.Errorf("open parquet file: %w", err))
	}
	f := &File{r: rec, rec: rec, pf: pf, root: root, leaves: leaves, name: name}
	var start int64
	for _, rg := range pf.Metadata().RowGroups {
		f.rowGroupStart = append(f.rowGroupStart, start)
		start += rg.NumRows
		if len(rg.Columns) != len(leaves) {
			return nil, fmt.Errorf("open parquet file: row group has %d column chunks but the schema has %d leaf columns; the file is corrupt: %w", len(rg.Columns), len(leaves), ErrCorruptFile)
		}
	}
	return f, nil
}

// NumRows is the number of physical rows (deleted rows included).
func (f *File) NumRows() int64 { return f.pf.NumRows() }

// Size is the file size in bytes.
func (f *File) Size() int64 { return f.r.Size() }

// NumRowGroups is the number of row groups.
func (f *File) NumRowGroups() int { return len(f.rowGroupStart) }

// RowGroup describes row group i.
func (f *File) RowGroup(i int) RowGroupInfo {
	rg := &f.pf.Metadata().RowGroups[i]
	info := RowGroupInfo{NumRows: rg.NumRows, FirstRow: f.rowGroupStart[i]}
	for _, c := range rg.Columns {
		info.CompressedBytes += c.MetaData.TotalCompressedSize
		info.UncompressedBytes += c.MetaData.TotalUncompressedSize
	}
	return info
}

// KeyValueMetadata returns the footer's key/value metadata (e.g. "org.apache.spark.sql.parquet.row.metadata").
func (f *File) KeyValueMetadata() map[string]string {
	kv := f.pf.Metadata().KeyValueMetadata
	m := make(map[string]string, len(kv))
	for _, e := range kv {
		m[e.Key] = e.Value
	}
	return m
}

// CreatedBy returns the writer's created_by string ("parquet-mr version 1.12.3 (build …)").
func (f *File) CreatedBy() string { return f.pf.Metadata().CreatedBy }

// metadata exposes the raw footer to the rewrite planner.
func (f *File) metadata() *format.FileMetaData { return f.pf.Metadata() }
