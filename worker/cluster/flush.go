package cluster

import (
	"errors"
	"sync"
	"sync/atomic"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// The columnar sort encodes its outputs on as many goroutines as there are cores, and each of them
// used to write its pages and then close its file (on local disk: fsync, rename, fsync of the
// directory) itself. While it waited in those calls its core had nothing to do: a FULL run spent a
// third of its encoding time with one of two encoders in write or fsync. An outputFlusher takes the
// bytes off the encoders instead: each output's pages are copied into buffers that a goroutine of its
// own writes, and Close hands the close to that goroutine and returns, so the encoder goes on with
// the next output while the storage finishes this one. The caller learns how the closes went from
// wait, which it must call before it describes, commits or aborts the outputs.

// flushBuffer is the size of the buffers an output's pages are gathered in, flushDepth the number of
// full buffers an output may have waiting for its writer goroutine before its encoder waits too:
// together they bound the memory held for each output in flight (3 MiB).
const (
	flushBuffer = 1 << 20
	flushDepth  = 2
)

// outputFlusher writes and closes outputs in the background; wait collects the outcome.
type outputFlusher struct {
	wg   sync.WaitGroup
	mu   sync.Mutex
	errs []error
}

// wrap returns a writer that writes to w in the background.
func (f *outputFlusher) wrap(w storage.Writer) storage.Writer {
	b := &backgroundWriter{w: w, f: f, queue: make(chan []byte, flushDepth), free: make(chan []byte, flushDepth+1)}
	f.wg.Go(b.drain)
	return b
}

// wait waits until every wrapped writer is closed or aborted and returns the errors of those whose
// writes or Close failed: their objects may be missing, and nothing may be committed.
func (f *outputFlusher) wait() error {
	f.wg.Wait()
	f.mu.Lock()
	defer f.mu.Unlock()
	return errors.Join(f.errs...)
}

// backgroundWriter is one output's storage.Writer, written by drain. Write, Close and Abort are
// called from one goroutine at a time, like any storage.Writer's.
type backgroundWriter struct {
	w     storage.Writer
	f     *outputFlusher
	buf   []byte
	queue chan []byte // full buffers for drain; closed by Close or Abort
	free  chan []byte // buffers drain has written
	bufs  int         // buffers allocated
	done  bool        // Close or Abort called
	abort atomic.Bool // drain aborts w instead of closing it
	err   atomic.Pointer[error]
}

func (b *backgroundWriter) Write(p []byte) (int, error) {
	if b.done {
		return 0, errors.New("write after close")
	}
	if err := b.failed(); err != nil {
		return 0, err
	}
	n := len(p)
	for len(p) > 0 {
		if b.buf == nil {
			b.buf = b.nextBuffer()
		}
		c := copy(b.buf[len(b.buf):cap(b.buf)], p)
		b.buf, p = b.buf[:len(b.buf)+c], p[c:]
		if len(b.buf) == cap(b.buf) {
			b.queue <- b.buf
			b.buf = nil
		}
	}
	return n, nil
}

// nextBuffer returns an empty buffer: a new one while fewer than flushDepth+1 exist, else the next
// one drain has written (waiting for it, which is what bounds the memory).
func (b *backgroundWriter) nextBuffer() []byte {
	if b.bufs <= flushDepth {
		select {
		case buf := <-b.free:
			return buf
		default:
		}
		b.bufs++
		return make([]byte, 0, flushBuffer)
	}
	return <-b.free
}

// Close queues what is left and the close itself, and returns: the outcome is outputFlusher.wait's.
func (b *backgroundWriter) Close() error {
	if b.done {
		return errors.New("close after close")
	}
	b.done = true
	if len(b.buf) > 0 {
		b.queue <- b.buf
		b.buf = nil
	}
	close(b.queue)
	return b.failed()
}

// Abort discards the output: drain stops writing and aborts the object. After Close it does nothing.
func (b *backgroundWriter) Abort() error {
	if b.done {
		return nil
	}
	b.done = true
	b.abort.Store(true)
	close(b.queue)
	return nil
}

func (b *backgroundWriter) failed() error {
	if e := b.err.Load(); e != nil {
		return *e
	}
	return nil
}

// drain writes the queued buffers in order, then closes the object, or aborts it after a failed
// write or an Abort; a failed write or Close goes to the flusher (an Abort alone is the encoder's
// failure, which it reports itself).
func (b *backgroundWriter) drain() {
	var err error
	for buf := range b.queue {
		if err == nil && !b.abort.Load() {
			if _, err = b.w.Write(buf); err != nil {
				b.err.Store(&err)
			}
		}
		b.free <- buf[:0]
	}
	if err == nil && !b.abort.Load() {
		err = b.w.Close()
	} else {
		_ = b.w.Abort() // the write error, or the encoder's, is the one to report
	}
	if err != nil {
		b.f.mu.Lock()
		b.f.errs = append(b.f.errs, err)
		b.f.mu.Unlock()
	}
}
