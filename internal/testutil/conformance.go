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
