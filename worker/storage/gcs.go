package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"net/http"
	"strconv"
	"strings"

	"cloud.google.com/go/storage"
	"google.golang.org/api/googleapi"
	"google.golang.org/api/iterator"
)

// GCSStore is a Store over a bucket and an optional prefix on Google Cloud Storage.
//
// PutIfAbsent is an upload with ifGenerationMatch=0, which GCS decides: the object is created only if
// no live generation exists, so one of any number of concurrent writers wins. Reads are pinned to the
// generation seen at open.
type GCSStore struct {
	client *storage.Client
	bucket *storage.BucketHandle
	name   string // bucket name
	prefix string // "" or ending in '/'
	cfg    GCSConfig
}

var _ Store = (*GCSStore)(nil)

// NewGCS returns a store for gs://bucket/prefix. It validates cfg and builds the client (which may read
// Application Default Credentials), but makes no request to the bucket.
func NewGCS(ctx context.Context, cfg GCSConfig, bucket, prefix string) (*GCSStore, error) {
	if bucket == "" || strings.ContainsAny(bucket, "/@:") {
		return nil, fmt.Errorf("GCS bucket name %q is invalid: give gs://bucket/prefix", bucket)
	}
	prefix, err := storePrefix(prefix, func(p string) string { return "gs://" + bucket + "/" + p })
	if err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	client, err := newGCSClient(ctx, cfg)
	if err != nil {
		return nil, redact(err, cfg.secrets()...)
	}
	return &GCSStore{client: client, bucket: client.Bucket(bucket), name: bucket, prefix: prefix, cfg: cfg}, nil
}

// Location returns "gs://bucket" or "gs://bucket/prefix".
func (s *GCSStore) Location() string {
	return Location{Scheme: SchemeGCS, Bucket: s.name, Path: strings.TrimSuffix(s.prefix, "/")}.String()
}

// Bucket is the store's bucket handle, for callers (tests) that need an operation the Store lacks.
func (s *GCSStore) Bucket() *storage.BucketHandle { return s.bucket }

// Prefix is the object name prefix of the store's root: "" or ending in '/'.
func (s *GCSStore) Prefix() string { return s.prefix }

func (s *GCSStore) uri(key string) string { return "gs://" + s.name + "/" + s.prefix + key }

func (s *GCSStore) object(key string) (*storage.ObjectHandle, error) {
	if err := validateKey(key); err != nil {
		return nil, fmt.Errorf("%s: %w", s.Location(), err)
	}
	return s.bucket.Object(s.prefix + key), nil
}

// Stat implements Store. ObjectInfo.ETag is the object's generation, which changes exactly when its
// content is rewritten.
func (s *GCSStore) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	obj, err := s.object(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	a, err := obj.Attrs(ctx)
	if err != nil {
		return ObjectInfo{}, s.gcsError("stat", key, err)
	}
	return ObjectInfo{Key: key, Size: a.Size, ModTime: a.Updated, ETag: strconv.FormatInt(a.Generation, 10)}, nil
}

// Get implements Store.
func (s *GCSStore) Get(ctx context.Context, key string) ([]byte, error) {
	obj, err := s.object(key)
	if err != nil {
		return nil, err
	}
	r, err := obj.NewReader(ctx)
	if err != nil {
		return nil, s.gcsError("get", key, err)
	}
	defer r.Close()
	buf := bytes.NewBuffer(make([]byte, 0, max(r.Attrs.Size, 0)+bytes.MinRead))
	if _, err := buf.ReadFrom(r); err != nil {
		return nil, s.gcsError("get", key, err)
	}
	return buf.Bytes(), nil
}

// Put implements Store: one upload replaces the object atomically.
func (s *GCSStore) Put(ctx context.Context, key string, data []byte) error {
	obj, err := s.object(key)
	if err != nil {
		return err
	}
	if err := s.upload(ctx, obj, data); err != nil {
		return s.gcsError("put", key, err)
	}
	return nil
}

// upload sends data in one request. The chunk size is just above the data's size: one request, which
// the SDK can retry, with a buffer no larger than needed (a zero chunk size would disable retries).
// The SDK retries such an upload until its context ends, so the attempts are capped here.
func (s *GCSStore) upload(ctx context.Context, obj *storage.ObjectHandle, data []byte) error {
	if _, counted := ctx.Value(attemptCounterKey{}).(*attemptCounter); !counted {
		ctx, _ = withAttemptCounter(ctx, s.cfg.MaxAttempts)
	}
	w := obj.NewWriter(ctx)
	w.ChunkSize = roundUp(len(data)+1, gcsChunkGranularity)
	if _, err := w.Write(data); err != nil {
		_ = w.Close()
		return err
	}
	return w.Close()
}

// PutIfAbsent implements Store with ifGenerationMatch=0. As on S3, a refusal after more than one
// attempt may be our own earlier attempt whose response was lost: then the stored bytes are compared
// with ours, and identical bytes count as a win.
func (s *GCSStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	obj, err := s.object(key)
	if err != nil {
		return err
	}
	counted, attempts := withAttemptCounter(ctx, s.cfg.MaxAttempts)
	err = s.upload(counted, obj.If(storage.Conditions{DoesNotExist: true}), data)
	if err == nil {
		return nil
	}
	if gcsStatus(err) != http.StatusPreconditionFailed {
		return s.gcsError("put-if-absent", key, err)
	}
	return refusedPut(ctx, s.Get, s.uri(key), key, data, attempts.Load() > 1)
}

// Delete implements Store; a missing object is not an error.
func (s *GCSStore) Delete(ctx context.Context, key string) error {
	obj, err := s.object(key)
	if err != nil {
		return err
	}
	if err := obj.Delete(ctx); err != nil && !errors.Is(err, storage.ErrObjectNotExist) && gcsStatus(err) != http.StatusNotFound {
		return s.gcsError("delete", key, err)
	}
	return nil
}

// List implements Store with an object listing from StartOffset (inclusive; the key equal to
// startAfter is dropped here). GCS lists in UTF-8 byte order of the name.
func (s *GCSStore) List(ctx context.Context, prefix, startAfter string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		if err := validatePrefix(prefix); err != nil {
			yield(ObjectInfo{}, fmt.Errorf("list %s: %w", s.Location(), err))
			return
		}
		q := &storage.Query{Prefix: s.prefix + prefix}
		if startAfter > prefix {
			q.StartOffset = s.prefix + startAfter
		}
		if err := q.SetAttrSelection([]string{"Name", "Size", "Updated", "Generation"}); err != nil {
			yield(ObjectInfo{}, fmt.Errorf("list %s: %w", s.Location(), err))
			return
		}
		it := s.bucket.Objects(ctx, q)
		for {
			a, err := it.Next()
			if errors.Is(err, iterator.Done) {
				return
			}
			if err != nil {
				yield(ObjectInfo{}, s.gcsError("list", prefix, err))
				return
			}
			key, found := strings.CutPrefix(a.Name, s.prefix)
			// Folder placeholders ("dir/") that consoles create are not objects.
			if !found || key == "" || strings.HasSuffix(key, "/") || (startAfter != "" && key <= startAfter) {
				continue
			}
			if !yield(ObjectInfo{Key: key, Size: a.Size, ModTime: a.Updated, ETag: strconv.FormatInt(a.Generation, 10)}, nil) {
				return
			}
		}
	}
}

// Open implements Store: one metadata request for size and generation, then ranged reads of exactly
// that generation (see rangeReader). ctx must outlive the reader.
func (s *GCSStore) Open(ctx context.Context, key string) (ReaderAt, error) {
	obj, err := s.object(key)
	if err != nil {
		return nil, err
	}
	a, err := obj.Attrs(ctx)
	if err != nil {
		return nil, s.gcsError("open", key, err)
	}
	f := &gcsFetcher{s: s, key: key, obj: obj.Generation(a.Generation)}
	return &rangeReader{ctx: ctx, uri: s.uri(key), size: a.Size, readAhead: s.cfg.ReadAhead, fetchOnce: f.fetchOnce}, nil
}

type gcsFetcher struct {
	s   *GCSStore
	key string
	obj *storage.ObjectHandle // pinned to a generation
}

func (f *gcsFetcher) fetchOnce(ctx context.Context, buf []byte, off int64) (retry bool, err error) {
	r, err := f.obj.NewRangeReader(ctx, off, int64(len(buf)))
	if err != nil {
		if errors.Is(err, storage.ErrObjectNotExist) || gcsStatus(err) == http.StatusNotFound {
			// A bucket without versioning keeps only the live generation: a rewrite looks like this too.
			return false, fmt.Errorf("read %s: deleted or replaced since it was opened; reopen it to read "+
				"the current version: %w", f.s.uri(f.key), ErrNotFound)
		}
		return false, f.s.gcsError("read", f.key, err)
	}
	defer r.Close()
	if _, err := io.ReadFull(r, buf); err != nil {
		return true, fmt.Errorf("read %s: reading bytes %d-%d: %w", f.s.uri(f.key), off, off+int64(len(buf))-1, err)
	}
	return false, nil
}

// gcsStatus is the HTTP status of a failed call (the last one when the attempts ran out), or 0.
func gcsStatus(err error) int {
	var ge *googleapi.Error
	if errors.As(err, &ge) {
		return ge.Code
	}
	var exhausted *errAttemptsExhausted
	if errors.As(err, &exhausted) {
		return exhausted.status
	}
	return 0
}

// gcsError wraps a failed call with what to do about it, maps a missing object to ErrNotFound, and
// strips credentials, in the same classes as s3Error.
func (s *GCSStore) gcsError(op, key string, err error) error {
	uri := s.uri(key)
	status := gcsStatus(err)
	switch {
	case errors.Is(err, context.Canceled), errors.Is(err, context.DeadlineExceeded):
		err = fmt.Errorf("%s %s: %w", op, uri, err)
	case errors.Is(err, storage.ErrBucketNotExist):
		err = fmt.Errorf("%s %s: bucket %q does not exist: check the table location: %w", op, uri, s.name, err)
	case errors.Is(err, storage.ErrObjectNotExist) || status == http.StatusNotFound:
		err = fmt.Errorf("%s %s: %w", op, uri, ErrNotFound)
	case status == http.StatusForbidden || status == http.StatusUnauthorized:
		err = fmt.Errorf("%s %s: access denied: check the GCS credentials (service-account key, or the "+
			"workload identity's service account) and its roles on the bucket (Storage Object User): %w", op, uri, err)
	case status == http.StatusTooManyRequests || status >= 500:
		err = fmt.Errorf("%s %s: the server is still throttling or failing after %d attempt(s): retry later "+
			"or raise the GCS max attempts: %w", op, uri, s.cfg.MaxAttempts, err)
	default:
		err = fmt.Errorf("%s %s: %w", op, uri, err)
	}
	return redact(err, s.cfg.secrets()...)
}
