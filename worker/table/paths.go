package table

import (
	"fmt"
	"strings"

	"github.com/google/uuid"

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

// codecExtension is the file-name infix Spark uses for a codec ("part-…c000.zstd.parquet").
func codecExtension(codec string) string {
	switch strings.ToLower(codec) {
	case "", "zstd":
		return ".zstd"
	case "snappy":
		return ".snappy"
	case "gzip":
		return ".gz"
	case "lz4", "lz4_raw":
		return ".lz4raw"
	case "brotli":
		return ".br"
	}
	return "" // uncompressed / none
}

// dataFileName returns a new Spark-like data file name: part-<seq>-<uuid>.c000.<codec>.parquet.
func dataFileName(seq int, codec string) string {
	return fmt.Sprintf("part-%05d-%s.c000%s.parquet", seq, uuid.NewString(), codecExtension(codec))
}
