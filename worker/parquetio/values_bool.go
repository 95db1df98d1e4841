package parquetio

import (
	"github.com/parquet-go/parquet-go/format"
)

// boolEncoder writes BOOLEAN values PLAIN (bit-packed, least significant bit first), as data page v1
// writers do; booleans never use a dictionary.
type boolEncoder struct {
	vals         []bool
	seenF, seenT bool
}

func (e *boolEncoder) add(b *columnBatch, from, to int) {
	for _, v := range b.bools[from:to] {
		e.vals = append(e.vals, v)
		if v {
			e.seenT = true
		} else {
			e.seenF = true
		}
	}
}

func (e *boolEncoder) pageBytes() int { return (len(e.vals) + 7) / 8 }

func (e *boolEncoder) flush(dst []byte) ([]byte, format.Encoding, pageBounds) {
	var pb pageBounds
	if e.seenF || e.seenT {
		pb.ok = true
		pb.min, pb.max = []byte{1}, []byte{0}
		if e.seenF {
			pb.min = []byte{0}
		}
		if e.seenT {
			pb.max = []byte{1}
		}
	}
	n := len(dst)
	dst = append(dst, make([]byte, (len(e.vals)+7)/8)...)
	for i, v := range e.vals {
		if v {
			dst[n+i/8] |= 1 << (i % 8)
		}
	}
	e.vals, e.seenF, e.seenT = e.vals[:0], false, false
	return dst, format.Plain, pb
}

func (e *boolEncoder) dictFull() bool                      { return false }
func (e *boolEncoder) fallback()                           {}
func (e *boolEncoder) dictionary(dst []byte) ([]byte, int) { return dst, 0 }
func (e *boolEncoder) resetChunk()                         { e.vals, e.seenF, e.seenT = e.vals[:0], false, false }
