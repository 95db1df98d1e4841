package parquetio

import (
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"sync"

	"github.com/parquet-go/parquet-go/format"
)

// leafMode is how a leaf's values are copied out of its pages.
type leafMode uint8

const (
	modeLevels      leafMode = iota // levels only: a probe for the nullness of a struct
	modeInt32                       // INT32 (integer, date, or an integer widened to long)
	modeUint32                      // unsigned INT32 widened to long
	modeInt64                       // INT64 (long, or a timestamp in microseconds)
	modeBool                        // BOOLEAN
	modeBytes                       // BYTE_ARRAY (string, binary)
	modeInt8                        // INT32 read as byte: truncated to 8 bits as the row reader does
	modeInt16                       // INT32 read as short: truncated to 16 bits
	modeMillis                      // INT64 timestamp in milliseconds, read in microseconds
	modeNanos                       // INT64 timestamp in nanoseconds, read in microseconds (floored)
	modeInt96                       // Spark's INT96 timestamp, read in microseconds
	modeDayMicros                   // INT32 date read as timestamp_ntz: microseconds of its midnight
	modeFloat                       // FLOAT
	modeDouble                      // DOUBLE
	modeFloatDouble                 // FLOAT widened to double
	modeInt32Double                 // INT32 widened to double
	modeInt64Double                 // INT64 widened to double
)

// leafVectorKind is the kind of vector a primitive's leaf mode fills.
func leafVectorKind(m leafMode) VectorKind {
	switch m {
	case modeBool:
		return VecBool
	case modeBytes:
		return VecString
	case modeFloat:
		return VecFloat
	case modeDouble, modeFloatDouble, modeInt32Double, modeInt64Double:
		return VecDouble
	}
	return VecLong
}

// columnLeaf holds one leaf column's triplets of the current batch: levels for every triplet, values
// for the present ones only.
type columnLeaf struct {
	c      *cursor
	mode   leafMode
	maxDef int
	maxRep int
	n      int     // triplets in the batch
	defs   []uint8 // unused when maxDef is 0: every triplet is present
	// rowStart[r] is the triplet where row r starts, for repeated leaves; len rows+1.
	rowStart []int32
	i64      []int64
	f32      []float32
	f64      []float64
	bools    []bool
	bin      []byte
	off      []uint32 // value j is bin[off[j]:off[j+1]]
}

func (l *columnLeaf) reset() {
	l.n = 0
	l.defs, l.rowStart = l.defs[:0], l.rowStart[:0]
	l.i64, l.bools, l.bin = l.i64[:0], l.bools[:0], l.bin[:0]
	l.f32, l.f64 = l.f32[:0], l.f64[:0]
	l.off = append(l.off[:0], 0)
}

// def is the definition level of triplet t.
func (l *columnLeaf) def(t int32) int {
	if l.maxDef == 0 {
		return l.maxDef
	}
	return int(l.defs[t])
}

// take moves the next k triplets of the cursor's current page into the batch.
func (l *columnLeaf) take(k int) {
	c := l.c
	p := &c.page
	present := k
	if p.defs != nil {
		l.defs = append(l.defs, p.defs[c.i:c.i+k]...)
		present = countEqual(p.defs[c.i:c.i+k], byte(l.maxDef))
	}
	l.n += k
	vi := c.vi
	c.i += k
	c.vi += present
	if present == 0 || l.mode == modeLevels {
		return
	}
	if p.dict != nil {
		d := &p.dict.valueSlices
		for _, j := range p.idx[vi : vi+present] {
			l.appendValue(d, int(j))
		}
		return
	}
	v := &p.valueSlices
	switch l.mode {
	case modeInt32:
		for _, x := range v.i32[vi : vi+present] {
			l.i64 = append(l.i64, int64(x))
		}
	case modeInt64:
		l.i64 = append(l.i64, v.i64[vi:vi+present]...)
	case modeBool:
		l.bools = append(l.bools, v.bools[vi:vi+present]...)
	case modeBytes:
		lo, hi := v.binOff[vi], v.binOff[vi+present]
		base := uint32(len(l.bin)) - lo
		l.bin = append(l.bin, v.bin[lo:hi]...)
		for _, o := range v.binOff[vi+1 : vi+present+1] {
			l.off = append(l.off, o+base)
		}
	case modeFloat:
		l.f32 = append(l.f32, v.f32[vi:vi+present]...)
	case modeDouble:
		l.f64 = append(l.f64, v.f64[vi:vi+present]...)
	default:
		for j := vi; j < vi+present; j++ {
			l.appendValue(v, j)
		}
	}
}

// appendValue appends value j of v converted as the row reader's converterFor does for the
// leaf's mode (the same logical value, held as int64, float32, float64, bool or bytes).
func (l *columnLeaf) appendValue(v *valueSlices, j int) {
	switch l.mode {
	case modeInt32:
		l.i64 = append(l.i64, int64(v.i32[j]))
	case modeUint32:
		l.i64 = append(l.i64, int64(uint32(v.i32[j])))
	case modeInt8:
		l.i64 = append(l.i64, int64(int8(v.i32[j])))
	case modeInt16:
		l.i64 = append(l.i64, int64(int16(v.i32[j])))
	case modeInt64:
		l.i64 = append(l.i64, v.i64[j])
	case modeMillis:
		l.i64 = append(l.i64, timestampMicros(v.i64[j], unitMillis))
	case modeNanos:
		l.i64 = append(l.i64, timestampMicros(v.i64[j], unitNanos))
	case modeInt96:
		l.i64 = append(l.i64, int96Micros(v.i96[j]))
	case modeDayMicros:
		l.i64 = append(l.i64, int64(v.i32[j])*microsPerDay)
	case modeFloat:
		l.f32 = append(l.f32, v.f32[j])
	case modeDouble:
		l.f64 = append(l.f64, v.f64[j])
	case modeFloatDouble:
		l.f64 = append(l.f64, float64(v.f32[j]))
	case modeInt32Double:
		l.f64 = append(l.f64, float64(v.i32[j]))
	case modeInt64Double:
		l.f64 = append(l.f64, float64(v.i64[j]))
	case modeBool:
		l.bools = append(l.bools, v.bools[j])
	case modeBytes:
		l.bin = append(l.bin, v.bytesAt(j)...)
		l.off = append(l.off, uint32(len(l.bin)))
	}
}

// fill reads the triplets of the next want rows of the current row group and returns how many rows
// there were (fewer only at the end of a corrupt or truncated chunk).
func (l *columnLeaf) fill(want int) (int, error) {
	l.reset()
	c := l.c
	rows := 0
	if l.maxRep == 0 {
		for rows < want && c.ready() {
			k := min(want-rows, c.page.n-c.i)
			l.take(k)
			rows += k
		}
		return rows, c.err
	}
	for c.ready() {
		p := &c.page
		if l.n == 0 && p.reps[c.i] != 0 {
			return rows, fmt.Errorf("parquet column %q: a row starts with repetition level %d; the file is corrupt: %w", c.leaf.pathString(), p.reps[c.i], ErrCorruptFile)
		}
		// A row ends where the next one starts (repetition level 0), so the page's next triplet is
		// looked at even when want rows have begun.
		start, i, full := c.i, c.i, false
		for ; i < p.n; i++ {
			if p.reps[i] == 0 {
				if rows == want {
					full = true
					break
				}
				l.rowStart = append(l.rowStart, int32(l.n+i-start))
				rows++
			}
		}
		l.take(i - start)
		if full {
			break
		}
	}
	if c.err != nil {
		return rows, c.err
	}
	if l.maxRep > 0 {
		l.rowStart = append(l.rowStart, int32(l.n))
	}
	return rows, nil
}

// skipRows moves the cursor past the first n rows of its row group, which it just opened. Whole
// pages of a column that does not repeat are skipped by their headers, without decompressing;
// the rest is decoded and its triplets passed over.
func (l *columnLeaf) skipRows(n int) error {
	c := l.c
	for n > 0 {
		if c.i >= c.page.n {
			if c.done || c.cr == nil {
				return fmt.Errorf("parquet column %q has fewer values than its row group has rows; the file is corrupt: %w", c.leaf.pathString(), ErrCorruptFile)
			}
			maxSkip := 0
			if l.maxRep == 0 {
				maxSkip = n
			}
			skipped, err := c.cr.nextOrSkip(&c.page, maxSkip)
			if errors.Is(err, io.EOF) {
				c.done = true
				continue
			}
			if err != nil {
				return err
			}
			if skipped > 0 {
				n -= skipped
				continue
			}
			c.i, c.vi = 0, 0
		}
		p := &c.page
		if l.maxRep == 0 {
			k := min(n, p.n-c.i)
			present := k
			if p.defs != nil {
				present = countEqual(p.defs[c.i:c.i+k], byte(l.maxDef))
			}
			c.i += k
			c.vi += present
			n -= k
			continue
		}
		// A row of a repeated column ends where the next starts: stop at the (n+1)th row start.
		for c.i < p.n {
			if p.reps[c.i] == 0 {
				if n == 0 {
					return nil
				}
				n--
			}
			if p.defs == nil || p.defs[c.i] == byte(l.maxDef) {
				c.vi++
			}
			c.i++
		}
		if n == 0 {
			// the last skipped row may continue on the next page
			n = l.skipContinuation()
		}
	}
	return nil
}

// skipContinuation passes over the triplets that continue the current row on the following
// pages of a repeated column; it returns 0 once the next row starts (or the chunk ends).
func (l *columnLeaf) skipContinuation() int {
	c := l.c
	for c.ready() {
		p := &c.page
		for c.i < p.n {
			if p.reps[c.i] == 0 {
				return 0
			}
			if p.defs == nil || p.defs[c.i] == byte(l.maxDef) {
				c.vi++
			}
			c.i++
		}
	}
	return 0
}

// nextOrSkip reads the next data page into p, like next, except that a data page holding at
// most maxSkip triplets is passed over unread: it then returns how many it held.
func (c *chunkReader) nextOrSkip(p *rawPage, maxSkip int) (int, error) {
	for {
		if c.remaining <= 0 {
			return 0, io.EOF
		}
		var h format.PageHeader
		if err := c.dec.Decode(&h); err != nil {
			if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
				return 0, c.errorf("chunk ended with %d values still expected", c.remaining)
			}
			return 0, c.errorf("read page header: %v", err)
		}
		if h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 {
			return 0, c.errorf("negative page size in header")
		}
		var n int
		switch {
		case h.Type == format.DataPage && h.DataPageHeader.Valid:
			n = int(h.DataPageHeader.V.NumValues)
		case h.Type == format.DataPageV2 && h.DataPageHeaderV2.Valid:
			n = int(h.DataPageHeaderV2.V.NumValues)
		}
		if n > 0 && n <= maxSkip && int64(n) <= c.remaining {
			if _, err := c.r.Discard(int(h.CompressedPageSize)); err != nil {
				return 0, c.errorf("skip page of %d bytes: %v", h.CompressedPageSize, err)
			}
			c.remaining -= int64(n)
			return n, nil
		}
		c.comp = grow(c.comp, int(h.CompressedPageSize))
		if _, err := io.ReadFull(c.r, c.comp); err != nil {
			return 0, c.errorf("read page of %d bytes: %v", h.CompressedPageSize, err)
		}
		if h.CRC != 0 && int32(crc32.ChecksumIEEE(c.comp)) != h.CRC {
			return 0, c.errorf("page checksum mismatch")
		}
		switch h.Type {
		case format.DictionaryPage:
			if !h.DictionaryPageHeader.Valid {
				return 0, c.errorf("dictionary page without header")
			}
			if err := c.readDictionary(&h); err != nil {
				return 0, err
			}
		case format.DataPage:
			if !h.DataPageHeader.Valid {
				return 0, c.errorf("data page without header")
			}
			return 0, c.readV1(&h, p)
		case format.DataPageV2:
			if !h.DataPageHeaderV2.Valid {
				return 0, c.errorf("data page v2 without header")
			}
			return 0, c.readV2(&h, p)
		}
	}
}

// columnLeaves keeps the buffers of closed readers' columns (page, decompression, value and batch
// buffers, up to a few MiB per reader) for the next reader: a file read in parallel ranges (a
// checkpoint) opens a reader per range, and fresh buffers for each made a tenth of the load's garbage.
var columnLeaves sync.Pool

func getColumnLeaf(f *File, leaf *pqNode) *columnLeaf {
	l, _ := columnLeaves.Get().(*columnLeaf)
	if l == nil {
		return &columnLeaf{c: newCursor(f, leaf)}
	}
	c := l.c
	*c = cursor{f: f, leaf: leaf, rb: c.rb, page: c.page}
	c.page.n, c.page.dict = 0, nil
	if c.rb.r != nil && c.rb.r.Size() < cursorReadBuffer {
		c.rb.r = nil // sized for a small chunk of another column: let openChunk size it anew
	}
	return l
}

func putColumnLeaf(l *columnLeaf) {
	l.c.f, l.c.leaf, l.c.cr, l.c.err = nil, nil, nil, nil
	l.reset()
	columnLeaves.Put(l)
}
