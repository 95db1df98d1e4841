package storage

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sync"
	"syscall"
)

// On local disk a write is durable only when everything that names it is: the file's data and size
// (fsync of the file, before the rename or link), its entry in its directory (fsync of the directory,
// after), and the entry of every directory on the way up to the table root and of the root itself in
// its parent. The durability contract of both stores is in doc.go.

// durableDirs remembers, per store, the directories whose entries (and their parents') this process
// has made durable, so that only the first write into a directory pays for the syncs up the tree.
type durableDirs struct{ m sync.Map }

// ensureDir creates dir (under the store's root) as needed and makes its entry durable, and every
// ancestor's up to the root's entry in its parent. It syncs even directories that already exist but
// this process has not synced: another writer may have created them and crashed (or still be running)
// before its fsync, and an entry that is in the page cache but not on disk vanishes with power.
func (s *LocalStore) ensureDir(dir string) error {
	fi, err := os.Stat(dir)
	existed := err == nil && fi.IsDir()
	if existed {
		if _, ok := s.durable.m.Load(dir); ok {
			return nil
		}
	} else if err := os.MkdirAll(dir, 0o755); err != nil {
		return err
	}
	// dir, its parent, … up to the root, or to the first ancestor already made durable (all of whose
	// ancestors then are too: a chain is recorded only once all of it is synced).
	var chain []string
	for d := dir; ; d = filepath.Dir(d) {
		if _, ok := s.durable.m.Load(d); ok && d != dir {
			break
		}
		chain = append(chain, d)
		if d == s.root || filepath.Dir(d) == d || len(d) < len(s.root) {
			break
		}
	}
	// Top down, so that at no point a synced entry hangs below an unsynced one.
	for i := len(chain) - 1; i >= 0; i-- {
		if err := syncDir(filepath.Dir(chain[i])); err != nil {
			return err
		}
	}
	for _, d := range chain {
		s.durable.m.Store(d, true)
	}
	return nil
}

// syncDir fsyncs a directory, making the entries created or renamed in it durable. A variable so that
// tests can see which directories are synced (export_test.go).
var syncDir = func(dir string) error {
	d, err := os.Open(dir)
	if err != nil {
		return fmt.Errorf("syncing directory: %w", err)
	}
	defer d.Close()
	if err := d.Sync(); err != nil && !errors.Is(err, syscall.EINVAL) {
		// EINVAL: the filesystem cannot fsync directories (some FUSE/network filesystems); the rename
		// itself is still atomic, so there is nothing better to do than carry on.
		return fmt.Errorf("syncing directory: %w", err)
	}
	return nil
}
