package merge

import (
	"fmt"
	"math"
	"math/bits"

	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// prepared is the batch ready to match: which rows take part (after --order-by deduplication),
// which carry a true delete marker, and the source rows of each non-null key.
type prepared struct {
	src     *srcRows
	schema  *types.StructType
	keyIdx  []int
	live    []bool // false: dropped by deduplication
	deleted []bool // true delete marker
	// byKey indexes the live rows by keyOf, byLong instead when the key is one integer column (the
	// columnar fast path of matchFile probes it without building a string per target row): the first
	// live row of each non-null key, and next chains the others (-1 ends a chain).
	byKey  map[string]int32
	byLong map[int64]int32
	next   []int32
	// longBits has a bit per value of [longMin, longMin+longSpan) set for the keys of the batch,
	// when that range is small enough; then byLong is dropped for longFirst, the first row of each key
	// in key order, found by the key's rank (longRank: the set bits before each word). The columnar
	// match of a target row is then a bit test and, for a key of the batch, a popcount: no hashing.
	longBits  []uint64
	longRank  []uint32
	longFirst []int32
	longMin   int64
	longSpan  uint64
	// tupleIdx is 0..len(keyIdx)-1: the positions of the key columns in a key tuple.
	tupleIdx []int
	deduped  int64
}

// prepare resolves the key, delete-marker and order-by columns against the write schema (every one
// must exist in the table and in every source file) and indexes the batch by key.
func prepare(src *srcRows, schema *types.StructType, width int, o *Options, table string) (*prepared, error) {
	p := &prepared{src: src, schema: schema, live: make([]bool, src.len()), deleted: make([]bool, src.len())}
	for i := range p.live {
		p.live[i] = true
	}
	need := func(what, name string) (int, error) {
		if what == "delete-marker" {
			// A file without the marker deletes nothing (its rows read null).
			if i := columnIndex(schema, name); i >= 0 {
				return i, nil
			}
		}
		i := columnIndex(schema, name)
		if i < 0 {
			return -1, result.Refuse(result.ReasonBadArgument, fmt.Errorf("%s column %q is not a column of table %s (columns: %s)", what, name, table, columnNames(&types.StructType{Fields: schema.Fields[:width]})))
		}
		for f, present := range src.present {
			if !present[i] {
				return -1, result.Refuse(result.ReasonBadFile, fmt.Errorf("%s column %q is missing from source file %s: every source row needs it", what, name, src.files[f]))
			}
		}
		return i, nil
	}
	for _, k := range o.Keys {
		i, err := need("key", k)
		if err != nil {
			return nil, err
		}
		p.keyIdx = append(p.keyIdx, i)
	}
	if o.DeleteColumn != "" {
		i, err := need("delete-marker", o.DeleteColumn)
		if err != nil {
			return nil, err
		}
		if pt, ok := schema.Fields[i].Type.(*types.PrimitiveType); !ok || pt.Name != types.TypeBoolean {
			return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("delete-marker column %q is %s, not boolean", o.DeleteColumn, schema.Fields[i].Type))
		}
		for n := range p.deleted {
			p.deleted[n] = src.value(n, i) == true
		}
	}
	if o.OrderBy != "" {
		i, err := need("order-by", o.OrderBy)
		if err != nil {
			return nil, err
		}
		if err := p.dedup(i); err != nil {
			return nil, err
		}
	}
	p.tupleIdx = identity(len(p.keyIdx))
	if p.longKey() {
		if !p.indexLongsDense() {
			p.byLong, p.next = indexRows(p, p.longOf)
		}
	} else if len(p.keyIdx) > 0 {
		p.byKey, p.next = indexRows(p, p.stringOf)
	}
	return p, nil
}

// dedup keeps, per non-null key, the row with the greatest order-by value (nulls first; the later
// row wins a tie). Rows with a null key are all kept: they never match, so they never collide.
func (p *prepared) dedup(orderIdx int) error {
	if p.longKey() {
		return dedupBy(p, orderIdx, p.longOf)
	}
	return dedupBy(p, orderIdx, p.stringOf)
}

func dedupBy[K comparable](p *prepared, orderIdx int, key func(int) (K, bool)) error {
	best := map[K]int{}
	for n := range p.src.len() {
		k, ok := key(n)
		if !ok {
			continue
		}
		prev, seen := best[k]
		if !seen {
			best[k] = n
			continue
		}
		a, b := p.src.value(prev, orderIdx), p.src.value(n, orderIdx)
		later := true // b wins unless a orders after it
		switch {
		case b == nil && a != nil:
			later = false
		case a != nil && b != nil:
			c, err := types.Compare(a, b)
			if err != nil {
				return result.Refuse(result.ReasonBadArgument, fmt.Errorf("order-by column %s: %w", p.schema.Fields[orderIdx].Name, err))
			}
			later = c <= 0
		}
		if later {
			p.live[prev] = false
			best[k] = n
		} else {
			p.live[n] = false
		}
		p.deduped++
	}
	return nil
}

// indexRows maps each non-null key of the live rows to its first row and chains the rows after it.
func indexRows[K comparable](p *prepared, key func(int) (K, bool)) (map[K]int32, []int32) {
	first := make(map[K]int32, p.src.len())
	last := map[K]int32{} // only keys seen twice
	next := make([]int32, p.src.len())
	for n := range p.src.len() {
		next[n] = -1
		if !p.live[n] {
			continue
		}
		k, ok := key(n)
		if !ok {
			continue
		}
		f, seen := first[k]
		if !seen {
			first[k] = int32(n)
			continue
		}
		tail, ok := last[k]
		if !ok {
			tail = f
		}
		next[tail] = int32(n)
		last[k] = int32(n)
	}
	return first, next
}

// maxBitsPerKey and maxKeyBits bound the bit set of the integer keys' range: 64 bits per batch
// row or 8 MiB, whichever is larger.
const (
	maxBitsPerKey = 64
	maxKeyBits    = 1 << 26
)

// indexLongsDense indexes an integer key by the bit set over its range when the range is small
// enough (false otherwise): the bits, their ranks, and the first row of each key with the others
// chained after it, in three passes over the rows and without a map.
func (p *prepared) indexLongsDense() bool {
	lo, hi := int64(math.MaxInt64), int64(math.MinInt64)
	rows := 0
	for n := range p.src.len() {
		if v, ok := p.longOf(n); ok && p.live[n] {
			lo, hi = min(lo, v), max(hi, v)
			rows++
		}
	}
	if rows == 0 {
		return false
	}
	span := uint64(hi) - uint64(lo) + 1
	if span == 0 || span > max(maxKeyBits, maxBitsPerKey*uint64(rows)) {
		return false
	}
	p.longMin, p.longSpan = lo, span
	p.longBits = make([]uint64, (span+63)/64)
	for n := range p.src.len() {
		if v, ok := p.longOf(n); ok && p.live[n] {
			d := uint64(v) - uint64(lo)
			p.longBits[d>>6] |= 1 << (d & 63)
		}
	}
	p.longRank = make([]uint32, len(p.longBits))
	var distinct uint32
	for w, b := range p.longBits {
		p.longRank[w] = distinct
		distinct += uint32(bits.OnesCount64(b))
	}
	p.longFirst = make([]int32, distinct)
	tail := make([]int32, distinct)
	for i := range p.longFirst {
		p.longFirst[i] = -1
	}
	p.next = make([]int32, p.src.len())
	for n := range p.src.len() {
		p.next[n] = -1
		v, ok := p.longOf(n)
		if !ok || !p.live[n] {
			continue
		}
		k := p.rank(uint64(v) - uint64(lo))
		if p.longFirst[k] < 0 {
			p.longFirst[k] = int32(n)
		} else {
			p.next[tail[k]] = int32(n)
		}
		tail[k] = int32(n)
	}
	return true
}

func (p *prepared) rank(d uint64) uint32 {
	return p.longRank[d>>6] + uint32(bits.OnesCount64(p.longBits[d>>6]&(1<<(d&63)-1)))
}

// distinctLongs is the batch's distinct integer keys in order, read off the bits of the dense
// index (longBits must be set): no sort of the batch's keys.
func (p *prepared) distinctLongs() []int64 {
	out := make([]int64, 0, len(p.longFirst))
	for w, word := range p.longBits {
		for word != 0 {
			d := uint64(w)*64 + uint64(bits.TrailingZeros64(word))
			out = append(out, int64(uint64(p.longMin)+d))
			word &= word - 1
		}
	}
	return out
}

// findLong is the first live row with integer key v.
func (p *prepared) findLong(v int64) (int32, bool) {
	if p.longBits == nil {
		first, ok := p.byLong[v]
		return first, ok
	}
	d := uint64(v) - uint64(p.longMin)
	if d >= p.longSpan || p.longBits[d>>6]&(1<<(d&63)) == 0 {
		return 0, false
	}
	return p.longFirst[p.rank(d)], true
}

// longKey reports whether the key is one integer column (indexed by value in byLong).
func (p *prepared) longKey() bool {
	return len(p.keyIdx) == 1 && integral(p.schema.Fields[p.keyIdx[0]].Type)
}

// longOf is the integer key of row n (longKey: the key column is integral).
func (p *prepared) longOf(n int) (int64, bool) { return p.src.ordinal(n, p.keyIdx[0]) }

func (p *prepared) stringOf(n int) (string, bool) { return p.src.keyOf(n, p.keyIdx) }

// lookup finds the batch's live rows with the key tuple t (in key order): the first, and how many
// there are (0: none; more than 1 is the error of a target row matched twice).
func (p *prepared) lookup(t types.Struct) (int32, int) {
	var first int32
	var ok bool
	if p.longKey() {
		v, isInt := types.AsInt64(t[0])
		if !isInt {
			return 0, 0
		}
		first, ok = p.findLong(v)
	} else {
		k, notNull := keyOf(t, p.tupleIdx)
		if !notNull {
			return 0, 0
		}
		first, ok = p.byKey[k]
	}
	if !ok {
		return 0, 0
	}
	return first, p.chainLen(first)
}

func (p *prepared) chainLen(first int32) int {
	n := 1
	for s := p.next[first]; s >= 0; s = p.next[s] {
		n++
	}
	return n
}

func identity(n int) []int {
	idx := make([]int, n)
	for i := range idx {
		idx[i] = i
	}
	return idx
}

// integral reports whether a column holds byte, short, integer or long values (read as long by the
// columnar reader).
func integral(t types.DataType) bool {
	pt, ok := t.(*types.PrimitiveType)
	if !ok {
		return false
	}
	switch pt.Name {
	case types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong:
		return true
	}
	return false
}
