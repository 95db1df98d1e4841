package parquetio

import (
	"sync/atomic"

	"github.com/parquet-go/parquet-go/deprecated"
	"github.com/parquet-go/parquet-go/format"
)

// valueSlices holds values of one physical type in their natural Go form. Byte arrays (and fixed-length
// ones) are stored back to back: value i is bin[binOff[i]:binOff[i+1]].
type valueSlices struct {
	i32    []int32
	i64    []int64
	i96    []deprecated.Int96
	f32    []float32
	f64    []float64
	bools  []bool
	bin    []byte
	binOff []uint32
}

func (v *valueSlices) bytesAt(i int) []byte { return v.bin[v.binOff[i]:v.binOff[i+1]] }

// columnBatch is a run of triplets of one leaf column in its physical representation: the unit the
// shredder (logical writes) and the rewrite engine (page copies) hand to a columnEncoder. Only non-null
// values are stored, in order; there are as many as definition levels equal to the leaf's maxDef.
type columnBatch struct {
	n    int    // number of triplets (level entries)
	defs []byte // len n; nil when the leaf's maxDef is 0
	reps []byte // len n; nil when the leaf's maxRep is 0
	valueSlices

	// Dictionary-coded values, when the source page was dictionary encoded: value i is src entry idx[i].
	// Used instead of the typed slices above; lets the encoder translate dictionaries entry by entry
	// instead of hashing every value.
	idx []int32
	src *sourceDict
}

// reset empties the batch, keeping its buffers.
func (b *columnBatch) reset() {
	b.n = 0
	b.defs, b.reps = b.defs[:0], b.reps[:0]
	b.i32, b.i64, b.f32, b.f64, b.bools = b.i32[:0], b.i64[:0], b.f32[:0], b.f64[:0], b.bools[:0]
	b.bin = b.bin[:0]
	b.binOff = append(b.binOff[:0], 0)
	b.idx, b.src = b.idx[:0], nil
}

// appendBytes adds one byte-array value.
func (b *columnBatch) appendBytes(v []byte) {
	if len(b.binOff) == 0 {
		b.binOff = append(b.binOff, 0)
	}
	b.bin = append(b.bin, v...)
	b.binOff = append(b.binOff, uint32(len(b.bin)))
}

// sourceDict is the dictionary of one input column chunk with a memo of where each entry went in the
// output dictionary. The memo is valid for one output dictionary (epoch): output dictionaries restart
// with every row group.
type sourceDict struct {
	phys format.Type
	valueSlices

	epoch uint64
	trans []int32 // source entry → output dictionary index, -1 when not yet inserted
	// gen identifies the content: readers reuse one sourceDict for the dictionaries of successive chunks.
	gen uint64
}

var dictGens atomic.Uint64

func (d *sourceDict) len() int {
	return d.valueSlices.len(d.phys)
}

// translation returns the memo for the given output dictionary epoch, cleared when the epoch changed.
func (d *sourceDict) translation(epoch uint64) []int32 {
	if d.epoch != epoch || len(d.trans) != d.len() {
		d.epoch = epoch
		d.trans = d.trans[:0]
		for range d.len() {
			d.trans = append(d.trans, -1)
		}
	}
	return d.trans
}

// len is the number of values of physical type phys.
func (v *valueSlices) len(phys format.Type) int {
	switch phys {
	case format.Boolean:
		return len(v.bools)
	case format.Int32:
		return len(v.i32)
	case format.Int64:
		return len(v.i64)
	case format.Int96:
		return len(v.i96)
	case format.Float:
		return len(v.f32)
	case format.Double:
		return len(v.f64)
	default:
		return max(len(v.binOff)-1, 0)
	}
}
