package parquetio

import (
	"encoding/binary"
	"math"
	"math/bits"
	"sync/atomic"
	"unsafe"

	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/format"
)

// valueEncoder buffers the non-null values of the current page of one column chunk and encodes them,
// as dictionary indexes while a dictionary pays off and PLAIN otherwise.
type valueEncoder interface {
	// add appends non-null values [from, to) of b to the page.
	add(b *columnBatch, from, to int)
	// pageBytes estimates the encoded size of the page's values.
	pageBytes() int
	// flush appends the page's encoded values to dst, returns the encoding and the page bounds, and
	// starts a new page.
	flush(dst []byte) ([]byte, format.Encoding, pageBounds)
	// dictFull reports that the dictionary outgrew its limit: the caller flushes the page and calls
	// fallback, after which values are written PLAIN for the rest of the chunk.
	dictFull() bool
	fallback()
	// dictionary appends the PLAIN-encoded dictionary to dst; n is 0 when no page used it.
	dictionary(dst []byte) (out []byte, n int)
	// resetChunk starts a new column chunk (row group).
	resetChunk()
}

// pageBounds are a page's min and max in PLAIN form (byte arrays without length prefix); ok is false
// when the page holds no orderable value. nan records NaNs, which Parquet statistics exclude but Delta
// statistics (NaN sorts last) must see.
type pageBounds struct {
	min, max []byte
	ok       bool
	nan      bool
}

// dictConfig bounds dictionary encoding.
type dictConfig struct {
	enabled  bool
	maxBytes int // dictionary size above which the chunk falls back to PLAIN
	// A chunk whose first probe values are mostly distinct abandons the dictionary (and the column stops
	// trying for the rest of the file): hashing unique ids or timestamps costs time and saves nothing.
	probeValues  int
	maxDistinct  float64
	abandonNever bool // tests: keep the dictionary whatever the cardinality
}

var dictEpochs atomic.Uint64

type fixed interface {
	int32 | int64 | float32 | float64
}

// fixedEncoder encodes INT32, INT64, FLOAT and DOUBLE values. K is the same-sized unsigned type used as
// the dictionary key, so that floats are keyed by bit pattern (NaN equal to itself, -0 distinct from 0).
type fixedEncoder[T fixed, K uint32 | uint64] struct {
	cfg   dictConfig
	order orderKind
	size  int

	dictOn    bool // this chunk is dictionary encoded so far
	abandoned bool // the column gave up dictionaries for the rest of the file
	full      bool
	dict      map[K]int32
	dictVals  []T
	epoch     uint64
	chunkVals int  // non-null values added in this chunk
	probed    bool // the cardinality probe has decided for this chunk
	dictPages int  // dictionary-encoded pages flushed in this chunk

	idx   []int32 // page: dictionary indexes
	plain []T     // page: PLAIN values
	// page bounds in dictionary mode: entries used by the page
	mark []uint32
	gen  uint32
	used []int32
	// page bounds in PLAIN mode
	pmin, pmax T
	has, nan   bool
	scratch    []byte
}

func newFixedEncoder[T fixed, K uint32 | uint64](cfg dictConfig, order orderKind) *fixedEncoder[T, K] {
	var zero T
	e := &fixedEncoder[T, K]{cfg: cfg, order: order, size: int(unsafe.Sizeof(zero))}
	e.resetChunk()
	return e
}

func key[T fixed, K uint32 | uint64](v T) K { return *(*K)(unsafe.Pointer(&v)) }

func isNaN[T fixed](v T) bool { return v != v } //nolint:gocritic // v != v is the NaN test; math.IsNaN takes only float64

func (e *fixedEncoder[T, K]) resetChunk() {
	e.dictOn = e.cfg.enabled && !e.abandoned
	e.full = false
	if e.dict == nil || len(e.dict) > 0 {
		e.dict = make(map[K]int32)
	}
	e.dictVals = e.dictVals[:0]
	e.mark = e.mark[:0]
	e.epoch = dictEpochs.Add(1)
	e.chunkVals, e.probed, e.dictPages = 0, false, 0
	e.idx, e.plain, e.used = e.idx[:0], e.plain[:0], e.used[:0]
	e.has, e.nan = false, false
}

func (e *fixedEncoder[T, K]) insert(v T) int32 {
	k := key[T, K](v)
	if i, ok := e.dict[k]; ok {
		return i
	}
	i := int32(len(e.dictVals))
	e.dict[k] = i
	e.dictVals = append(e.dictVals, v)
	e.mark = append(e.mark, 0)
	if len(e.dictVals)*e.size > e.cfg.maxBytes {
		e.full = true
	}
	return i
}

func (e *fixedEncoder[T, K]) markUsed(i int32) {
	if e.mark[i] != e.gen+1 {
		e.mark[i] = e.gen + 1
		e.used = append(e.used, i)
	}
}

// typedValues returns the slice of v holding T.
func typedValues[T fixed](v *valueSlices) []T {
	var zero T
	switch any(zero).(type) {
	case int32:
		return any(v.i32).([]T)
	case int64:
		return any(v.i64).([]T)
	case float32:
		return any(v.f32).([]T)
	default:
		return any(v.f64).([]T)
	}
}

func (e *fixedEncoder[T, K]) add(b *columnBatch, from, to int) {
	if to <= from {
		return
	}
	e.chunkVals += to - from
	if b.src != nil {
		e.addCoded(b.idx[from:to], b.src)
	} else if e.dictOn {
		for _, v := range typedValues[T](&b.valueSlices)[from:to] {
			i := e.insert(v)
			e.markUsed(i)
			e.idx = append(e.idx, i)
		}
	} else {
		vals := typedValues[T](&b.valueSlices)[from:to]
		e.plain = append(e.plain, vals...)
		e.bound(vals)
	}
	e.probe()
}

// addCoded adds dictionary-coded source values: each source entry is hashed once per output chunk.
func (e *fixedEncoder[T, K]) addCoded(idx []int32, src *sourceDict) {
	vals := typedValues[T](&src.valueSlices)
	if !e.dictOn {
		start := len(e.plain)
		for _, i := range idx {
			e.plain = append(e.plain, vals[i])
		}
		e.bound(e.plain[start:])
		return
	}
	trans := src.translation(e.epoch)
	for _, i := range idx {
		o := trans[i]
		if o < 0 {
			o = e.insert(vals[i])
			trans[i] = o
		}
		e.markUsed(o)
		e.idx = append(e.idx, o)
	}
}

// probe abandons the dictionary when the chunk's first values are mostly distinct. Only the first page
// can be converted (nothing dictionary-encoded has been flushed yet).
func (e *fixedEncoder[T, K]) probe() {
	if !e.dictOn || e.probed || e.dictPages > 0 || e.cfg.abandonNever || e.chunkVals < e.cfg.probeValues {
		return
	}
	e.probed = true
	if float64(len(e.dictVals)) <= e.cfg.maxDistinct*float64(e.chunkVals) {
		return
	}
	for _, i := range e.idx {
		e.plain = append(e.plain, e.dictVals[i])
	}
	e.bound(e.plain)
	e.idx = e.idx[:0]
	e.used = e.used[:0]
	e.dictOn, e.abandoned = false, true
	e.dict = make(map[K]int32)
	e.dictVals, e.mark = e.dictVals[:0], e.mark[:0]
}

func (e *fixedEncoder[T, K]) bound(vals []T) {
	if len(vals) == 0 {
		return
	}
	lo, hi, has := e.pmin, e.pmax, e.has
	for _, v := range vals {
		if isNaN(v) {
			e.nan = true
			continue
		}
		if !has {
			lo, hi, has = v, v, true
			continue
		}
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	e.pmin, e.pmax, e.has = lo, hi, has
}

func (e *fixedEncoder[T, K]) pageBytes() int {
	if len(e.idx) > 0 {
		// bit-packed indexes: about the dictionary's bit width per value
		return len(e.idx)*bits.Len(uint(len(e.dictVals)))/8 + 1
	}
	return len(e.plain) * e.size
}

func (e *fixedEncoder[T, K]) dictFull() bool { return e.dictOn && e.full }

func (e *fixedEncoder[T, K]) fallback() {
	e.dictOn, e.abandoned = false, true
}

func (e *fixedEncoder[T, K]) flush(dst []byte) ([]byte, format.Encoding, pageBounds) {
	var pb pageBounds
	if len(e.idx) > 0 {
		for _, i := range e.used {
			e.bound(e.dictVals[i : i+1])
		}
		e.gen++
		e.used = e.used[:0]
		dst, pb = e.appendBounds(dst, pb)
		dst = appendDictIndexes(dst, e.idx, len(e.dictVals), &e.scratch)
		e.idx = e.idx[:0]
		e.dictPages++
		return dst, format.PlainDictionary, pb //nolint:staticcheck // PLAIN_DICTIONARY is deprecated for Parquet 2 pages only; v1 files use it
	}
	dst, pb = e.appendBounds(dst, pb)
	dst = append(dst, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(e.plain))), len(e.plain)*e.size)...)
	e.plain = e.plain[:0]
	return dst, format.Plain, pb
}

// appendBounds encodes the page bounds and resets them for the next page.
func (e *fixedEncoder[T, K]) appendBounds(dst []byte, pb pageBounds) ([]byte, pageBounds) {
	pb.nan = e.nan
	if e.has {
		pb.ok = true
		pb.min = plainFixed(e.pmin)
		pb.max = plainFixed(e.pmax)
	}
	e.has, e.nan = false, false
	return dst, pb
}

func plainFixed[T fixed](v T) []byte {
	b := make([]byte, unsafe.Sizeof(v))
	switch x := any(v).(type) {
	case int32:
		binary.LittleEndian.PutUint32(b, uint32(x))
	case int64:
		binary.LittleEndian.PutUint64(b, uint64(x))
	case float32:
		binary.LittleEndian.PutUint32(b, math.Float32bits(x))
	case float64:
		binary.LittleEndian.PutUint64(b, math.Float64bits(x))
	}
	return b
}

func (e *fixedEncoder[T, K]) dictionary(dst []byte) ([]byte, int) {
	if e.dictPages == 0 {
		return dst, 0
	}
	dst = append(dst, unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(e.dictVals))), len(e.dictVals)*e.size)...)
	return dst, len(e.dictVals)
}

// appendDictIndexes encodes a dictionary-indexed page body: the bit width in one byte, then the
// RLE/bit-packed hybrid run of indexes.
func appendDictIndexes(dst []byte, idx []int32, dictLen int, scratch *[]byte) []byte {
	width := bits.Len(uint(dictLen - 1))
	if width == 0 {
		width = 1
	}
	dst = append(dst, byte(width))
	enc := rle.Encoding{BitWidth: width}
	out, err := enc.EncodeInt32((*scratch)[:0], idx)
	if err != nil {
		panic("parquetio: encode dictionary indexes: " + err.Error()) // widths are computed from the data
	}
	*scratch = out
	return append(dst, out...)
}
