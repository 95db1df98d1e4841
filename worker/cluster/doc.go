// Package cluster implements liquid clustering: the space-filling curves (Z-order for one column, Hilbert
// for two to four) over per-column range ids from sampled quantiles, the clustering-quality metrics computed
// from file statistics, and the overlap analysis that makes reclustering incremental (new data forms its own
// clustered files first and merges with older files only where files are stacked over the same region).
package cluster
