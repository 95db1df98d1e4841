package table

import (
	"fmt"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// HiveDefaultPartition is the directory value of a null partition value (Hive's and Spark's).
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// EscapePathName escapes a partition column name or value for a directory name the way Spark's
// ExternalCatalogUtils.escapePathName does: control characters and "#%'*/:=?\{[]^ and DEL become
// %XX (upper-case hex); everything else, spaces and non-ASCII included, stays as it is.
func EscapePathName(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7f || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			fmt.Fprintf(&b, "%%%02X", c)
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}

// partitionDir returns the Hive-style directory ("a=1/b=x%2Fy/") of a file with these partition
// values, columns in the table's partition-column order, under their physical names.
func partitionDir(snap *delta.Snapshot, pv delta.PartitionValues) string {
	var b strings.Builder
	for _, f := range snap.PartitionColumns() {
		name := delta.PhysicalName(f, snap.ColumnMappingMode())
		v, ok := pv.Get(name)
		val := HiveDefaultPartition
		if ok && !v.IsNull() {
			val = EscapePathName(v.Value)
		}
		b.WriteString(EscapePathName(name))
		b.WriteByte('=')
		b.WriteString(val)
		b.WriteByte('/')
	}
	return b.String()
}
