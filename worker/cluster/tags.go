package cluster

import (
	"encoding/json"
	"slices"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// AddFile tag keys of Delta's liquid clustering and Z-order (AddFile.Tags in delta-io/delta
// actions.scala; ZCubeInfo.scala writes the first two). Spark reads a file's ZCube from ZCUBE_ID plus
// ZCUBE_ZORDER_BY, a JSON array of the logical clustering column names; Databricks adds the curve and
// the target size.
const (
	TagZCubeID            = "ZCUBE_ID"
	TagZCubeZOrderBy      = "ZCUBE_ZORDER_BY"
	TagZCubeCurve         = "ZCUBE_ZORDER_CURVE"
	TagOptimizeTargetSize = "OPTIMIZE_TARGET_SIZE"
)

// Curve names recorded in TagZCubeCurve.
const (
	CurveHilbert = "hilbert"
	CurveZOrder  = "zorder"
)

// logicalNames renders column paths the way Spark's ClusteringColumnInfo.extractLogicalNames does:
// dotted, with a part that itself contains a dot quoted in backticks.
func logicalNames(paths [][]string) []string {
	out := make([]string, len(paths))
	for i, p := range paths {
		parts := make([]string, len(p))
		for j, s := range p {
			if strings.ContainsAny(s, ".`") {
				s = "`" + strings.ReplaceAll(s, "`", "``") + "`"
			}
			parts[j] = s
		}
		out[i] = strings.Join(parts, ".")
	}
	return out
}

// zcube identifies the output of one clustering run: like Spark, one fresh ZCube per run (bin).
type zcube struct {
	id, orderBy, curve string
	target             int64
}

func newZCube(columns []string, curve string, target int64) zcube {
	by, _ := json.Marshal(columns) // a []string always marshals
	return zcube{id: uuid.NewString(), orderBy: string(by), curve: curve, target: target}
}

// tags are the add.tags of every file of the ZCube, the ones Spark's ClusteringStrategy.tagAddFile
// sets; the files also get clusteringProvider Provider (table.WriteOptions).
func (z zcube) tags() map[string]string {
	return map[string]string{
		TagZCubeID:            z.id,
		TagZCubeZOrderBy:      z.orderBy,
		TagZCubeCurve:         z.curve,
		TagOptimizeTargetSize: strconv.FormatInt(z.target, 10),
	}
}

// fileClass is how a live file relates to the current clustering definition.
type fileClass int

const (
	classUnclustered  fileClass = iota // no ZCube: appended, or written before CLUSTER BY
	classOtherColumns                  // clustered by columns other than the current ones
	classClustered                     // clustered by the current columns: a candidate for auto-recluster only
	classForeign                       // written by another clustering provider: never reclustered
)

// classify applies the protocol's rule (a clustering implementation only reclusters files with its
// provider or none) and Spark's ZCube identity (ZCUBE_ID plus ZCUBE_ZORDER_BY; a file missing either
// counts as unclustered, as in Spark's ClusteringStrategy.applyMinZCube).
func classify(a *delta.AddFile, columns []string) fileClass {
	if a.ClusteringProvider != "" && a.ClusteringProvider != Provider {
		return classForeign
	}
	if a.ClusteringProvider == "" {
		return classUnclustered
	}
	if _, ok := a.Tags[TagZCubeID]; !ok {
		return classUnclustered
	}
	tag, ok := a.Tags[TagZCubeZOrderBy]
	if !ok {
		return classUnclustered
	}
	var by []string
	if err := json.Unmarshal([]byte(tag), &by); err != nil {
		return classUnclustered
	}
	if !slices.EqualFunc(by, columns, strings.EqualFold) {
		return classOtherColumns
	}
	return classClustered
}
