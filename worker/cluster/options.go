package cluster

import (
	"fmt"
	"os"

	"github.com/deltakeeper/deltakeeper/worker/layoutstats"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// Options tune Optimize (liquid clustering) and ZOrder. The clustering switches mirror Microsoft
// Fabric's settings (spark.microsoft.delta.optimize.clustering.strategy.incremental.*): Full=false is
// incremental=true, AutoRecluster, MinOffendingFiles and MinOverlapThreshold keep their names.
type Options struct {
	// TargetFileSize is the size of the files written; 0 means delta.targetFileSize, else
	// delta.DefaultTargetFileSize.
	TargetFileSize int64
	// Full reclusters every file under the current clustering columns (OPTIMIZE … FULL); otherwise
	// only the files that need it are rewritten (incremental clustering).
	Full bool
	// AutoRecluster rewrites groups of already clustered files stacked over a common region.
	AutoRecluster bool
	// MinOffendingFiles is the smallest group of mutually overlapping clustered files worth
	// reclustering (≥ 2; 0 means DefaultMinOffendingFiles).
	MinOffendingFiles int
	// MinOverlapThreshold is the pair score above which two clustered files overlap, in (0.25, 1.0]
	// (0 means DefaultMinOverlapThreshold).
	MinOverlapThreshold float64
	// MaxQualityGap bounds the drift of incremental clustering: when the layout a run would leave is
	// forecast to be more than this below what FULL reaches on the same data (skipping effectiveness,
	// on any clustering column), the run also reclusters the drifted ZCubes, smallest first, until it is
	// not (escalate). In (0, 1]; 1 never escalates; 0 means DefaultMaxQualityGap.
	MaxQualityGap float64
	// NoRegions clusters new data on its own instead of cutting it along the regions of the table's
	// base layout (regions.go).
	NoRegions bool
	// RegionFanout is how many aligned pieces of one region and level accumulate before they merge
	// into one piece of the next level (≥ 2; 0 means DefaultRegionFanout).
	RegionFanout int
	// MemoryLimit bounds the rows held in memory for sorting; more data spills to TempDir
	// (0 means DefaultMemoryLimit).
	MemoryLimit int64
	// TempDir receives spill files ("" means $TMPDIR).
	TempDir string
	// Parallelism is the number of files read and written at once (0 means GOMAXPROCS).
	Parallelism int
	// DryRun plans and reports without writing anything.
	DryRun bool
}

// Defaults, from Microsoft Fabric's incremental clustering and Delta's OPTIMIZE.
const (
	DefaultMinOffendingFiles   = 4
	DefaultMinOverlapThreshold = 0.75
	DefaultMemoryLimit         = 1 << 30
	// DefaultMaxQualityGap keeps incremental clustering within 0.05 of FULL's skipping effectiveness.
	DefaultMaxQualityGap = 0.05
	// MaxDeletedRowsRatio: a file whose deletion vector hides more than this share of its rows is
	// rewritten to purge them (Delta's spark.databricks.delta.optimize.maxDeletedRowsRatio).
	MaxDeletedRowsRatio = 0.05
	// Provider is the clusteringProvider of liquid clustering (table.LiquidProvider).
	Provider = table.LiquidProvider
)

// DefaultOptions are incremental clustering with auto-recluster, Fabric's defaults.
func DefaultOptions() Options {
	return Options{AutoRecluster: true, MinOffendingFiles: DefaultMinOffendingFiles, MinOverlapThreshold: DefaultMinOverlapThreshold,
		MaxQualityGap: DefaultMaxQualityGap}
}

// withDefaults fills zero values and validates.
func (o Options) withDefaults() (Options, error) {
	if o.MinOffendingFiles == 0 {
		o.MinOffendingFiles = DefaultMinOffendingFiles
	}
	if o.MinOverlapThreshold == 0 {
		o.MinOverlapThreshold = DefaultMinOverlapThreshold
	}
	if o.MaxQualityGap == 0 {
		o.MaxQualityGap = DefaultMaxQualityGap
	}
	if !(o.MaxQualityGap > 0 && o.MaxQualityGap <= 1) {
		return o, fmt.Errorf("max quality gap must be in (0, 1], got %v", o.MaxQualityGap)
	}
	if o.MemoryLimit == 0 {
		o.MemoryLimit = DefaultMemoryLimit
	}
	if o.RegionFanout == 0 {
		o.RegionFanout = DefaultRegionFanout
	}
	if o.RegionFanout < 2 {
		return o, fmt.Errorf("region fanout must be at least 2, got %d", o.RegionFanout)
	}
	if o.TempDir == "" {
		o.TempDir = os.TempDir()
	}
	if o.TargetFileSize < 0 {
		return o, fmt.Errorf("target file size must be positive, got %d", o.TargetFileSize)
	}
	if o.MemoryLimit < 16<<20 {
		return o, fmt.Errorf("memory limit %d bytes is below the 16 MiB clustering needs", o.MemoryLimit)
	}
	if err := o.overlap().Validate(); err != nil {
		return o, err
	}
	return o, nil
}

func (o Options) overlap() layoutstats.OverlapOptions {
	return layoutstats.OverlapOptions{MinOverlapThreshold: o.MinOverlapThreshold, MinOffendingFiles: o.MinOffendingFiles, SizeAware: true}
}
