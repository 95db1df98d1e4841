package storage

import (
	"context"
	"errors"
	"io"
	"iter"
	"time"
)

// ErrNotFound is returned (wrapped) when a key does not exist.
var ErrNotFound = errors.New("object not found")

// ErrAlreadyExists is returned (wrapped) by PutIfAbsent when another writer created the key first.
var ErrAlreadyExists = errors.New("object already exists")

// ObjectInfo describes one object. Key is relative to the store's root and uses '/' separators.
type ObjectInfo struct {
	Key     string
	Size    int64
	ModTime time.Time
	// ETag is the object's entity tag on S3 and Azure (quotes kept, as the server sends it), its
	// generation number on GCS, "" on local disk. With the size it tells a rewritten object from the
	// one seen before.
	ETag string
}

// Store is one table's storage, rooted at the table location. Keys are relative to that root
// ("_delta_log/00000000000000000000.json", "date=2024-01-01/part-0001.parquet") and never start with '/'.
// Implementations are safe for concurrent use.
type Store interface {
	// List yields the objects whose key starts with prefix and sorts strictly after startAfter
	// (ignored when empty), in lexicographic byte order of the key. Directories are not objects.
	List(ctx context.Context, prefix, startAfter string) iter.Seq2[ObjectInfo, error]
	// Stat returns the object's size and modification time, or ErrNotFound.
	Stat(ctx context.Context, key string) (ObjectInfo, error)
	// Get reads a whole object into memory; meant for log files, not data files.
	Get(ctx context.Context, key string) ([]byte, error)
	// Open returns a random-access reader over the object (ranged GETs on S3), for Parquet and
	// deletion-vector files. The size is known up front.
	Open(ctx context.Context, key string) (ReaderAt, error)
	// Put writes an object, replacing any previous content. Readers never observe a partial object.
	Put(ctx context.Context, key string, data []byte) error
	// Create streams a large object (multipart upload on S3, temp file + rename on disk); the object
	// becomes visible only when Close returns nil. Abort discards it.
	Create(ctx context.Context, key string) (Writer, error)
	// PutIfAbsent atomically creates key with data, or fails with ErrAlreadyExists if it exists.
	PutIfAbsent(ctx context.Context, key string, data []byte) error
	// Delete removes an object; deleting a missing key is not an error.
	Delete(ctx context.Context, key string) error
	// Location is the root URI in its canonical form ("s3://bucket/prefix",
	// "abfss://container@account.dfs.core.windows.net/prefix", "gs://bucket/prefix", "file:///data/t");
	// it never contains credentials.
	Location() string
}

// ReaderAt is a random-access view of one object.
type ReaderAt interface {
	io.ReaderAt
	io.Closer
	Size() int64
}

// Writer streams one object; see Store.Create.
type Writer interface {
	io.Writer
	// Close finishes the upload and makes the object visible.
	Close() error
	// Abort discards everything written; calling it after Close is a no-op.
	Abort() error
}
