package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
)

// LocalStore is a Store over a directory on local disk (or a shared filesystem mounted into the pod).
// Key "a/b/c" is the file <root>/a/b/c; directories are created as needed and are not objects.
//
// Atomicity comes from the filesystem: writes go to a hidden temp file in the target directory that is
// fsynced and then renamed (Put, Create) or hard-linked (PutIfAbsent) into place, so readers see either
// nothing or the whole object, and link(2) failing with EEXIST elects exactly one PutIfAbsent winner
// even across processes and hosts sharing the filesystem (NFSv3+ implements link atomically too).
type LocalStore struct {
	root    string // absolute, cleaned
	durable *durableDirs
}

var _ Store = (*LocalStore)(nil)

// NewLocal returns a store rooted at dir, which is made absolute. The directory need not exist yet:
// the first write creates it, and listing a missing root yields nothing.
func NewLocal(dir string) (*LocalStore, error) {
	if dir == "" {
		return nil, errors.New("local store: empty root directory")
	}
	abs, err := filepath.Abs(dir)
	if err != nil {
		return nil, fmt.Errorf("local store: resolving %q: %w", dir, err)
	}
	return &LocalStore{root: abs, durable: &durableDirs{}}, nil
}

// Root is the absolute directory the store is rooted at.
func (s *LocalStore) Root() string { return s.root }

// Location returns "file://" followed by the absolute root, e.g. "file:///data/t".
func (s *LocalStore) Location() string { return "file://" + filepath.ToSlash(s.root) }

// path maps a validated key to its file.
func (s *LocalStore) path(key string) (string, error) {
	if err := validateKey(key); err != nil {
		return "", fmt.Errorf("%s: %w", s.Location(), err)
	}
	return filepath.Join(s.root, filepath.FromSlash(key)), nil
}

// uri names key in messages.
func (s *LocalStore) uri(key string) string {
	return strings.TrimSuffix(s.Location(), "/") + "/" + key
}

// notFound turns "no such file" (and "a path element is a file", ENOTDIR) into ErrNotFound.
func (s *LocalStore) notFound(op, key string, err error) error {
	if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
		return fmt.Errorf("%s %s: %w", op, s.uri(key), ErrNotFound)
	}
	return fmt.Errorf("%s %s: %w", op, s.uri(key), err)
}

// Stat implements Store.
func (s *LocalStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	p, err := s.path(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	fi, err := os.Stat(p)
	if err != nil {
		return ObjectInfo{}, s.notFound("stat", key, err)
	}
	if fi.IsDir() {
		return ObjectInfo{}, fmt.Errorf("stat %s: is a directory: %w", s.uri(key), ErrNotFound)
	}
	return ObjectInfo{Key: key, Size: fi.Size(), ModTime: fi.ModTime()}, nil
}

// Get implements Store.
func (s *LocalStore) Get(ctx context.Context, key string) ([]byte, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	data, err := os.ReadFile(p)
	if err != nil {
		if isDirErr(err) {
			return nil, fmt.Errorf("get %s: is a directory: %w", s.uri(key), ErrNotFound)
		}
		return nil, s.notFound("get", key, err)
	}
	return data, nil
}

// Open implements Store. The returned reader is an open file: ReadAt is safe for concurrent use and
// keeps reading the same bytes even if the key is replaced or deleted meanwhile.
func (s *LocalStore) Open(ctx context.Context, key string) (ReaderAt, error) {
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, err := os.Open(p)
	if err != nil {
		return nil, s.notFound("open", key, err)
	}
	fi, err := f.Stat()
	if err != nil {
		f.Close()
		return nil, fmt.Errorf("open %s: %w", s.uri(key), err)
	}
	if fi.IsDir() {
		f.Close()
		return nil, fmt.Errorf("open %s: is a directory: %w", s.uri(key), ErrNotFound)
	}
	return &fileReader{File: f, size: fi.Size()}, nil
}

// fileReader adds the size captured at open time to an *os.File.
type fileReader struct {
	*os.File
	size int64
}

func (r *fileReader) Size() int64 { return r.size }

// Delete implements Store. Empty parent directories are left in place: removing them would race with
// a concurrent write into the same directory, and they are harmless (they are not objects).
func (s *LocalStore) Delete(ctx context.Context, key string) error {
	p, err := s.path(key)
	if err != nil {
		return err
	}
	fi, err := os.Lstat(p)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) || isNotDir(err) {
			return nil
		}
		return fmt.Errorf("delete %s: %w", s.uri(key), err)
	}
	if fi.IsDir() {
		// A directory is not an object, so there is nothing to delete under this key.
		return nil
	}
	if err := os.Remove(p); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("delete %s: %w", s.uri(key), err)
	}
	return nil
}
