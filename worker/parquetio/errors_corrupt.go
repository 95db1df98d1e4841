package parquetio

import (
	"errors"
	"fmt"
	"io"
	"sync"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// ErrCorruptFile is matched (errors.Is) by errors for Parquet files that cannot be decoded: a
// missing or wrong magic number, a footer that does not parse, truncated pages, values that do not
// decode. Errors name the file when its reader knows its name; the CLI reports them as a corrupt
// table (refused, exit 2).
var ErrCorruptFile = errors.New("the Parquet file is corrupt")

// recordingReader remembers the first storage error its reads returned. Bytes that do not decode
// are corruption, which no retry heals; a read that failed (network, credentials) may pass on
// retry. Only this wrapper can tell the two apart, because the decoders swallow the cause.
type recordingReader struct {
	storage.ReaderAt
	mu  sync.Mutex
	err error
}

func (r *recordingReader) ReadAt(p []byte, off int64) (int, error) {
	n, err := r.ReaderAt.ReadAt(p, off)
	// A read beyond the object's end is the decoder following a corrupt offset, not a storage
	// failure, whatever error the reader reports for it.
	if err != nil && !errors.Is(err, io.EOF) && off >= 0 && off+int64(len(p)) <= r.Size() {
		r.mu.Lock()
		if r.err == nil {
			r.err = err
		}
		r.mu.Unlock()
	}
	return n, err
}

func (r *recordingReader) readErr() error {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.err
}

// fileName is the reader's name for messages (the object key or local path), or "".
func fileName(r storage.ReaderAt) string {
	if n, ok := r.(interface{ Name() string }); ok {
		return n.Name()
	}
	return ""
}

// classify marks a decoding error of the file read through rec as corruption, naming the file,
// unless a read failed underneath it: then the storage error is what the caller must see.
func classify(rec *recordingReader, name string, err error) error {
	if err == nil || errors.Is(err, ErrCorruptFile) {
		return err
	}
	if rerr := rec.readErr(); rerr != nil {
		if errors.Is(err, rerr) {
			return err
		}
		return fmt.Errorf("%w (reading %s failed: %w)", err, name, rerr)
	}
	if name != "" {
		return fmt.Errorf("parquet file %s: %w: %w", name, err, ErrCorruptFile)
	}
	return fmt.Errorf("%w: %w", err, ErrCorruptFile)
}
