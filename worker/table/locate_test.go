package table

import (
	"context"
	"encoding/json"
	"net/url"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func TestLocator_ResolvesRelativeEncodedAndAbsolutePaths(t *testing.T) {
	root := filepath.Join(t.TempDir(), "t")
	store, err := storage.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	l := newLocator(delta.NewTable(store), storage.Config{})
	other := filepath.Join(t.TempDir(), "elsewhere")
	cases := []struct {
		path, key string
		ownStore  bool
	}{
		{"x.parquet", "x.parquet", true},
		{"a%3Db/sp%20ace/x.parquet", "a=b/sp ace/x.parquet", true},
		{"pct%2525/x.parquet", "pct%25/x.parquet", true},
		{"file://" + (&url.URL{Path: root + "/d/x y.parquet"}).EscapedPath(), "d/x y.parquet", true},
		{"file://" + other + "/y.parquet", strings.TrimPrefix(other, "/") + "/y.parquet", false},
	}
	for _, c := range cases {
		s, key, err := l.resolve(context.Background(), c.path)
		if err != nil {
			t.Fatalf("%s: %v", c.path, err)
		}
		if key != c.key || (s == storage.Store(store)) != c.ownStore {
			t.Errorf("%s: key %q (table store %v), want %q (%v)", c.path, key, s == storage.Store(store), c.key, c.ownStore)
		}
	}
	s1, _, _ := l.resolve(context.Background(), "file://"+other+"/a.parquet")
	s2, _, _ := l.resolve(context.Background(), "file://"+other+"/b.parquet")
	if s1 != s2 {
		t.Error("two files outside the table opened two stores; want one per location")
	}
}

// TestScan_ReadsDataFilesOutsideTheTableByAbsoluteURI reads a shallow-clone-like table whose log
// names another table's data file by its absolute URI.
func TestScan_ReadsDataFilesOutsideTheTableByAbsoluteURI(t *testing.T) {
	ctx := t.Context()
	srcStore, _ := storage.NewLocal(filepath.Join(t.TempDir(), "src"))
	src := delta.NewTable(srcStore)
	if _, err := WriteDemoData(ctx, src, DemoOptions{Files: 1, RowsPerFile: 50, Seed: 3}, nil); err != nil {
		t.Fatal(err)
	}
	srcSnap, err := src.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	cloneStore, _ := storage.NewLocal(filepath.Join(t.TempDir(), "clone dir"))
	clone := delta.NewTable(cloneStore)
	snap, err := clone.Create(ctx, delta.CreateOptions{Schema: OrdersSchema()})
	if err != nil {
		t.Fatal(err)
	}
	add := *srcSnap.Files()[0]
	key, _ := delta.ObjectKey(src.Location(), add.Path)
	add.Path = (&url.URL{Scheme: "file", Path: srcStore.Root() + "/" + key}).String()
	// A hand-made commit, as a shallow clone writes it (absolute path into the source table).
	line, _ := json.Marshal(map[string]any{"add": add})
	if err := cloneStore.PutIfAbsent(ctx, delta.CommitKey(snap.Version()+1), append(line, '\n')); err != nil {
		t.Fatal(err)
	}
	snap, err = clone.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	scan, err := NewScan(snap, ScanOptions{})
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if _, err := scan.Run(ctx, func(rows []types.Struct) error { n += len(rows); return nil }); err != nil {
		t.Fatal(err)
	}
	if n != 50 {
		t.Errorf("read %d rows through the absolute path, want 50", n)
	}
}
