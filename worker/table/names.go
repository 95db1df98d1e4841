package table

import (
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

func equalFold(a, b string) bool { return strings.EqualFold(a, b) }

func columnNames(st *types.StructType) string {
	names := make([]string, len(st.Fields))
	for i, f := range st.Fields {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}
