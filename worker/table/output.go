package table

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// This file is the one output path for data files: every writer of new data files — appends and
// ingest (Writer), compaction and clustering (RewriteOutputs), and MERGE when it comes — names,
// creates, sizes, describes and deletes its files here, so that a rule changes in one place.

// WriteOptions control how new data files are written.
type WriteOptions struct {
	// TargetFileSize starts a new file once one reaches it (checked at row-group boundaries, so a file
	// exceeds it by about a row group, see rowGroupBytes). 0 means delta.targetFileSize, else
	// delta.DefaultTargetFileSize.
	TargetFileSize int64
	// DataChange is add.dataChange: true for new rows (ingest), false for rearrangements (compaction).
	DataChange bool
	// ClusteringProvider is set on every file when non-empty ("liquid" for clustered output).
	ClusteringProvider string
	// Tags are copied into every file's add.tags (a clustering run's ZCube identity); nil for none.
	Tags map[string]string
	// MaxOpenFiles bounds the files open at once across partitions (each holds a row group in
	// memory); the least recently written one is finished when a new partition needs a slot.
	// Default 8. Writer only.
	MaxOpenFiles int
	// DVInlineMaxBytes stores a deletion vector DeleteRows writes inline in the log (storageType "i")
	// when its serialized bitmap is at most this many bytes; 0 (the default, Spark's usual layout)
	// puts every DV into the commit's DV file.
	DVInlineMaxBytes int
	// EncodeWorkers is how many goroutines encode the columns of a file the Writer's WriteColumns
	// writes (parquetio.WriterOptions.EncodeWorkers); 0 or 1, one. For a writer that runs alone.
	EncodeWorkers int
	// Now is the clock of modificationTime; time.Now when nil.
	Now func() time.Time
}

// Row groups of every data file deltakeeper writes are a quarter of the target file size, between
// minRowGroupBytes and maxRowGroupBytes (rowGroupBytes).
//
// A quarter, because a file's size is checked where a row group closes: the Writer and
// parquetio.Rewrite roll over to a new file there, so a file should overshoot its target by about a
// quarter at most (at targets under ~256 KiB the writer overshoots more, bench/RESULTS.md), and every
// file of target size has four or more row groups for readers to skip and split.
// Spark (parquet-mr) closes row groups at parquet.block.size, 128 MiB whatever the file size, and
// DuckDB after ROW_GROUP_SIZE rows (122,880) with FILE_SIZE_BYTES checked between row groups; both
// overshoot a small target by up to a whole row group. Scaling the row group to the target avoids that.
//
// The floor, 8 KiB, only matters for targets under 32 KiB (tests, toy tables): there a higher floor
// makes every file a floor's worth of row groups whatever its target (with 64 KiB, clustering's old
// floor, a 32 KiB target gave the writer 192 KB files; with 8 KiB, 58 KB files for 6.7 % more bytes),
// and the per-row-group cost (a footer entry and a page header per column) is what a table with such a
// target asks for. Clustering's columnar sort adds its own floor in rows (parquetio.Permute: at least
// two dictionary probes, 8,192 rows). The clustering benchmark's quick configuration (320 KiB target,
// 80 KiB row groups) is above both floors and wrote byte-identical files before and after the floors
// were merged (bench/RESULTS.md, "One output path").
//
// The cap, 16 MiB (parquetio.DefaultRewriteRowGroupBytes, compaction's size until now), bounds memory:
// the Writer holds a row group per open file (up to 64 partitions in an optimized ingest write), a
// rewrite about two per bin in flight. Targets of 64 MiB and more (the default is 100 MiB) get it.
const (
	minRowGroupBytes = 8 << 10
	maxRowGroupBytes = parquetio.DefaultRewriteRowGroupBytes
)

func rowGroupBytes(target int64) int64 { return min(max(target/4, minRowGroupBytes), maxRowGroupBytes) }

// layout is what every write path derives from a snapshot: the data-file schema (physical names,
// no partition columns), the codec, field ids, the target size and the row-group size.
type layout struct {
	snap       *delta.Snapshot
	fileSchema *types.StructType
	dataIdx    []int // table field index of each file column
	partIdx    []int // table field index of each partition column, in metadata order
	writer     parquetio.WriterOptions
	target     int64
	opts       WriteOptions
}

func newLayout(snap *delta.Snapshot, opts WriteOptions) (*layout, error) {
	l := &layout{snap: snap, opts: opts, fileSchema: &types.StructType{}}
	schema, physical := snap.Schema(), snap.PhysicalSchema()
	parts := snap.Metadata().PartitionColumns
	for _, pc := range parts {
		i := schema.FieldIndex(pc)
		if i < 0 {
			return nil, fmt.Errorf("table %s: partition column %q is not in the schema", snap.Table().Location(), pc)
		}
		l.partIdx = append(l.partIdx, i)
	}
	for i, f := range physical.Fields {
		if !slices.Contains(l.partIdx, i) {
			l.fileSchema.Fields = append(l.fileSchema.Fields, f)
			l.dataIdx = append(l.dataIdx, i)
		}
	}
	l.writer = parquetio.WriterOptions{
		Codec:         snap.Properties().CompressionCodec(),
		WriteFieldIDs: snap.ColumnMappingMode() == delta.ColumnMappingID,
	}
	l.target = opts.TargetFileSize
	if l.target <= 0 {
		size, ok, err := snap.Properties().TargetFileSize()
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", snap.Table().Location(), err)
		}
		l.target = delta.DefaultTargetFileSize
		if ok {
			l.target = size
		}
	}
	l.writer.RowGroupBytes = rowGroupBytes(l.target)
	l.writer.EncodeWorkers = opts.EncodeWorkers
	return l, nil
}

func (l *layout) now() time.Time {
	if l.opts.Now != nil {
		return l.opts.Now()
	}
	return time.Now()
}

// dir is the directory of new files with partition values pv ("" or "a=1/b=x%2Fy/").
func (l *layout) dir(pv delta.PartitionValues) (string, error) {
	dir, err := l.snap.PartitionDir(pv)
	if err != nil {
		return "", err
	}
	if dir != "" && !strings.HasSuffix(dir, "/") {
		dir += "/"
	}
	return dir, nil
}

// create names and starts new data file seq in dir (delta.DataFileName, the table's codec).
func (l *layout) create(ctx context.Context, dir string, seq int) (string, storage.Writer, error) {
	key := dir + delta.DataFileName(seq, l.writer.Codec)
	w, err := l.snap.Table().Store().Create(ctx, key)
	if err != nil {
		return "", nil, fmt.Errorf("create %s: %w", key, err)
	}
	return key, w, nil
}

// addFile describes a finished file for the log: its statistics (collected by the Parquet writer,
// rendered by the snapshot's stats rules), partition values, size, time and the options' flags.
func (l *layout) addFile(key string, pv delta.PartitionValues, res *parquetio.WriteResult) (*delta.AddFile, error) {
	stats, err := l.snap.BuildStats(res.NumRows, res.Columns)
	if err != nil {
		return nil, fmt.Errorf("statistics of %s: %w", key, err)
	}
	return &delta.AddFile{
		Path:               delta.EncodePath(key),
		PartitionValues:    slices.Clone(pv),
		Size:               res.Bytes,
		ModificationTime:   l.now().UnixMilli(),
		DataChange:         l.opts.DataChange,
		Stats:              stats,
		Tags:               maps.Clone(l.opts.Tags),
		ClusteringProvider: l.opts.ClusteringProvider,
	}, nil
}

// deleteKeys deletes files that no commit references (already gone is fine).
func deleteKeys(ctx context.Context, store storage.Store, keys []string) error {
	var errs []error
	for _, k := range keys {
		if err := store.Delete(ctx, k); err != nil && !errors.Is(err, storage.ErrNotFound) {
			errs = append(errs, fmt.Errorf("delete %s: %w", k, err))
		}
	}
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("delete %d uncommitted data files (VACUUM removes what is left): %w", len(errs), err)
	}
	return nil
}
