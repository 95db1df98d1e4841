package delta

import (
	"fmt"
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
