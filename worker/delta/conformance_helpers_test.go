package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// conformanceTable is one record of ../shared/delta-conformance/index.json.
type conformanceTable struct {
	Name             string   `json:"name"`
	Source           string   `json:"source"`
	Role             string   `json:"role"`
	TableRoot        string   `json:"table_root"`
	MaxVersion       *int64   `json:"max_version"`
	LiveFiles        int      `json:"live_files"`
	Features         []string `json:"features"`
	MinReader        int      `json:"minReader"`
	MinWriter        int      `json:"minWriter"`
	LiveRowsFromStat *int64   `json:"live_rows_from_stats"`
	Notes            string   `json:"notes"`
}

func (c conformanceTable) hasFeature(f string) bool {
	for _, x := range c.Features {
		if x == f {
			return true
		}
	}
	return false
}

func conformanceTables(t testing.TB) (string, []conformanceTable) {
	dir := testutil.ConformanceDir(t)
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tables []conformanceTable
	if err := json.Unmarshal(data, &tables); err != nil {
		t.Fatalf("parse index.json: %v", err)
	}
	if len(tables) == 0 {
		t.Fatal("index.json lists no tables")
	}
	return dir, tables
}

// conformanceStore opens a conformance table read-only in place. Tests that write must use
// copyTable instead.
func conformanceStore(t testing.TB, dir string, c conformanceTable) storage.Store {
	t.Helper()
	s, err := storage.NewLocal(filepath.Join(dir, c.Source, c.Name, c.TableRoot))
	if err != nil {
		t.Fatal(err)
	}
	return readOnlyStore{s}
}

// readOnlyStore fails every write, so a bug can never modify the shared corpus.
type readOnlyStore struct{ storage.Store }

func errReadOnly(key string) error {
	return fmt.Errorf("conformance corpus is read-only: write to %s", key)
}

func (readOnlyStore) Put(_ context.Context, key string, _ []byte) error { return errReadOnly(key) }
func (readOnlyStore) PutIfAbsent(_ context.Context, key string, _ []byte) error {
	return errReadOnly(key)
}
func (readOnlyStore) Create(_ context.Context, key string) (storage.Writer, error) {
	return nil, errReadOnly(key)
}
func (readOnlyStore) Delete(_ context.Context, key string) error { return errReadOnly(key) }

// copyTable copies a conformance table into a temporary directory for tests that write.
func copyTable(t testing.TB, dir string, c conformanceTable) (string, storage.Store) {
	t.Helper()
	src := filepath.Join(dir, c.Source, c.Name, c.TableRoot)
	dst := filepath.Join(t.TempDir(), c.Name)
	err := filepath.WalkDir(src, func(p string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		rel, _ := filepath.Rel(src, p)
		target := filepath.Join(dst, rel)
		if d.IsDir() {
			return os.MkdirAll(target, 0o755)
		}
		data, err := os.ReadFile(p)
		if err != nil {
			return err
		}
		if err := os.WriteFile(target, data, 0o644); err != nil {
			return err
		}
		info, err := d.Info()
		if err != nil {
			return err
		}
		return os.Chtimes(target, info.ModTime(), info.ModTime())
	})
	if err != nil {
		t.Fatalf("copy %s: %v", src, err)
	}
	s, err := storage.NewLocal(dst)
	if err != nil {
		t.Fatal(err)
	}
	return dst, s
}

func asErr[T error](err error, target *T) bool { return errors.As(err, target) }
