package table

import (
	"fmt"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/layoutstats"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// DefaultSmallFileThreshold is the small-file size when delta.targetFileSize is unset: Delta auto
// compaction's spark.databricks.delta.autoCompact.minFileSize default, 64 MiB.
const DefaultSmallFileThreshold = 64 << 20

// HistogramBounds are the exclusive upper bounds of the file-size histogram buckets; the last bucket
// holds every larger file.
var HistogramBounds = []int64{1 << 20, 8 << 20, 32 << 20, 64 << 20, 128 << 20, 256 << 20, 512 << 20, 1 << 30}

// Bucket is one range of the size histogram: files below UpTo (0 = unbounded) and not in an
// earlier bucket.
type Bucket struct {
	UpTo  int64
	Files int64
	Bytes int64
}

// Facts describe a table at one version: what inspect reports and what DeltaTable status shows.
type Facts struct {
	Location          string
	Version           delta.Version
	Protocol          delta.Protocol
	Schema            *types.StructType
	ColumnMapping     delta.ColumnMappingMode
	PartitionColumns  []string
	ClusteringColumns []string // logical, dotted; nil when not clustered
	Properties        map[string]string

	NumFiles, Bytes int64
	Histogram       []Bucket
	// SmallFileThreshold is half of delta.targetFileSize when set, else DefaultSmallFileThreshold.
	SmallFileThreshold        int64
	NumSmallFiles, SmallBytes int64
	// UnclusteredFiles/Bytes count files not (yet) clustered by the current clustering columns: the
	// files liquid clustering rewrites whatever their neighbours (ClassifyClustering).
	UnclusteredFiles, UnclusteredBytes int64
	// Rows is the live row count from statistics (numRecords minus deleted rows); RowsKnown is false
	// when a file has no numRecords.
	Rows        int64
	RowsKnown   bool
	DeletedRows int64 // rows hidden by deletion vectors
}

// Inspect summarises a snapshot from the log alone (no data file is read).
func Inspect(snap *delta.Snapshot) (*Facts, error) {
	f := &Facts{
		Location: snap.Table().Location(), Version: snap.Version(), Protocol: snap.Protocol(), Schema: snap.Schema(),
		ColumnMapping: snap.ColumnMappingMode(), PartitionColumns: snap.Metadata().PartitionColumns,
		Properties: snap.Properties(), RowsKnown: true,
	}
	cols, clustered, err := snap.ClusteringColumnsLogical()
	if err != nil {
		return nil, err
	}
	if clustered {
		f.ClusteringColumns = []string{}
		for _, c := range cols {
			f.ClusteringColumns = append(f.ClusteringColumns, strings.Join(c, "."))
		}
	}
	f.SmallFileThreshold = DefaultSmallFileThreshold
	if size, ok, err := snap.Properties().TargetFileSize(); err != nil {
		return nil, fmt.Errorf("table %s: %w", f.Location, err)
	} else if ok {
		f.SmallFileThreshold = size / 2
	}
	f.Histogram = make([]Bucket, len(HistogramBounds)+1)
	for i, b := range HistogramBounds {
		f.Histogram[i].UpTo = b
	}
	for _, a := range snap.Files() {
		f.NumFiles++
		f.Bytes += a.Size
		i, _ := slices.BinarySearch(HistogramBounds, a.Size+1)
		f.Histogram[i].Files++
		f.Histogram[i].Bytes += a.Size
		if a.Size < f.SmallFileThreshold {
			f.NumSmallFiles++
			f.SmallBytes += a.Size
		}
		if len(f.ClusteringColumns) > 0 && ClassifyClustering(a, f.ClusteringColumns).NeedsClustering() {
			f.UnclusteredFiles++
			f.UnclusteredBytes += a.Size
		}
		var deleted int64
		if a.DeletionVector != nil {
			deleted = a.DeletionVector.Cardinality
		}
		f.DeletedRows += deleted
		if n, ok := delta.NumRecords(a.Stats); ok {
			f.Rows += n - deleted
		} else {
			f.RowsKnown = false
		}
	}
	return f, nil
}

// Result renders the facts as the result document's table section.
func (f *Facts) Result() *result.Table {
	t := &result.Table{
		Version: int64(f.Version), NumFiles: f.NumFiles, SizeBytes: f.Bytes, NumSmallFiles: f.NumSmallFiles,
		SmallFileThreshold: f.SmallFileThreshold, UnclusteredBytes: f.UnclusteredBytes,
		PartitionColumns: f.PartitionColumns, ClusteringColumns: f.ClusteringColumns,
		MinReaderVersion: int32(f.Protocol.MinReaderVersion), MinWriterVersion: int32(f.Protocol.MinWriterVersion),
		ReaderFeatures: f.Protocol.ReaderFeatureSet(), WriterFeatures: f.Protocol.WriterFeatureSet(),
	}
	return t
}

// ClusteringQuality computes, per clustering column, how well the live files' min/max ranges support
// data skipping (layoutstats.Quality over the files' statistics).
func ClusteringQuality(snap *delta.Snapshot, columns []string) ([]result.ColumnQuality, error) {
	out := make([]result.ColumnQuality, 0, len(columns))
	for _, col := range columns {
		path := strings.Split(col, ".")
		bounds := make([]layoutstats.Bounds, 0, snap.NumFiles())
		for _, a := range snap.Files() {
			var b layoutstats.Bounds
			if st, ok, err := snap.Stats(a); err == nil && ok {
				if cs, ok := st.Column(path...); ok {
					b = layoutstats.Bounds{Min: cs.Min, Max: cs.MaxUpperBound()}
				}
			}
			bounds = append(bounds, b)
		}
		q, err := layoutstats.Quality(col, bounds)
		if err != nil {
			return nil, fmt.Errorf("clustering quality of %s: %w", col, err)
		}
		out = append(out, result.ColumnQuality{
			Column: q.Column, Status: q.Status, NumFiles: q.NumFiles, NumFilesWithStats: q.NumFilesWithStats,
			AvgCoveragePct: q.AvgCoveragePct, AvgDepth: q.AvgDepth, MaxDepth: q.MaxDepth,
			OverlapRatio: q.OverlapRatio, SkippingEffectiveness: q.SkippingEffectiveness, MeasuredSkipping: q.MeasuredSkipping,
		})
	}
	return out, nil
}
