package parquetio

import (
	"bytes"
	"fmt"
	"sync"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// pageJob is one encoded page on its way to compression, which runs inline (Writer) or on a
// compressPool (Rewrite), where it lets several cores work on one column: a dominant column would
// otherwise bound the rewrite's speed to one core.
type pageJob struct {
	header     format.PageHeader
	body       []byte // uncompressed page body
	page       []byte // header + compressed body, once done
	compressed int    // compressed body size
	err        error
	done       chan struct{} // closed when compressed on a pool; nil when compressed inline
}

// headerWriter serialises page headers; one per goroutine.
type headerWriter struct {
	buf bytes.Buffer
	enc *thrift.Encoder
}

func newHeaderWriter() *headerWriter {
	h := &headerWriter{}
	h.enc = thrift.NewEncoder(new(thrift.CompactProtocol).NewWriter(&h.buf))
	return h
}

// storedPage is a page as a file stores it, for a page copy: header h encoded again (with whatever
// the copy changed in it), then the stored body.
func (hw *headerWriter) storedPage(h *format.PageHeader, body []byte) ([]byte, error) {
	hw.buf.Reset()
	if err := hw.enc.Encode(h); err != nil {
		return nil, fmt.Errorf("encode page header: %w", err)
	}
	page := make([]byte, 0, hw.buf.Len()+len(body))
	page = append(page, hw.buf.Bytes()...)
	return append(page, body...), nil
}

// compress fills j.page. scratch receives the compressed body and is kept by the caller for reuse.
func (j *pageJob) compress(comp pageCompressor, scratch *[]byte, hw *headerWriter) {
	payload := j.body
	if comp != nil {
		z, err := comp.compress((*scratch)[:0], j.body)
		if err != nil {
			j.err = fmt.Errorf("compress page: %w", err)
			return
		}
		*scratch, payload = z, z
	}
	j.compressed = len(payload)
	j.header.CompressedPageSize = int32(len(payload))
	hw.buf.Reset()
	if err := hw.enc.Encode(&j.header); err != nil {
		j.err = fmt.Errorf("encode page header: %w", err)
		return
	}
	page := make([]byte, 0, hw.buf.Len()+len(payload))
	page = append(page, hw.buf.Bytes()...)
	page = append(page, payload...)
	j.page = page
}

// wait blocks until the job is done.
func (j *pageJob) wait() error {
	if j.done != nil {
		<-j.done
	}
	return j.err
}

// compressPool compresses pages on a fixed set of goroutines and recycles page bodies, so the memory
// of pages in flight is bounded by the queue, not by the number of columns.
type compressPool struct {
	comp pageCompressor
	jobs chan *pageJob
	wg   sync.WaitGroup
	mu   sync.Mutex
	free [][]byte
	keep int
}

func newCompressPool(comp pageCompressor, workers int) *compressPool {
	p := &compressPool{comp: comp, jobs: make(chan *pageJob, 2*workers), keep: 2 * workers}
	for range workers {
		p.wg.Add(1)
		go func() {
			defer p.wg.Done()
			var scratch []byte
			hw := newHeaderWriter()
			for j := range p.jobs {
				j.compress(p.comp, &scratch, hw)
				p.putBuffer(j.body)
				j.body = nil
				close(j.done)
			}
		}()
	}
	return p
}

// submit queues a job; it blocks while the queue is full, which paces the encoders.
func (p *compressPool) submit(j *pageJob) {
	j.done = make(chan struct{})
	p.jobs <- j
}

// buffer returns an empty page body buffer.
func (p *compressPool) buffer(capacity int) []byte {
	p.mu.Lock()
	defer p.mu.Unlock()
	for n := len(p.free); n > 0; n-- {
		b := p.free[n-1]
		p.free = p.free[:n-1]
		if cap(b) >= capacity {
			return b[:0]
		}
	}
	return make([]byte, 0, capacity)
}

func (p *compressPool) putBuffer(b []byte) {
	p.mu.Lock()
	if len(p.free) < p.keep {
		p.free = append(p.free, b)
	}
	p.mu.Unlock()
}

// close stops the goroutines once queued jobs are done.
func (p *compressPool) close() {
	close(p.jobs)
	p.wg.Wait()
}
