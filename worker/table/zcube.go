package table

import (
	"encoding/json"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// AddFile tag keys of Delta's liquid clustering and Z-order (AddFile.Tags in delta-io/delta
// actions.scala; ZCubeInfo.scala writes the first two). Spark reads a file's ZCube from ZCUBE_ID plus
// ZCUBE_ZORDER_BY, a JSON array of the logical clustering column names; Databricks adds the curve and
// the target size. The cluster package writes them; Inspect and clustering's file selection read them
// through ClassifyClustering, so that "unclustered" means the same to both.
const (
	TagZCubeID            = "ZCUBE_ID"
	TagZCubeZOrderBy      = "ZCUBE_ZORDER_BY"
	TagZCubeCurve         = "ZCUBE_ZORDER_CURVE"
	TagOptimizeTargetSize = "OPTIMIZE_TARGET_SIZE"
)

// LiquidProvider is the clusteringProvider of liquid clustering: Spark and Databricks treat files
// that carry it as their own, and we treat theirs as ours.
const LiquidProvider = "liquid"

// ClusteringClass is how a live file relates to the table's current clustering columns.
type ClusteringClass int

const (
	// Unclustered files have no ZCube: appended, or written before CLUSTER BY.
	Unclustered ClusteringClass = iota
	// ClusteredByOtherColumns files were clustered by columns other than the current ones.
	ClusteredByOtherColumns
	// Clustered files are clustered by the current columns.
	Clustered
	// ForeignClustered files were written by another clustering provider: never reclustered.
	ForeignClustered
)

// NeedsClustering reports whether liquid clustering rewrites the file whatever its neighbours:
// unclustered, or clustered by other columns.
func (c ClusteringClass) NeedsClustering() bool {
	return c == Unclustered || c == ClusteredByOtherColumns
}

// ClassifyClustering applies the protocol's rule (a clustering implementation only reclusters files
// with its provider or none) and Spark's ZCube identity (ZCUBE_ID plus ZCUBE_ZORDER_BY; a file missing
// either counts as unclustered, as in Spark's ClusteringStrategy.applyMinZCube). columns are the
// logical clustering column names, compared case-insensitively.
func ClassifyClustering(a *delta.AddFile, columns []string) ClusteringClass {
	if a.ClusteringProvider != "" && a.ClusteringProvider != LiquidProvider {
		return ForeignClustered
	}
	if a.ClusteringProvider == "" {
		return Unclustered
	}
	if _, ok := a.Tags[TagZCubeID]; !ok {
		return Unclustered
	}
	tag, ok := a.Tags[TagZCubeZOrderBy]
	if !ok {
		return Unclustered
	}
	var by []string
	if err := json.Unmarshal([]byte(tag), &by); err != nil {
		return Unclustered
	}
	if !slices.EqualFunc(by, columns, strings.EqualFold) {
		return ClusteredByOtherColumns
	}
	return Clustered
}
