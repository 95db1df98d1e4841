package storage

import (
	"context"
	"fmt"
	"io"
	"sync"
)

// readAheadSlots is how many read-ahead windows a reader keeps. A Parquet reader interleaves a few
// sequential streams (footer, then one per column chunk being decoded), so a handful of windows
// keeps each stream's next read cached without holding much memory (slots × ReadAhead per reader).
const readAheadSlots = 4

// bodyReadAttempts bounds retries of a GET whose body failed mid-stream; the SDKs retry requests
// but not reading their bodies.
const bodyReadAttempts = 3

// rangeReader implements ReaderAt over an object store's ranged GETs (S3, Azure Blob, GCS). It is safe
// for concurrent use.
//
// Every fetch is pinned to the version of the object seen at open (S3 and Azure: If-Match with its
// ETag; GCS: its generation), so a reader never mixes bytes of two versions of an object (Delta may
// rewrite a checkpoint under the same name); a change fails the read instead.
//
// Small reads are widened to a ReadAhead window that is kept for later reads: parquet-go, for one,
// reads the footer as "last 8 bytes, then the footer" and pages through small buffered reads, which
// would otherwise each cost a round trip. A window that would run past the end of the object is
// shifted back instead, so the first footer read fetches the whole footer too.
type rangeReader struct {
	ctx       context.Context
	uri       string // for messages
	size      int64
	readAhead int64
	// fetchOnce fills buf with the bytes at off with one ranged request; retry says whether the
	// failure was the body breaking mid-stream, which the SDKs do not retry themselves.
	fetchOnce func(ctx context.Context, buf []byte, off int64) (retry bool, err error)

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

func (r *rangeReader) Size() int64 { return r.size }

// Name is the object's URI, for messages about its content (parquetio names corrupt files by it).
func (r *rangeReader) Name() string { return r.uri }

// Close drops the cached windows; later reads fail.
func (r *rangeReader) Close() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	r.closed = true
	r.slots = [readAheadSlots]window{}
	return nil
}

// ReadAt implements io.ReaderAt.
func (r *rangeReader) ReadAt(p []byte, off int64) (int, error) {
	if off < 0 {
		return 0, fmt.Errorf("read %s: negative offset %d", r.uri, off)
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
func (r *rangeReader) cached(p []byte, off int64) (bool, error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return false, fmt.Errorf("read %s: %w", r.uri, errClosed)
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
func (r *rangeReader) remember(off int64, data []byte) {
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
func (r *rangeReader) fetch(buf []byte, off int64) error {
	var err error
	for range bodyReadAttempts {
		var retry bool
		retry, err = r.fetchOnce(r.ctx, buf, off)
		if err == nil || !retry || r.ctx.Err() != nil {
			break
		}
	}
	return err
}
