package cluster_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// copyConformanceTable copies a table of ../shared/delta-conformance to a temporary directory; a
// missing corpus fails the test (a green run without the real tables would prove nothing).
func copyConformanceTable(t *testing.T, name string) (*delta.Table, string) {
	t.Helper()
	dir := os.Getenv("DELTA_CONFORMANCE_DIR")
	if dir == "" {
		root, err := testutil.RepoRoot()
		if err != nil {
			t.Fatal(err)
		}
		dir = filepath.Join(root, "..", "shared", "delta-conformance")
	}
	src := filepath.Join(dir, "delta-rs", name, "delta")
	dst := filepath.Join(t.TempDir(), name)
	if err := os.CopyFS(dst, os.DirFS(src)); err != nil {
		t.Fatalf("copy conformance table %s (set DELTA_CONFORMANCE_DIR): %v", src, err)
	}
	if err := filepath.WalkDir(dst, func(p string, d os.DirEntry, err error) error {
		if err != nil {
			return err
		}
		return os.Chmod(p, map[bool]os.FileMode{true: 0o755, false: 0o644}[d.IsDir()])
	}); err != nil {
		t.Fatal(err)
	}
	store, err := storage.Open(context.Background(), dst, storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return delta.NewTable(store), dst
}

func TestOptimize_DatabricksLiquidTableStaysALiquidTable(t *testing.T) {
	ctx := context.Background()
	tbl, _ := copyConformanceTable(t, "table_with_liquid_clustering")
	snap, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cols, ok, err := snap.ClusteringColumns()
	if err != nil || !ok || !slices.EqualFunc(cols, [][]string{{"id"}}, slices.Equal) {
		t.Fatalf("clustering columns = %v, %v, %v; want [[id]]", cols, ok, err)
	}
	before, ids := canonicalRows(t, snap), rowIdentities(t, snap)
	domains, protocol := snap.Domains(), snap.Protocol()

	op, err := cluster.Optimize(ctx, tbl, snap, cluster.DefaultOptions(), nil)
	if err != nil || op.Outcome != result.Succeeded || op.FilesRemoved != 10 {
		t.Fatalf("optimize: %+v, %v; want the 10 unclustered files rewritten", op, err)
	}
	after, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	sameRows(t, before, canonicalRows(t, after))
	sameIdentities(t, ids, rowIdentities(t, after))
	if !slices.Equal(after.Protocol().WriterFeatureSet(), protocol.WriterFeatureSet()) {
		t.Fatalf("writer features %v → %v", protocol.WriterFeatureSet(), after.Protocol().WriterFeatureSet())
	}
	if got := after.Domains(); len(got) != len(domains) {
		t.Fatalf("domains %v → %v", domains, got)
	}
	if d, ok := after.Domain(delta.DomainLiquidPreview); !ok || d.Configuration != mustDomain(t, snap, delta.DomainLiquidPreview).Configuration {
		t.Fatalf("the clustering definition changed: %+v", d)
	}
	for _, a := range after.Files() {
		if _, by := zcubeOf(t, a); !slices.Equal(by, []string{"id"}) {
			t.Fatalf("file %s clustered by %v", a.Path, by)
		}
	}
	if op, err := cluster.Optimize(ctx, tbl, after, cluster.DefaultOptions(), nil); err != nil || op.Outcome != result.NothingToDo {
		t.Fatalf("second run: %+v, %v; want nothing to do", op, err)
	}
}

func mustDomain(t *testing.T, snap *delta.Snapshot, name string) delta.DomainMetadata {
	t.Helper()
	d, ok := snap.Domain(name)
	if !ok {
		t.Fatalf("domain %s missing", name)
	}
	return d
}

func TestOptimize_LogOnlyTablePlansAndRefusesWithoutDamage(t *testing.T) {
	ctx := context.Background()
	tbl, dir := copyConformanceTable(t, "table-with-domain-metadata")
	snap, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cols, ok, err := snap.ClusteringColumns()
	if err != nil || !ok || !slices.EqualFunc(cols, [][]string{{"department"}}, slices.Equal) {
		t.Fatalf("clustering columns = %v, %v, %v; want [[department]]", cols, ok, err)
	}
	dry := cluster.DefaultOptions()
	dry.DryRun = true
	op, err := cluster.Optimize(ctx, tbl, snap, dry, nil)
	if err != nil || op.Outcome != result.Succeeded || op.Version != nil {
		t.Fatalf("dry run: %+v, %v", op, err)
	}
	// The data files are not in the corpus: the rewrite must stop at the first missing file, commit
	// nothing and leave no new file behind.
	op, err = cluster.Optimize(ctx, tbl, snap, cluster.DefaultOptions(), nil)
	if err == nil || op.Outcome != result.Refused || op.Reason != result.ReasonCorruptTable {
		t.Fatalf("optimize of a table without data files: %+v, %v; want a corrupt-table refusal", op, err)
	}
	after, err := tbl.Latest(ctx)
	if err != nil || after.Version() != snap.Version() {
		t.Fatalf("version %d → %v (%v)", snap.Version(), after.Version(), err)
	}
	entries, _ := os.ReadDir(dir)
	for _, e := range entries {
		if e.Name() != "_delta_log" {
			t.Fatalf("optimize left %s behind", e.Name())
		}
	}
}
