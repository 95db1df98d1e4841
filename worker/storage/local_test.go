package storage_test

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func newLocal(t *testing.T) *storage.LocalStore {
	t.Helper()
	st, err := storage.NewLocal(t.TempDir())
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func writeFile(t *testing.T, path string, data string) {
	t.Helper()
	if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, []byte(data), 0o644); err != nil {
		t.Fatal(err)
	}
}

func TestLocalList_SkipsTempFilesOfInFlightWritesButNotOtherHiddenFiles(t *testing.T) {
	st := newLocal(t)
	mustPut(t, st, "_delta_log/00000000000000000000.json", []byte("{}"))
	// What a writer that crashed between create and rename leaves, next to objects Spark and Hadoop
	// legitimately write with a leading dot.
	writeFile(t, filepath.Join(st.Root(), "_delta_log", ".00000000000000000001.json.tmp-123456"), "partial")
	writeFile(t, filepath.Join(st.Root(), ".part-0.parquet.tmp-42"), "partial")
	writeFile(t, filepath.Join(st.Root(), "_delta_log", ".00000000000000000000.json.crc"), "crc")
	got := listKeys(t, st, "", "")
	want := []string{"_delta_log/.00000000000000000000.json.crc", "_delta_log/00000000000000000000.json"}
	if !slices.Equal(got, want) {
		t.Fatalf("List = %q, want %q", got, want)
	}
}

func TestLocalCreate_ObjectInvisibleUntilCloseAndWrittenWithReadablePermissions(t *testing.T) {
	st := newLocal(t)
	w, err := st.Create(ctx, "date=2024-01-01/part-0.parquet")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := w.Write([]byte("PAR1...PAR1")); err != nil {
		t.Fatal(err)
	}
	if got := listKeys(t, st, "", ""); len(got) != 0 {
		t.Fatalf("List during the write = %q, want nothing", got)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	fi, err := os.Stat(filepath.Join(st.Root(), "date=2024-01-01", "part-0.parquet"))
	if err != nil {
		t.Fatal(err)
	}
	if fi.Mode().Perm() != 0o644 {
		t.Fatalf("mode %v, want 0644 so other readers of the table can open it", fi.Mode().Perm())
	}
}

func TestLocalWrites_DirectoryAtKeyIsAnErrorNotAConflict(t *testing.T) {
	st := newLocal(t)
	mustPut(t, st, "a/b", []byte("x"))
	err := st.PutIfAbsent(ctx, "a", []byte("y"))
	if err == nil || errors.Is(err, storage.ErrAlreadyExists) || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("PutIfAbsent over a directory: err = %v, want a directory error (not a lost race)", err)
	}
	if err := st.Put(ctx, "a", []byte("y")); err == nil || !strings.Contains(err.Error(), "directory") {
		t.Fatalf("Put over a directory: err = %v, want a directory error", err)
	}
	if err := st.Put(ctx, "a/b/c", []byte("y")); err == nil || !strings.Contains(err.Error(), "parent of the key is an object") {
		t.Fatalf("Put below an object: err = %v, want an explanation", err)
	}
}

func TestLocalStore_RootAndLocationAreAbsolute(t *testing.T) {
	dir := t.TempDir()
	t.Chdir(dir)
	st, err := storage.Open(ctx, "rel/table", storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	want := "file://" + filepath.Join(dir, "rel", "table")
	if st.Location() != want {
		t.Fatalf("Location = %q, want %q", st.Location(), want)
	}
	if got := listKeys(t, st, "", ""); len(got) != 0 {
		t.Fatalf("List of a root that does not exist yet = %q, want nothing", got)
	}
}
