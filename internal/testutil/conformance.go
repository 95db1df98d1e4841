package testutil

import (
	"os"
	"path/filepath"
	"testing"
)

// ConformanceDir locates the shared Delta conformance tables (real tables written by Spark, Databricks,
// delta-rs): $DELTA_CONFORMANCE_DIR, else ../shared/delta-conformance next to the repository root. A missing
// corpus FAILS the test: a green run without the real tables would prove nothing.
func ConformanceDir(t testing.TB) string {
	t.Helper()
	dir := os.Getenv("DELTA_CONFORMANCE_DIR")
	if dir == "" {
		root, err := RepoRoot()
		if err != nil {
			t.Fatalf("find repository root: %v", err)
		}
		dir = filepath.Join(root, "..", "shared", "delta-conformance")
	}
	if _, err := os.Stat(filepath.Join(dir, "index.json")); err != nil {
		t.Fatalf("conformance tables not found at %s (set DELTA_CONFORMANCE_DIR): %v", dir, err)
	}
	return dir
}

// ConformanceLogFiles returns the commit files (_delta_log/*.json) of every conformance table, for
// tests and fuzz targets that take their seeds from real logs. A missing corpus fails the test.
func ConformanceLogFiles(t testing.TB) []string {
	t.Helper()
	return conformanceFiles(t, func(p string) bool {
		return filepath.Base(filepath.Dir(p)) == "_delta_log" && filepath.Ext(p) == ".json"
	})
}

// ConformanceFiles returns the files of every conformance table whose path matches keep.
func ConformanceFiles(t testing.TB, keep func(path string) bool) []string {
	t.Helper()
	return conformanceFiles(t, keep)
}

func conformanceFiles(t testing.TB, keep func(string) bool) []string {
	t.Helper()
	var out []string
	err := filepath.WalkDir(ConformanceDir(t), func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if !d.IsDir() && keep(p) {
			out = append(out, p)
		}
		return nil
	})
	if err != nil {
		t.Fatalf("walk the conformance tables: %v", err)
	}
	if len(out) == 0 {
		t.Fatal("the conformance tables hold no file the test can use")
	}
	return out
}
