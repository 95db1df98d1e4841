// Package cluster implements liquid clustering and Z-order: the space-filling curves (Z-order for one
// column, Hilbert for two to four) over per-column range ids from sampled quantiles, the file selection
// that makes reclustering incremental (new data forms its own clustered files first and merges with older
// files only where files are stacked over the same region, layoutstats.OverlapGroups), and the sort that
// rewrites the selected files, whose outputs are named, written, described and deleted by the table's
// output path (table.RewriteOutputs).
package cluster
