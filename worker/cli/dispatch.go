package cli

import (
	"context"
	"math"
	"runtime/debug"

	"github.com/spf13/pflag"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// clusterFlags are the clustering switches of optimize and maintain --cluster. They mirror Microsoft Fabric's
// settings (incremental on/off, autoRecluster on/off, minOffendingFiles, minOverlapThreshold), plus the
// sort's memory budget and spill directory.
type clusterFlags struct {
	full                bool
	incremental         bool
	autoRecluster       bool
	minOffendingFiles   int
	minOverlapThreshold float64
	maxQualityGap       float64
	alignNewData        bool
	regionFanout        int
	memoryLimit         string
	tmpDir              string
}

func defaultClusterFlags() clusterFlags {
	return clusterFlags{incremental: true, autoRecluster: true, alignNewData: true}
}

func (f *clusterFlags) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&f.full, "full", false, "recluster every file, not only those that need it (OPTIMIZE … FULL)")
	fs.BoolVar(&f.incremental, "incremental", true, "cluster incrementally; false reclusters every file, as --full does")
	fs.BoolVar(&f.autoRecluster, "auto-recluster", true, "also recluster groups of clustered files stacked over a common region")
	fs.IntVar(&f.minOffendingFiles, "min-offending-files", 0, "smallest group of overlapping clustered files worth reclustering (default 4)")
	fs.Float64Var(&f.minOverlapThreshold, "min-overlap-threshold", 0, "overlap score above which two clustered files overlap, in (0.25, 1] (default 0.75)")
	fs.Float64Var(&f.maxQualityGap, "max-quality-gap", 0, "largest forecast skipping gap to FULL an incremental run may leave; beyond it the drifted ZCubes are reclustered too, in (0, 1], 1 never (default 0.05)")
	fs.BoolVar(&f.alignNewData, "align-new-data", true, "cut an incremental run's new data along the files of the table's largest ZCube, one piece per file it lies in; false clusters it on its own")
	fs.IntVar(&f.regionFanout, "region-fanout", 0, "aligned pieces of one region and level that merge into one piece of the next level, at least 2 (default 20)")
	fs.StringVar(&f.memoryLimit, "memory-limit", "", "memory for sorting rows along the curve (512m, 2g, 2Gi: powers of 1024); beyond it the sort spills to --tmp-dir (default: half of GOMEMLIMIT when set)")
	fs.StringVar(&f.tmpDir, "tmp-dir", "", "directory for spill files (default: $TMPDIR; Jobs give it an emptyDir)")
}

// clusteringOnly lists the flags that only mean something for a clustered table.
var clusteringOnly = []string{"full", "incremental", "auto-recluster", "min-offending-files", "min-overlap-threshold", "max-quality-gap",
	"align-new-data", "region-fanout"}

func (f *clusterFlags) changed(fs *pflag.FlagSet) string {
	for _, n := range append(clusteringOnly, "memory-limit", "tmp-dir") {
		if fs.Changed(n) {
			return n
		}
	}
	return ""
}

// runClustering clusters a clustered table incrementally (or fully, with --full) through
// worker/cluster, and runZOrder Z-orders the selected partitions of an unclustered one. The
// compaction options that apply carry over: target size, parallelism, dry run, and --where for Z-order.
func runClustering(ctx context.Context, snap *delta.Snapshot, cf clusterFlags, opts optimize.Options, progress func(string)) (*result.Op, error) {
	copts, err := clusterOptions(cf, opts)
	if err != nil {
		return nil, err
	}
	return cluster.Optimize(ctx, snap.Table(), snap, copts, progress)
}

func runZOrder(ctx context.Context, snap *delta.Snapshot, columns []string, cf clusterFlags, opts optimize.Options, progress func(string)) (*result.Op, error) {
	copts, err := clusterOptions(cf, opts)
	if err != nil {
		return nil, err
	}
	return cluster.ZOrder(ctx, snap.Table(), snap, columns, opts.Where, copts, progress)
}

func clusterOptions(cf clusterFlags, opts optimize.Options) (cluster.Options, error) {
	memory := sortMemory()
	if cf.memoryLimit != "" {
		n, err := parseSize("--memory-limit", cf.memoryLimit)
		if err != nil {
			return cluster.Options{}, err
		}
		memory = n
	}
	return cluster.Options{
		TargetFileSize: opts.TargetFileSize, Full: cf.full || !cf.incremental, AutoRecluster: cf.autoRecluster,
		MinOffendingFiles: cf.minOffendingFiles, MinOverlapThreshold: cf.minOverlapThreshold, MaxQualityGap: cf.maxQualityGap,
		NoRegions: !cf.alignNewData, RegionFanout: cf.regionFanout,
		MemoryLimit: memory, TempDir: cf.tmpDir, Parallelism: opts.Parallelism, DryRun: opts.DryRun,
	}, nil
}

// sortMemory is the clustering sort's memory budget: half of the Go memory limit when one is set (a
// Job's GOMEMLIMIT, below its container limit), so that sorting spills instead of getting the pod
// killed; the package default otherwise.
func sortMemory() int64 {
	limit := debug.SetMemoryLimit(-1)
	if limit == math.MaxInt64 {
		return 0
	}
	return max(limit/2, 16<<20)
}
