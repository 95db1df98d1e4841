package cli

import (
	"context"
	"fmt"

	"github.com/spf13/pflag"

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

// runClustering clusters a clustered table incrementally (or fully), and runZOrder Z-orders the
// selected partitions of an unclustered one. Both belong to worker/cluster (cluster.Optimize and
// cluster.ZOrder), which this build does not provide yet: they refuse instead of rewriting, so
// nothing is written to a table whose layout deltakeeper would otherwise degrade.
func runClustering(_ context.Context, snap *delta.Snapshot, _ clusterFlags, _ optimize.Options, _ func(string)) (*result.Op, error) {
	return nil, notAvailable(snap, "incremental clustering of a clustered table")
}

func runZOrder(_ context.Context, snap *delta.Snapshot, _ []string, _ optimize.Options, _ func(string)) (*result.Op, error) {
	return nil, notAvailable(snap, "Z-ordering (--zorder-by)")
}

func notAvailable(snap *delta.Snapshot, what string) error {
	return result.Refuse(result.ReasonUnsupportedFeature, fmt.Errorf(
		"table %s: %s is not available in this build of deltakeeper yet; nothing was changed (compaction without --zorder-by works on unclustered tables)",
		snap.Table().Location(), what))
}
