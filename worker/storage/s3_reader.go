package storage

import (
	"context"
	"fmt"
	"io"
	"net/http"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// newS3Reader reads an S3 object with ranged GETs carrying If-Match with the ETag seen at open.
func newS3Reader(ctx context.Context, s *S3Store, key, objectKey string, size int64, etag string) *rangeReader {
	f := &s3Fetcher{s: s, key: key, objectKey: objectKey, etag: etag}
	return &rangeReader{ctx: ctx, uri: s.uri(key), size: size, readAhead: s.cfg.ReadAhead, fetchOnce: f.fetchOnce}
}

type s3Fetcher struct {
	s         *S3Store
	key       string // store key, for messages
	objectKey string
	etag      string
}

func (r *s3Fetcher) fetchOnce(ctx context.Context, buf []byte, off int64) (retry bool, err error) {
	in := &s3.GetObjectInput{
		Bucket: &r.s.bucket,
		Key:    &r.objectKey,
		Range:  aws.String(fmt.Sprintf("bytes=%d-%d", off, off+int64(len(buf))-1)),
	}
	if r.etag != "" {
		in.IfMatch = aws.String(r.etag)
	}
	out, err := r.s.client.GetObject(ctx, in)
	if err != nil {
		switch {
		case isNotFound(err):
			return false, fmt.Errorf("read %s: deleted since it was opened: %w", r.s.uri(r.key), ErrNotFound)
		case httpStatus(err) == http.StatusPreconditionFailed:
			return false, fmt.Errorf("read %s: the object was replaced since it was opened; reopen it to read "+
				"the new version: %w", r.s.uri(r.key), err)
		}
		return false, r.s.s3Error("read", r.key, err)
	}
	defer discard(out.Body)
	// A server that ignores Range answers 200 with the whole object; reading that as our range would
	// silently return the wrong bytes.
	if out.ContentRange == nil && (off != 0 || aws.ToInt64(out.ContentLength) != int64(len(buf))) {
		return false, fmt.Errorf("read %s: the server ignored the Range header (no Content-Range in the "+
			"response); it cannot serve random-access reads", r.s.uri(r.key))
	}
	if _, err := io.ReadFull(out.Body, buf); err != nil {
		return true, fmt.Errorf("read %s: reading bytes %d-%d: %w", r.s.uri(r.key), off, off+int64(len(buf))-1, err)
	}
	return false, nil
}
