package storage

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"syscall"
)

// Temp files of in-flight writes live next to their target, named by TempName (temp.go): being in the
// same directory makes the final rename/link atomic (same filesystem); the leading dot and the pattern
// let List skip them, and Leftovers find the ones killed writers left behind.

// objectPerm is applied to every object, whatever the umask: tables are routinely read by other users
// (Spark, Trino) sharing the filesystem.
const objectPerm = 0o644

// Put implements Store: temp file, fsync, rename, fsync directory.
func (s *LocalStore) Put(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := s.path(key)
	if err != nil {
		return err
	}
	tmp, err := s.writeTemp(p, data)
	if err != nil {
		return fmt.Errorf("put %s: %w", s.uri(key), err)
	}
	if err := os.Rename(tmp, p); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("put %s: %w", s.uri(key), renameHint(err))
	}
	if err := syncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("put %s: %w", s.uri(key), err)
	}
	return nil
}

// PutIfAbsent implements Store. link(2) refuses to replace an existing name, which makes it the
// commit point: of any number of writers (threads, processes, hosts on one filesystem) exactly one
// link succeeds, and because the content was fsynced before the link, nobody can observe a partial
// object under the final name.
func (s *LocalStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := ctx.Err(); err != nil {
		return err
	}
	p, err := s.path(key)
	if err != nil {
		return err
	}
	// Fail fast without writing data when the key is already taken (the common case for a losing
	// Delta committer that retries); the link below remains the authoritative check.
	if fi, err := os.Lstat(p); err == nil && !fi.IsDir() {
		return fmt.Errorf("put-if-absent %s: %w", s.uri(key), ErrAlreadyExists)
	}
	tmp, err := s.writeTemp(p, data)
	if err != nil {
		return fmt.Errorf("put-if-absent %s: %w", s.uri(key), err)
	}
	defer os.Remove(tmp)
	if err := os.Link(tmp, p); err != nil {
		if errors.Is(err, fs.ErrExist) {
			if fi, statErr := os.Lstat(p); statErr == nil && fi.IsDir() {
				return fmt.Errorf("put-if-absent %s: a directory exists at the key's path: %w", s.uri(key), err)
			}
			return fmt.Errorf("put-if-absent %s: %w", s.uri(key), ErrAlreadyExists)
		}
		if errors.Is(err, syscall.EPERM) || errors.Is(err, syscall.ENOTSUP) || errors.Is(err, syscall.EXDEV) {
			return fmt.Errorf("put-if-absent %s: the filesystem does not support hard links, which atomic "+
				"commits need; use a local, NFS or S3 location instead: %w", s.uri(key), err)
		}
		return fmt.Errorf("put-if-absent %s: %w", s.uri(key), err)
	}
	// The link made the object visible. The deferred Remove of the temp name is best effort (List
	// skips leftovers; vacuum and log cleanup remove them). A failed directory fsync is still
	// reported: the object exists but may not survive a power loss, which is the caller's to judge
	// (delta's committer reads the key back before deciding).
	if err := syncDir(filepath.Dir(p)); err != nil {
		return fmt.Errorf("put-if-absent %s: %w", s.uri(key), err)
	}
	return nil
}

// writeTemp writes data to a fresh temp file next to target, fsyncs it and returns its path.
func (s *LocalStore) writeTemp(target string, data []byte) (string, error) {
	f, err := s.createTemp(target)
	if err != nil {
		return "", err
	}
	if _, err := f.Write(data); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Sync(); err != nil {
		f.Close()
		os.Remove(f.Name())
		return "", err
	}
	if err := f.Close(); err != nil {
		os.Remove(f.Name())
		return "", err
	}
	return f.Name(), nil
}

// createTemp creates the hidden temp file for target, creating parent directories as needed.
func (s *LocalStore) createTemp(target string) (*os.File, error) {
	dir, name := filepath.Split(target)
	if err := s.ensureDir(filepath.Clean(dir)); err != nil {
		if isNotDir(err) || errors.Is(err, fs.ErrExist) {
			return nil, fmt.Errorf("a parent of the key is an object, so it cannot also be a directory: %w", err)
		}
		return nil, err
	}
	for range 10 {
		f, err := os.OpenFile(filepath.Join(dir, TempName(name)), os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o600)
		if errors.Is(err, fs.ErrExist) {
			continue // 64 random bits collided: practically never
		}
		if err != nil {
			return nil, err
		}
		if err := f.Chmod(objectPerm); err != nil {
			f.Close()
			os.Remove(f.Name())
			return nil, err
		}
		return f, nil
	}
	return nil, fmt.Errorf("could not create a unique temp file in %s", dir)
}

// renameHint explains the one rename failure callers can act on.
func renameHint(err error) error {
	if isDirErr(err) || errors.Is(err, syscall.ENOTEMPTY) || errors.Is(err, fs.ErrExist) {
		return fmt.Errorf("a directory exists at the key's path: %w", err)
	}
	return err
}

func isNotDir(err error) bool { return errors.Is(err, syscall.ENOTDIR) }
func isDirErr(err error) bool { return errors.Is(err, syscall.EISDIR) }

// Create implements Store: the object is written to a temp file and renamed into place by Close.
func (s *LocalStore) Create(ctx context.Context, key string) (Writer, error) {
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	p, err := s.path(key)
	if err != nil {
		return nil, err
	}
	f, err := s.createTemp(p)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", s.uri(key), err)
	}
	return &localWriter{f: f, target: p, uri: s.uri(key)}, nil
}

// localWriter streams into the temp file; it is not safe for concurrent use (like *os.File writes
// interleaving, that would be meaningless for one object anyway).
type localWriter struct {
	f      *os.File
	target string
	uri    string
	done   bool  // closed or aborted
	err    error // first write error; Close then fails and discards the object
}

func (w *localWriter) Write(p []byte) (int, error) {
	if w.done {
		return 0, fmt.Errorf("write %s: %w", w.uri, os.ErrClosed)
	}
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.f.Write(p)
	if err != nil {
		w.err = fmt.Errorf("write %s: %w", w.uri, err)
		return n, w.err
	}
	return n, nil
}

// Close fsyncs the temp file and renames it into place; on any failure the temp file is removed and
// the previous object (if any) is untouched.
func (w *localWriter) Close() error {
	if w.done {
		return fmt.Errorf("close %s: %w", w.uri, os.ErrClosed)
	}
	w.done = true
	tmp := w.f.Name()
	if w.err != nil {
		w.f.Close()
		os.Remove(tmp)
		return w.err
	}
	if err := w.f.Sync(); err != nil {
		w.f.Close()
		os.Remove(tmp)
		return fmt.Errorf("close %s: %w", w.uri, err)
	}
	if err := w.f.Close(); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("close %s: %w", w.uri, err)
	}
	if err := os.Rename(tmp, w.target); err != nil {
		os.Remove(tmp)
		return fmt.Errorf("close %s: %w", w.uri, renameHint(err))
	}
	if err := syncDir(filepath.Dir(w.target)); err != nil {
		return fmt.Errorf("close %s: %w", w.uri, err)
	}
	return nil
}

// Abort discards the temp file; after Close it does nothing.
func (w *localWriter) Abort() error {
	if w.done {
		return nil
	}
	w.done = true
	w.f.Close()
	if err := os.Remove(w.f.Name()); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return fmt.Errorf("abort %s: %w", w.uri, err)
	}
	return nil
}
