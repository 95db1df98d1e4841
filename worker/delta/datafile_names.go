package delta

import (
	"fmt"
	"regexp"
	"strings"

	"github.com/google/uuid"
)

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

// DataFileName returns a new Spark-like data file name: part-<seq>-<uuid>.c000.<codec>.parquet. Every
// writer of data files (appends, compaction, clustering) names its outputs this way.
func DataFileName(seq int, codec string) string {
	return fmt.Sprintf("part-%05d-%s.c000%s.parquet", seq, uuid.NewString(), codecExtension(codec))
}

// dataFileNameRE matches exactly what DataFileName returns (Spark's own names have "-c000" instead).
var dataFileNameRE = regexp.MustCompile(`^part-[0-9]{5,}-[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}\.c000(\.zstd|\.snappy|\.gz|\.lz4raw|\.br)?\.parquet$`)

// IsDataFileName reports whether a base name is one DataFileName could have returned: a data file
// deltakeeper wrote. Vacuum uses it to tell its own abandoned S3 uploads from other writers'.
func IsDataFileName(name string) bool { return dataFileNameRE.MatchString(name) }
