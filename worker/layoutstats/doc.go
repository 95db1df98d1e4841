// Package layoutstats measures a table's file layout from the files' min/max statistics alone: how
// well the ranges support data skipping on one column (Quality: depth, overlap, coverage and a
// measured point-query skip rate, docs/clustering-quality.md) and which files are stacked over a
// common region on several columns (OverlapGroups, the choice behind incremental reclustering).
//
// It is a leaf: it takes typed bounds (Bounds, Box) and imports only worker/types, so that the table
// package can report clustering quality (table.ClusteringQuality) and the cluster package can plan
// reclustering while cluster writes through table's output path.
package layoutstats
