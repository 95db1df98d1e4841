// Package source discovers the files of an ingest stream: every object under a prefix (recursively),
// hidden names and the stream's own state skipped, each with the identity that tells a new file from
// one already taken and from one rewritten in place.
package source

import (
	"context"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// File is one source object.
type File struct {
	Key     string    `json:"key"` // relative to the source root, '/'-separated
	Size    int64     `json:"size"`
	ModTime time.Time `json:"mtime"`
	// ETag is the S3 entity tag; empty on local disk, where the modification time stands in for it.
	ETag string `json:"etag,omitempty"`
}

// Identity is what tells two versions of the object under one key apart: the ETag and size on S3, the
// modification time and size on local disk (which has no content tag).
func (f File) Identity() string {
	if f.ETag != "" {
		return f.ETag + "/" + strconv.FormatInt(f.Size, 10)
	}
	return strconv.FormatInt(f.ModTime.UnixNano(), 10) + "/" + strconv.FormatInt(f.Size, 10)
}

// Compression of a file, recognised by its extension.
type Compression int

// Compressions.
const (
	None Compression = iota
	Gzip
	Zstd
)

// CompressionOf recognises ".gz" and ".zst" (also ".gzip", ".zstd"), case-insensitively.
func CompressionOf(key string) Compression {
	k := strings.ToLower(key)
	switch {
	case strings.HasSuffix(k, ".gz"), strings.HasSuffix(k, ".gzip"):
		return Gzip
	case strings.HasSuffix(k, ".zst"), strings.HasSuffix(k, ".zstd"):
		return Zstd
	}
	return None
}

// Hidden reports whether any segment of key starts with '_' or '.', as Spark's file source decides:
// _SUCCESS markers, _temporary directories, .crc files and editor droppings are never data.
func Hidden(key string) bool {
	for seg := range strings.SplitSeq(key, "/") {
		if strings.HasPrefix(seg, "_") || strings.HasPrefix(seg, ".") {
			return true
		}
	}
	return false
}

// Source lists one prefix.
type Source struct {
	store storage.Store
	// skip are key prefixes under the source that are never data: the stream's own state, and the
	// target table when either lives under the source.
	skip []string
}

// ErrMissingPrefix is returned (wrapped) when a local source directory does not exist. S3 cannot tell
// an empty prefix from a missing one, so there an empty listing is simply "no files yet".
var ErrMissingPrefix = errors.New("source prefix does not exist")

// New returns the source rooted at store. skip are key prefixes under the source that are never
// listed as data (the stream's state, the target table); empty ones are ignored.
func New(store storage.Store, skip ...string) *Source {
	s := &Source{store: store}
	for _, p := range skip {
		if p = strings.Trim(p, "/"); p != "" {
			s.skip = append(s.skip, p)
		}
	}
	return s
}

// Store is the source's storage.
func (s *Source) Store() storage.Store { return s.store }

// Location is the source root URI, for messages.
func (s *Source) Location() string { return s.store.Location() }

// List yields the source's data files whose keys sort after startAfter ("" for all), in key order.
// Directories, hidden names and the stream's state are skipped.
func (s *Source) List(ctx context.Context, startAfter string) func(yield func(File, error) bool) {
	return func(yield func(File, error) bool) {
		if err := s.check(); err != nil {
			yield(File{}, err)
			return
		}
		for info, err := range s.store.List(ctx, "", startAfter) {
			if err != nil {
				yield(File{}, fmt.Errorf("list source %s: %w", s.Location(), err))
				return
			}
			if Hidden(info.Key) || s.skipped(info.Key) {
				continue
			}
			if !yield(File{Key: info.Key, Size: info.Size, ModTime: info.ModTime, ETag: info.ETag}, nil) {
				return
			}
		}
	}
}

func (s *Source) skipped(key string) bool {
	for _, p := range s.skip {
		if key == p || strings.HasPrefix(key, p+"/") {
			return true
		}
	}
	return false
}

// check refuses a local source directory that does not exist (a typo in --source would otherwise look
// like a stream with nothing to do).
func (s *Source) check() error {
	ls, ok := s.store.(*storage.LocalStore)
	if !ok {
		return nil
	}
	fi, err := os.Stat(ls.Root())
	switch {
	case errors.Is(err, os.ErrNotExist):
		return fmt.Errorf("source %s: %w: check --source (the directory must exist, even if empty)", s.Location(), ErrMissingPrefix)
	case err != nil:
		return fmt.Errorf("source %s: %w", s.Location(), err)
	case !fi.IsDir():
		return fmt.Errorf("source %s is a file, not a directory: give the directory (prefix) that holds the files", s.Location())
	}
	return nil
}
