package storage_test

import (
	"context"
	"os"
	"path/filepath"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// A directory entry is durable only once its parent directory is fsynced. The store syncs the parent
// of every directory on the way from a new object up to the root's parent the first time it writes
// there, including directories it did not create itself (a writer that crashed between mkdir and
// fsync, or a concurrent one, may have), and the object's directory after every rename or link.
func TestLocalStore_MakesEveryDirectoryOnThePathDurableBeforeTheFirstObjectInIt(t *testing.T) {
	ctx := context.Background()
	parent := t.TempDir()
	root := filepath.Join(parent, "t")
	// Another process made these directories and died before syncing them.
	if err := os.MkdirAll(filepath.Join(root, "_delta_log"), 0o755); err != nil {
		t.Fatal(err)
	}
	st, err := storage.NewLocal(root)
	if err != nil {
		t.Fatal(err)
	}
	synced := storage.RecordDirSyncs(t)
	log := filepath.Join(root, "_delta_log")
	if err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("{}\n")); err != nil {
		t.Fatal(err)
	}
	for _, d := range []string{parent, root, log} {
		if !slices.Contains(synced(), d) {
			t.Errorf("%s was not fsynced (synced: %q)", d, synced())
		}
	}
	if got := synced(); got[len(got)-1] != log {
		t.Errorf("the commit's directory is not synced after the link: %q", got)
	}
	// Later writes into known directories sync only the directory of the new entry.
	n := len(synced())
	if err := st.Put(ctx, "_delta_log/_last_checkpoint", []byte("{}")); err != nil {
		t.Fatal(err)
	}
	w, err := st.Create(ctx, "day=1/part-0.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("data")); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	day := filepath.Join(root, "day=1")
	if got := synced()[n:]; !slices.Equal(got, []string{log, root, day}) {
		t.Errorf("synced %q, want the log (rename), the root (new day=1/) and day=1/ (rename)", got)
	}
}
