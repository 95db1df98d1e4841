package storage

import (
	"context"
	"fmt"
	"io"
	"net/http"
	"sync"

	"github.com/aws/aws-sdk-go-v2/aws"
	"github.com/aws/aws-sdk-go-v2/service/s3"
)

// readAheadSlots is how many read-ahead windows a reader keeps. A Parquet reader interleaves a few
// sequential streams (footer, then one per column chunk being decoded), so a handful of windows
// keeps each stream's next read cached without holding much memory (slots × ReadAhead per reader).
const readAheadSlots = 4

// bodyReadAttempts bounds retries of a GET whose body failed mid-stream; the SDK retries requests
// but not reading their bodies.
const bodyReadAttempts = 3

// s3Reader implements ReaderAt with ranged GETs. It is safe for concurrent use.
//
// Every GET carries If-Match with the ETag seen at open, so a reader never mixes bytes of two versions
// of an object (Delta may rewrite a checkpoint under the same name); a change fails the read instead.
//
// Small reads are widened to a ReadAhead window that is kept for later reads: parquet-go, for one,
// reads the footer as "last 8 bytes, then the footer" and pages through small buffered reads, which
// would otherwise each cost a round trip. A window that would run past the end of the object is
// shifted back instead, so the first footer read fetches the whole footer too.
type s3Reader struct {
	ctx       context.Context
	s         *S3Store
	key       string // store key, for messages
	objectKey string
	size      int64
	etag      string
	readAhead int64

	mu     sync.Mutex
	closed bool
	tick   uint64
	slots  [readAheadSlots]window
}

// window is one cached range of the object.
type window struct {
	off  int64
	data []byte
	used uint64 // tick of the last hit, for least-recently-used replacement
}

func newS3Reader(ctx context.Context, s *S3Store, key, objectKey string, size int64, etag string) *s3Reader {
	return &s3Reader{ctx: ctx, s: s, key: key, objectKey: objectKey, size: size, etag: etag, readAhead: s.cfg.ReadAhead}
}

func (r *s3Reader) Size() int64 { return r.size }

// Name is the object's key, for messages about its content.
func (r *s3Reader) Name() string { return r.key }

// Close drops the cached windows; later reads fail.
func (r *s3Reader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.slots = [readAheadSlots]window{}
	return nil
}

// ReadAt implements io.ReaderAt.
func (r *s3Reader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset %d", r.s.uri(r.key), off)
	}
	if len(p) == 0 {
		return 0, nil
	}
	if off >= r.size {
		return 0, io.EOF
	}
	n := int(min(int64(len(p)), r.size-off))
	var eof error
	if n < len(p) {
		eof = io.EOF
	}
	hit, err := r.cached(p[:n], off)
	if err != nil {
		return 0, err
	}
	if hit {
		return n, eof
	}
	if r.readAhead <= 0 || int64(n) >= r.readAhead {
		if err := r.fetch(p[:n], off); err != nil {
			return 0, err
		}
		return n, eof
	}
	end := min(off+r.readAhead, r.size)
	start := max(0, end-r.readAhead) // = off unless the window hit the end of the object
	buf := make([]byte, end-start)
	if err := r.fetch(buf, start); err != nil {
		return 0, err
	}
	copy(p[:n], buf[off-start:])
	r.remember(start, buf)
	return n, eof
}

// cached copies [off, off+len(p)) from a window that holds all of it.
func (r *s3Reader) cached(p []byte, off int64) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false, fmt.Errorf("read %s: %w", r.s.uri(r.key), errClosed)
	}
	for i := range r.slots {
		w := &r.slots[i]
		if w.data != nil && off >= w.off && off+int64(len(p)) <= w.off+int64(len(w.data)) {
			copy(p, w.data[off-w.off:])
			r.tick++
			w.used = r.tick
			return true, nil
		}
	}
	return false, nil
}

// remember stores a fetched window in the least recently used slot.
func (r *s3Reader) remember(off int64, data []byte) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	victim := &r.slots[0]
	for i := range r.slots {
		if r.slots[i].used < victim.used {
			victim = &r.slots[i]
		}
	}
	r.tick++
	*victim = window{off: off, data: data, used: r.tick}
}

// fetch fills buf with the object's bytes at off using one ranged GET (retried if the body breaks).
func (r *s3Reader) fetch(buf []byte, off int64) error {
	var err error
	for range bodyReadAttempts {
		var retry bool
		retry, err = r.fetchOnce(buf, off)
		if err == nil || !retry || r.ctx.Err() != nil {
			break
		}
	}
	return err
}

func (r *s3Reader) fetchOnce(buf []byte, off int64) (retry bool, err error) {
	in := &s3.GetObjectInput{
		Bucket: &r.s.bucket,
		Key:    &r.objectKey,
		Range:  aws.String(fmt.Sprintf("bytes=%d-%d", off, off+int64(len(buf))-1)),
	}
	if r.etag != "" {
		in.IfMatch = aws.String(r.etag)
	}
	out, err := r.s.client.GetObject(r.ctx, in)
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
