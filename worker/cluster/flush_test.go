package cluster

import (
	"bytes"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
)

// memObject is a storage.Writer in memory that can fail its n-th write.
type memObject struct {
	mu              sync.Mutex
	buf             bytes.Buffer
	writes, failAt  int
	closed, aborted bool
}

var errWrite = errors.New("injected write failure")

func (m *memObject) Write(p []byte) (int, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.writes++
	if m.writes == m.failAt {
		return 0, errWrite
	}
	return m.buf.Write(p)
}

func (m *memObject) Close() error { m.mu.Lock(); defer m.mu.Unlock(); m.closed = true; return nil }
func (m *memObject) Abort() error { m.mu.Lock(); defer m.mu.Unlock(); m.aborted = true; return nil }

func TestOutputFlusher_WritesEveryByteInOrderAndClosesInTheBackground(t *testing.T) {
	var fl outputFlusher
	rng := rand.New(rand.NewPCG(1, 2))
	objs := make([]*memObject, 4)
	wants := make([][]byte, len(objs))
	for i := range objs {
		objs[i] = &memObject{}
		w := fl.wrap(objs[i])
		// Writes from a few bytes to several buffers, as pages and dictionary pages come.
		for range 40 {
			p := make([]byte, rng.IntN(3*flushBuffer/2))
			for k := range p {
				p[k] = byte(rng.Uint32())
			}
			if _, err := w.Write(p); err != nil {
				t.Fatal(err)
			}
			wants[i] = append(wants[i], p...)
		}
		if err := w.Close(); err != nil {
			t.Fatal(err)
		}
	}
	if err := fl.wait(); err != nil {
		t.Fatal(err)
	}
	for i, o := range objs {
		if !o.closed || o.aborted || !bytes.Equal(o.buf.Bytes(), wants[i]) {
			t.Fatalf("object %d: closed %v, aborted %v, %d bytes, want %d closed", i, o.closed, o.aborted, o.buf.Len(), len(wants[i]))
		}
	}
}

func TestOutputFlusher_AFailedWriteAbortsTheObjectAndIsReported(t *testing.T) {
	var fl outputFlusher
	o := &memObject{failAt: 2}
	w := fl.wrap(o)
	var err error
	for range 20 {
		if _, err = w.Write(make([]byte, flushBuffer)); err != nil {
			break
		}
	}
	if !errors.Is(err, errWrite) {
		t.Fatalf("writes after the failure: %v, want the write error", err)
	}
	_ = w.Abort() // what parquetio does when a write fails
	if err := fl.wait(); !errors.Is(err, errWrite) {
		t.Fatalf("wait: %v, want the write error", err)
	}
	if o.closed || !o.aborted {
		t.Fatalf("closed %v, aborted %v; want the object aborted", o.closed, o.aborted)
	}
}

func TestOutputFlusher_AbortDiscardsTheObject(t *testing.T) {
	var fl outputFlusher
	o := &memObject{}
	w := fl.wrap(o)
	if _, err := w.Write(make([]byte, 3*flushBuffer)); err != nil {
		t.Fatal(err)
	}
	if err := w.Abort(); err != nil {
		t.Fatal(err)
	}
	if err := fl.wait(); err != nil {
		t.Fatalf("wait after an abort: %v", err)
	}
	if o.closed || !o.aborted {
		t.Fatalf("closed %v, aborted %v; want the object aborted", o.closed, o.aborted)
	}
	if err := w.Abort(); err != nil {
		t.Fatalf("second abort: %v", err)
	}
}
