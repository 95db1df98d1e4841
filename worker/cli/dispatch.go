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

// clusterFlags are maintain's --cluster flags (incremental liquid clustering).
type clusterFlags struct {
	full                bool
	autoRecluster       bool
	minOffendingFiles   int
	minOverlapThreshold float64
}

func defaultClusterFlags() clusterFlags { return clusterFlags{autoRecluster: true} }

func (f *clusterFlags) bind(fs *pflag.FlagSet) {
	fs.BoolVar(&f.full, "full", false, "recluster every file, not only those that need it (OPTIMIZE … FULL)")
	fs.BoolVar(&f.autoRecluster, "auto-recluster", true, "also recluster groups of clustered files stacked over a common region")
	fs.IntVar(&f.minOffendingFiles, "min-offending-files", 0, "smallest group of overlapping clustered files worth reclustering (default 4)")
	fs.Float64Var(&f.minOverlapThreshold, "min-overlap-threshold", 0, "overlap score above which two clustered files overlap, in (0.25, 1] (default 0.75)")
}

func (f *clusterFlags) changed(fs *pflag.FlagSet) string {
	for _, n := range []string{"full", "auto-recluster", "min-offending-files", "min-overlap-threshold"} {
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
	return cluster.Optimize(ctx, snap.Table(), snap, clusterOptions(cf, opts), progress)
}

func runZOrder(ctx context.Context, snap *delta.Snapshot, columns []string, opts optimize.Options, progress func(string)) (*result.Op, error) {
	return cluster.ZOrder(ctx, snap.Table(), snap, columns, opts.Where, clusterOptions(defaultClusterFlags(), opts), progress)
}

func clusterOptions(cf clusterFlags, opts optimize.Options) cluster.Options {
	return cluster.Options{
		TargetFileSize: opts.TargetFileSize, Full: cf.full, AutoRecluster: cf.autoRecluster,
		MinOffendingFiles: cf.minOffendingFiles, MinOverlapThreshold: cf.minOverlapThreshold,
		MemoryLimit: sortMemory(), Parallelism: opts.Parallelism, DryRun: opts.DryRun,
	}
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
