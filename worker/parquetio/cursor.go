package parquetio

import (
	"errors"
	"fmt"
	"io"
)

// cursor walks the (repetition level, definition level, value) triplets of one leaf column through the
// pages of one row group at a time.
type cursor struct {
	f    *File
	rb   *readBuffers
	leaf *pqNode
	cr   *chunkReader
	page rawPage
	i    int // next triplet in page
	vi   int // next value in page
	done bool
	err  error
}

// cursorReadBuffer is the read-ahead of one column: small, because scans open many columns at once.
const cursorReadBuffer = 64 << 10

func newCursor(f *File, leaf *pqNode) *cursor {
	return &cursor{f: f, leaf: leaf, rb: newReadBuffers(cursorReadBuffer)}
}

// open positions the cursor at the start of row group rg.
func (c *cursor) open(rg int) {
	c.close()
	c.page.n, c.i, c.vi, c.done = 0, 0, 0, false
	c.cr, c.err = c.f.openChunk(rg, c.leaf, c.rb)
}

func (c *cursor) close() { c.cr = nil }

// ready makes sure an unread triplet is available; false at the end of the row group or on error.
func (c *cursor) ready() bool {
	for c.i >= c.page.n {
		if c.done || c.err != nil || c.cr == nil {
			return false
		}
		err := c.cr.next(&c.page)
		if errors.Is(err, io.EOF) {
			c.done = true
			return false
		}
		if err != nil {
			c.err = err
			return false
		}
		c.i, c.vi = 0, 0
	}
	return true
}

func (c *cursor) levels() (rep, def int) {
	if c.page.reps != nil {
		rep = int(c.page.reps[c.i])
	}
	if c.page.defs != nil {
		def = int(c.page.defs[c.i])
	} else {
		def = c.leaf.maxDef
	}
	return rep, def
}

// peekRep is the repetition level of the next triplet, 0 at the end (a record boundary).
func (c *cursor) peekRep() int {
	if !c.ready() {
		return 0
	}
	r, _ := c.levels()
	return r
}

func (c *cursor) truncated() {
	if c.err == nil {
		c.err = fmt.Errorf("parquet column %q has fewer values than its row group has rows; the file is corrupt: %w", c.leaf.pathString(), ErrCorruptFile)
	}
}

// peekDef is the definition level of the next triplet; -1 at the end, so the (missing) value reads as
// absent and the truncation is reported.
func (c *cursor) peekDef() int {
	if !c.ready() {
		c.truncated()
		return -1
	}
	_, d := c.levels()
	return d
}

// next consumes one triplet and returns where its value is: vals and index i, or present=false for a
// null. ok is false past the end.
func (c *cursor) next() (vals *valueSlices, i int, present, ok bool) {
	if !c.ready() {
		c.truncated()
		return nil, 0, false, false
	}
	_, d := c.levels()
	c.i++
	if d < c.leaf.maxDef {
		return nil, 0, false, true
	}
	i = c.vi
	c.vi++
	if c.page.dict != nil {
		return &c.page.dict.valueSlices, int(c.page.idx[i]), true, true
	}
	return &c.page.valueSlices, i, true, true
}

// skip consumes the rest of one value whose stored node has repetition level rep: one triplet, then
// every triplet that repeats deeper inside it.
func (c *cursor) skip(rep int) {
	if _, _, _, ok := c.next(); !ok {
		return
	}
	for c.ready() {
		if r, _ := c.levels(); r <= rep {
			return
		}
		c.next()
	}
}

// exhausted reports whether the row group has no triplets left.
func (c *cursor) exhausted() bool { return !c.ready() }
