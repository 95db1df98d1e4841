// Package localfs adapts local files to the worker's storage interfaces for the benchmark tools.
package localfs

import (
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// ReaderAt is a local file opened for random access.
type ReaderAt struct {
	*os.File
	size int64
}

// Size returns the file size.
func (r *ReaderAt) Size() int64 { return r.size }

// Open opens path for reading.
func Open(path string) (*ReaderAt, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, err
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, err
	}
	return &ReaderAt{File: f, size: st.Size()}, nil
}

// Writer writes a local file; Abort removes it.
type Writer struct {
	*os.File
}

var _ storage.Writer = (*Writer)(nil)

// Create creates path.
func Create(path string) (*Writer, error) {
	f, err := os.Create(path)
	if err != nil {
		return nil, err
	}
	return &Writer{File: f}, nil
}

// Abort discards the file.
func (w *Writer) Abort() error {
	w.File.Close()
	return os.Remove(w.Name())
}

// ParquetFiles lists the .parquet files of dir, sorted.
func ParquetFiles(dir string) ([]string, error) {
	entries, err := os.ReadDir(dir)
	if err != nil {
		return nil, err
	}
	var out []string
	for _, e := range entries {
		if !e.IsDir() && strings.HasSuffix(e.Name(), ".parquet") {
			out = append(out, filepath.Join(dir, e.Name()))
		}
	}
	sort.Strings(out)
	if len(out) == 0 {
		return nil, fmt.Errorf("no .parquet files in %s", dir)
	}
	return out, nil
}
