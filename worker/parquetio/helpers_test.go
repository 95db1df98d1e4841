package parquetio

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

// osReaderAt adapts a local file to storage.ReaderAt.
type osReaderAt struct {
	*os.File
	size int64
}

func (r osReaderAt) Size() int64 { return r.size }

func openLocal(t testing.TB, path string) storage.ReaderAt {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	st, err := f.Stat()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { f.Close() })
	return osReaderAt{File: f, size: st.Size()}
}

// bytesReaderAt is an in-memory storage.ReaderAt.
type bytesReaderAt struct{ *bytes.Reader }

func (bytesReaderAt) Close() error { return nil }

func memReader(b []byte) storage.ReaderAt { return bytesReaderAt{bytes.NewReader(b)} }

// memWriter is an in-memory storage.Writer.
type memWriter struct {
	bytes.Buffer
	closed, aborted bool
}

func (w *memWriter) Close() error { w.closed = true; return nil }
func (w *memWriter) Abort() error { w.aborted = true; return nil }

// conformanceFiles lists every .parquet file below the conformance directory, sorted.
func conformanceFiles(t testing.TB) (root string, files []string) {
	root = testutil.ConformanceDir(t)
	err := filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			files = append(files, p)
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	sort.Strings(files)
	if len(files) == 0 {
		t.Fatalf("no .parquet files under %s", root)
	}
	return root, files
}

// tableInfo is what the conformance tests need from a table's log: the latest schema in physical form
// and whether columns are matched by field id.
type tableInfo struct {
	schema   *types.StructType
	matchIDs bool
	// dataSchema is schema without the partition columns, which data files do not store.
	dataSchema *types.StructType
}

// tableRoot returns the table root of a data file (the directory holding _delta_log), or "" for files
// that are not table data (logs, checkpoints, expected results).
func tableRoot(path string) string {
	if strings.Contains(path, "/_delta_log/") || strings.Contains(path, "/expected/") {
		return ""
	}
	for dir := filepath.Dir(path); dir != "/" && dir != "."; dir = filepath.Dir(dir) {
		if st, err := os.Stat(filepath.Join(dir, "_delta_log")); err == nil && st.IsDir() {
			return dir
		}
	}
	return ""
}

// readTableInfo replays just enough of a log: the last metaData in the JSON commits, else the one in the
// newest checkpoint (read with this package, derived schema).
func readTableInfo(t testing.TB, root string) (tableInfo, bool) {
	t.Helper()
	logDir := filepath.Join(root, "_delta_log")
	entries, err := os.ReadDir(logDir)
	if err != nil {
		t.Fatal(err)
	}
	var schemaString string
	var config map[string]string
	var partitions []string
	for _, e := range entries {
		if !strings.HasSuffix(e.Name(), ".json") || len(e.Name()) != 25 {
			continue
		}
		f, err := os.Open(filepath.Join(logDir, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(f)
		sc.Buffer(make([]byte, 1<<20), 64<<20)
		for sc.Scan() {
			var a struct {
				MetaData *struct {
					SchemaString     string            `json:"schemaString"`
					Configuration    map[string]string `json:"configuration"`
					PartitionColumns []string          `json:"partitionColumns"`
				} `json:"metaData"`
			}
			if json.Unmarshal(sc.Bytes(), &a) == nil && a.MetaData != nil {
				schemaString, config, partitions = a.MetaData.SchemaString, a.MetaData.Configuration, a.MetaData.PartitionColumns
			}
		}
		f.Close()
	}
	if schemaString == "" {
		schemaString, config = checkpointMetadata(t, logDir, entries)
	}
	if schemaString == "" {
		return tableInfo{}, false
	}
	s, err := types.ParseSchema(schemaString)
	if err != nil {
		t.Fatalf("%s: %v", root, err)
	}
	data := &types.StructType{}
	for _, f := range s.Fields {
		if !slices.Contains(partitions, f.Name) {
			data.Fields = append(data.Fields, f)
		}
	}
	mode := config["delta.columnMapping.mode"]
	if mode == "name" || mode == "id" {
		s, data = physicalStruct(s), physicalStruct(data)
	}
	return tableInfo{schema: s, dataSchema: data, matchIDs: mode == "id"}, true
}

func checkpointMetadata(t testing.TB, logDir string, entries []os.DirEntry) (string, map[string]string) {
	var latest string
	for _, e := range entries {
		if strings.Contains(e.Name(), ".checkpoint") && strings.HasSuffix(e.Name(), ".parquet") {
			latest = e.Name()
		}
	}
	if latest == "" {
		return "", nil
	}
	f, err := Open(context.Background(), openLocal(t, filepath.Join(logDir, latest)))
	if err != nil {
		t.Fatal(err)
	}
	want := &types.StructType{Fields: []*types.StructField{{Name: "metaData", Nullable: true, Type: &types.StructType{Fields: []*types.StructField{
		{Name: "schemaString", Type: types.Primitive(types.TypeString), Nullable: true},
		{Name: "configuration", Type: &types.MapType{KeyType: types.Primitive(types.TypeString), ValueType: types.Primitive(types.TypeString), ValueContainsNull: true}, Nullable: true},
	}}}}}
	rows := readAll(t, f, want, ReadOptions{})
	for _, r := range rows {
		md, ok := r[0].(types.Struct)
		if !ok {
			continue
		}
		config := map[string]string{}
		if m, ok := md[1].(types.Map); ok {
			for _, e := range m {
				if v, ok := e.Value.(string); ok {
					config[e.Key.(string)] = v
				}
			}
		}
		s, _ := md[0].(string)
		return s, config
	}
	return "", nil
}

// physicalStruct renames every field (nested ones included) to its column-mapping physical name.
func physicalStruct(s *types.StructType) *types.StructType {
	return types.MapFields(s, func(f *types.StructField) *types.StructField {
		nf := *f
		nf.Name = f.PhysicalName()
		return &nf
	}).(*types.StructType)
}

// readAll reads every live row.
func readAll(t testing.TB, f *File, schema *types.StructType, opts ReadOptions) []types.Struct {
	t.Helper()
	rows, _ := readAllWithIndex(t, f, schema, opts)
	return rows
}

func readAllWithIndex(t testing.TB, f *File, schema *types.StructType, opts ReadOptions) ([]types.Struct, []int64) {
	t.Helper()
	rr, err := f.Rows(context.Background(), schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	var rows []types.Struct
	var idx []int64
	for {
		b, err := rr.Next()
		if errors.Is(err, io.EOF) {
			return rows, idx
		}
		if err != nil {
			t.Fatal(err)
		}
		rows = append(rows, b.Rows...)
		idx = append(idx, b.RowIndexes...)
	}
}
