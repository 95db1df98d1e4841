package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"iter"
	"strings"
	"sync/atomic"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
	"github.com/aws/smithy-go/middleware"
)

// S3Store is a Store over a bucket and an optional key prefix on S3 or an S3-compatible server.
//
// PutIfAbsent relies on conditional writes (PutObject with If-None-Match: *), which AWS S3 supports
// since 2024 and MinIO, rclone serve s3 and versitygw support too; no external lock (DynamoDB) is
// involved. A server that ignores If-None-Match would silently break Delta commits, which is why the
// tests race real writers against a real server.
type S3Store struct {
	client *s3.Client
	bucket string
	prefix string   // "" or ending in '/'
	cfg    S3Config // with defaults applied
}

var _ Store = (*S3Store)(nil)

// NewS3 returns a store for s3://bucket/prefix. It validates cfg and builds the client, but makes no
// request: a wrong bucket or credentials show up on the first operation.
func NewS3(ctx context.Context, cfg S3Config, bucket, prefix string) (*S3Store, error) {
	if bucket == "" || strings.Contains(bucket, "/") {
		return nil, fmt.Errorf("S3 bucket name %q is invalid: give s3://bucket/prefix", bucket)
	}
	prefix, err := storePrefix(prefix, func(p string) string { return "s3://" + bucket + "/" + p })
	if err != nil {
		return nil, err
	}
	if err := cfg.validate(); err != nil {
		return nil, err
	}
	cfg = cfg.withDefaults()
	client, err := newS3Client(ctx, cfg)
	if err != nil {
		return nil, redact(err, cfg.AccessKeyID, cfg.SecretAccessKey, cfg.SessionToken)
	}
	return &S3Store{client: client, bucket: bucket, prefix: prefix, cfg: cfg}, nil
}

// Location returns "s3://bucket" or "s3://bucket/prefix".
func (s *S3Store) Location() string {
	if s.prefix == "" {
		return "s3://" + s.bucket
	}
	return "s3://" + s.bucket + "/" + strings.TrimSuffix(s.prefix, "/")
}

// Bucket is the store's bucket.
func (s *S3Store) Bucket() string { return s.bucket }

// Client exposes the SDK client for callers that need an operation the Store interface lacks.
func (s *S3Store) Client() *s3.Client { return s.client }

// objectKey maps a validated store key to the S3 object key.
func (s *S3Store) objectKey(key string) (string, error) {
	if err := validateKey(key); err != nil {
		return "", fmt.Errorf("%s: %w", s.Location(), err)
	}
	return s.prefix + key, nil
}

func (s *S3Store) uri(key string) string { return "s3://" + s.bucket + "/" + s.prefix + key }

// Stat implements Store.
func (s *S3Store) Stat(ctx context.Context, key string) (ObjectInfo, error) {
	ok, err := s.objectKey(key)
	if err != nil {
		return ObjectInfo{}, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &ok})
	if err != nil {
		if isNotFound(err) {
			return ObjectInfo{}, fmt.Errorf("stat %s: %w", s.uri(key), ErrNotFound)
		}
		return ObjectInfo{}, s.s3Error("stat", key, err)
	}
	return ObjectInfo{Key: key, Size: aws.ToInt64(out.ContentLength), ModTime: aws.ToTime(out.LastModified), ETag: aws.ToString(out.ETag)}, nil
}

// Get implements Store.
func (s *S3Store) Get(ctx context.Context, key string) ([]byte, error) {
	ok, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	out, err := s.client.GetObject(ctx, &s3.GetObjectInput{Bucket: &s.bucket, Key: &ok})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("get %s: %w", s.uri(key), ErrNotFound)
		}
		return nil, s.s3Error("get", key, err)
	}
	defer out.Body.Close()
	buf := bytes.NewBuffer(make([]byte, 0, max(aws.ToInt64(out.ContentLength), 0)+bytes.MinRead))
	if _, err := buf.ReadFrom(out.Body); err != nil {
		return nil, s.s3Error("get", key, err)
	}
	return buf.Bytes(), nil
}

// Put implements Store. A single PutObject replaces the object atomically.
func (s *S3Store) Put(ctx context.Context, key string, data []byte) error {
	ok, err := s.objectKey(key)
	if err != nil {
		return err
	}
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.bucket, Key: &ok, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
	})
	if err != nil {
		return s.s3Error("put", key, err)
	}
	return nil
}

// PutIfAbsent implements Store with PutObject If-None-Match: *.
//
// A retried request is ambiguous: if an earlier attempt reached the server but its response was lost,
// the retry finds "its own" object and gets 412. Only in that case the stored bytes are compared with
// ours, and identical bytes count as a win. (Two different Delta committers never write identical
// commits: commitInfo and file names differ.)
func (s *S3Store) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	ok, err := s.objectKey(key)
	if err != nil {
		return err
	}
	var attempts atomic.Int32
	_, err = s.client.PutObject(ctx, &s3.PutObjectInput{
		Bucket: &s.bucket, Key: &ok, Body: bytes.NewReader(data), ContentLength: aws.Int64(int64(len(data))),
		IfNoneMatch: aws.String("*"),
	}, s3.WithAPIOptions(countAttempts(&attempts)))
	if err == nil {
		return nil
	}
	if !isConditionLost(err) {
		return s.s3Error("put-if-absent", key, err)
	}
	return refusedPut(ctx, s.Get, s.uri(key), key, data, attempts.Load() > 1)
}

// countAttempts adds a middleware after the retry middleware, so it runs once per HTTP attempt.
func countAttempts(n *atomic.Int32) func(*middleware.Stack) error {
	return func(stack *middleware.Stack) error {
		return stack.Finalize.Add(middleware.FinalizeMiddlewareFunc("deltakeeperCountAttempts",
			func(ctx context.Context, in middleware.FinalizeInput, next middleware.FinalizeHandler) (
				middleware.FinalizeOutput, middleware.Metadata, error) {
				n.Add(1)
				return next.HandleFinalize(ctx, in)
			}), middleware.After)
	}
}

// Delete implements Store. S3 deletes are idempotent; a 404 from a stricter server is not an error.
func (s *S3Store) Delete(ctx context.Context, key string) error {
	ok, err := s.objectKey(key)
	if err != nil {
		return err
	}
	_, err = s.client.DeleteObject(ctx, &s3.DeleteObjectInput{Bucket: &s.bucket, Key: &ok})
	if err != nil && !isNotFound(err) {
		return s.s3Error("delete", key, err)
	}
	return nil
}

// List implements Store with ListObjectsV2 (Prefix, StartAfter, continuation tokens). S3 returns keys
// in UTF-8 byte order, which is Go's string order, so pages are yielded as they arrive.
func (s *S3Store) List(ctx context.Context, prefix, startAfter string) iter.Seq2[ObjectInfo, error] {
	return func(yield func(ObjectInfo, error) bool) {
		if err := validatePrefix(prefix); err != nil {
			yield(ObjectInfo{}, fmt.Errorf("list %s: %w", s.Location(), err))
			return
		}
		in := &s3.ListObjectsV2Input{Bucket: &s.bucket, Prefix: aws.String(s.prefix + prefix)}
		if startAfter != "" {
			in.StartAfter = aws.String(s.prefix + startAfter)
		}
		pages := s3.NewListObjectsV2Paginator(s.client, in)
		for pages.HasMorePages() {
			page, err := pages.NextPage(ctx)
			if err != nil {
				yield(ObjectInfo{}, s.s3Error("list", prefix, err))
				return
			}
			for _, obj := range page.Contents {
				full := aws.ToString(obj.Key)
				key, found := strings.CutPrefix(full, s.prefix)
				// Directory markers ("dir/") are not objects; keys outside the prefix cannot occur but
				// must never be handed out as if they were ours.
				if !found || key == "" || strings.HasSuffix(key, "/") {
					continue
				}
				info := ObjectInfo{Key: key, Size: aws.ToInt64(obj.Size), ModTime: aws.ToTime(obj.LastModified), ETag: aws.ToString(obj.ETag)}
				if !yield(info, nil) {
					return
				}
			}
		}
	}
}

// Open implements Store: one HeadObject for size and ETag, then ranged GETs; see rangeReader. The reader
// uses ctx for all its requests, so ctx must outlive the reader.
func (s *S3Store) Open(ctx context.Context, key string) (ReaderAt, error) {
	ok, err := s.objectKey(key)
	if err != nil {
		return nil, err
	}
	out, err := s.client.HeadObject(ctx, &s3.HeadObjectInput{Bucket: &s.bucket, Key: &ok})
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("open %s: %w", s.uri(key), ErrNotFound)
		}
		return nil, s.s3Error("open", key, err)
	}
	return newS3Reader(ctx, s, key, ok, aws.ToInt64(out.ContentLength), aws.ToString(out.ETag)), nil
}

// errClosed is returned by readers and writers used after Close.
var errClosed = errors.New("use after close")

// discard drains and closes a response body so the connection can be reused.
func discard(body io.ReadCloser) {
	_, _ = io.Copy(io.Discard, io.LimitReader(body, 64<<10))
	body.Close()
}
