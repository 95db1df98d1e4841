package tabletest

import (
	"io/fs"
	"path/filepath"
	"slices"
	"strings"
)

// ParquetFiles lists the Parquet files under a local table directory (data files, and checkpoints in
// _delta_log), sorted: what a test compares before and after a command to see what it wrote or left.
func ParquetFiles(dir string) ([]string, error) {
	var out []string
	err := filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(path, ".parquet") {
			out = append(out, path)
		}
		return err
	})
	slices.Sort(out)
	return out, err
}
