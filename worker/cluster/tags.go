package cluster

import (
	"encoding/json"
	"strconv"
	"strings"

	"github.com/google/uuid"

	"github.com/deltakeeper/deltakeeper/worker/table"
)

// AddFile tag keys of Delta's liquid clustering and Z-order: the table package's (table.TagZCubeID),
// which reads them too.
const (
	TagZCubeID            = table.TagZCubeID
	TagZCubeZOrderBy      = table.TagZCubeZOrderBy
	TagZCubeCurve         = table.TagZCubeCurve
	TagOptimizeTargetSize = table.TagOptimizeTargetSize
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
