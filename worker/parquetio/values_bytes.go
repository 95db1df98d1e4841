package parquetio

import (
	"bytes"
	"encoding/binary"

	"github.com/parquet-go/parquet-go/format"
)

// bytesEncoder encodes BYTE_ARRAY (fixedLen 0) and FIXED_LEN_BYTE_ARRAY values.
type bytesEncoder struct {
	cfg      dictConfig
	order    orderKind
	fixedLen int

	dictOn    bool
	abandoned bool
	full      bool
	dict      map[string]int32
	dictData  []byte   // dictionary entries, PLAIN encoded as they will be written
	dictOff   []uint32 // entry i is at dictOff[i] in dictData (after its length prefix for BYTE_ARRAY)
	dictLen   []uint32
	epoch     uint64
	chunkVals int
	probed    bool
	dictPages int

	idx   []int32
	plain []byte // page values, PLAIN encoded
	count int    // values in plain

	mark []uint32
	gen  uint32
	used []int32

	pmin, pmax []byte
	has        bool
	scratch    []byte
}

func newBytesEncoder(cfg dictConfig, order orderKind, fixedLen int) *bytesEncoder {
	e := &bytesEncoder{cfg: cfg, order: order, fixedLen: fixedLen}
	e.resetChunk()
	return e
}

func (e *bytesEncoder) resetChunk() {
	e.dictOn = e.cfg.enabled && !e.abandoned
	e.full = false
	e.dict = make(map[string]int32)
	e.dictData, e.dictOff, e.dictLen, e.mark = e.dictData[:0], e.dictOff[:0], e.dictLen[:0], e.mark[:0]
	e.epoch = dictEpochs.Add(1)
	e.chunkVals, e.probed, e.dictPages = 0, false, 0
	e.idx, e.plain, e.count, e.used = e.idx[:0], e.plain[:0], 0, e.used[:0]
	e.has = false
}

func (e *bytesEncoder) entry(i int32) []byte {
	o := e.dictOff[i]
	return e.dictData[o : o+e.dictLen[i]]
}

func (e *bytesEncoder) insert(v []byte) int32 {
	if i, ok := e.dict[string(v)]; ok { // no allocation: the compiler does not copy for lookups
		return i
	}
	i := int32(len(e.dictOff))
	e.dict[string(v)] = i
	if e.fixedLen == 0 {
		e.dictData = binary.LittleEndian.AppendUint32(e.dictData, uint32(len(v)))
	}
	e.dictOff = append(e.dictOff, uint32(len(e.dictData)))
	e.dictLen = append(e.dictLen, uint32(len(v)))
	e.dictData = append(e.dictData, v...)
	e.mark = append(e.mark, 0)
	if len(e.dictData) > e.cfg.maxBytes {
		e.full = true
	}
	return i
}

func (e *bytesEncoder) markUsed(i int32) {
	if e.mark[i] != e.gen+1 {
		e.mark[i] = e.gen + 1
		e.used = append(e.used, i)
	}
}

func (e *bytesEncoder) appendPlain(v []byte) {
	if e.fixedLen == 0 {
		e.plain = binary.LittleEndian.AppendUint32(e.plain, uint32(len(v)))
	}
	e.plain = append(e.plain, v...)
	e.count++
	e.bound(v)
}

func (e *bytesEncoder) bound(v []byte) {
	if !e.has {
		e.pmin, e.pmax, e.has = append(e.pmin[:0], v...), append(e.pmax[:0], v...), true
		return
	}
	if compareBytes(e.order, v, e.pmin) < 0 {
		e.pmin = append(e.pmin[:0], v...)
	} else if compareBytes(e.order, v, e.pmax) > 0 {
		e.pmax = append(e.pmax[:0], v...)
	}
}

func (e *bytesEncoder) add(b *columnBatch, from, to int) {
	if to <= from {
		return
	}
	e.chunkVals += to - from
	switch {
	case b.src != nil:
		e.addCoded(b.idx[from:to], b.src)
	case e.dictOn:
		off := b.binOff
		for k := from; k < to; k++ {
			i := e.insert(b.bin[off[k]:off[k+1]])
			e.markUsed(i)
			e.idx = append(e.idx, i)
		}
	default:
		off := b.binOff
		if e.fixedLen > 0 {
			e.plain = append(e.plain, b.bin[off[from]:off[to]]...)
			for k := from; k < to; k++ {
				e.bound(b.bin[off[k]:off[k+1]])
			}
			e.count += to - from
			break
		}
		for k := from; k < to; k++ {
			e.appendPlain(b.bin[off[k]:off[k+1]])
		}
	}
	e.probe()
}

func (e *bytesEncoder) addCoded(idx []int32, src *sourceDict) {
	off := src.binOff
	if !e.dictOn {
		for _, i := range idx {
			e.appendPlain(src.bin[off[i]:off[i+1]])
		}
		return
	}
	trans := src.translation(e.epoch)
	for _, i := range idx {
		o := trans[i]
		if o < 0 {
			o = e.insert(src.bin[off[i]:off[i+1]])
			trans[i] = o
		}
		e.markUsed(o)
		e.idx = append(e.idx, o)
	}
}

func (e *bytesEncoder) probe() {
	if !e.dictOn || e.probed || e.dictPages > 0 || e.cfg.abandonNever || e.chunkVals < e.cfg.probeValues {
		return
	}
	e.probed = true
	if float64(len(e.dictOff)) <= e.cfg.maxDistinct*float64(e.chunkVals) {
		return
	}
	for _, i := range e.idx {
		e.appendPlain(e.entry(i))
	}
	e.idx, e.used = e.idx[:0], e.used[:0]
	e.dictOn, e.abandoned = false, true
	e.dict = make(map[string]int32)
	e.dictData, e.dictOff, e.dictLen, e.mark = e.dictData[:0], e.dictOff[:0], e.dictLen[:0], e.mark[:0]
}

func (e *bytesEncoder) pageBytes() int {
	if len(e.idx) > 0 {
		return len(e.idx)*bitLen(len(e.dictOff))/8 + 1
	}
	return len(e.plain)
}

func (e *bytesEncoder) dictFull() bool { return e.dictOn && e.full }

func (e *bytesEncoder) fallback() { e.dictOn, e.abandoned = false, true }

func (e *bytesEncoder) flush(dst []byte) ([]byte, format.Encoding, pageBounds) {
	if len(e.idx) > 0 {
		for _, i := range e.used {
			e.bound(e.entry(i))
		}
		e.gen++
		e.used = e.used[:0]
		pb := e.takeBounds()
		dst = appendDictIndexes(dst, e.idx, len(e.dictOff), &e.scratch)
		e.idx = e.idx[:0]
		e.dictPages++
		return dst, format.PlainDictionary, pb //nolint:staticcheck // PLAIN_DICTIONARY is deprecated for Parquet 2 pages only; v1 files use it
	}
	pb := e.takeBounds()
	dst = append(dst, e.plain...)
	e.plain, e.count = e.plain[:0], 0
	return dst, format.Plain, pb
}

func (e *bytesEncoder) takeBounds() pageBounds {
	var pb pageBounds
	if e.has && e.order != orderNone {
		pb = pageBounds{min: append([]byte(nil), e.pmin...), max: append([]byte(nil), e.pmax...), ok: true}
	}
	e.has = false
	return pb
}

func (e *bytesEncoder) dictionary(dst []byte) ([]byte, int) {
	if e.dictPages == 0 {
		return dst, 0
	}
	return append(dst, e.dictData...), len(e.dictOff)
}

// compareBytes orders byte-array statistics: unsigned lexicographic, or signed big-endian two's
// complement of equal length for decimals.
func compareBytes(order orderKind, a, b []byte) int {
	if order == orderDecimal && len(a) > 0 && len(b) > 0 {
		na, nb := a[0]&0x80 != 0, b[0]&0x80 != 0
		if na != nb {
			if na {
				return -1
			}
			return 1
		}
	}
	return bytes.Compare(a, b)
}

func bitLen(n int) int {
	w := 0
	for n > 0 {
		w++
		n >>= 1
	}
	return w
}
