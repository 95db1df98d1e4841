package parquetio

import (
	"context"
	"encoding/binary"
	"fmt"
	"math"
	"math/big"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// SortKeys decodes the given top-level primitive columns of one file (stored names, as in Rewrite's
// schema) and returns, per column, one order-preserving key per live row: the clustering sort's keys,
// read at column speed without building values. A key's unsigned order follows types.Compare exactly for
// integers, dates and timestamps and monotonically (ties allowed) for floats, decimals (through float64)
// and strings and binaries (their first 8 bytes); null is 0, below every other key. KeyOf gives the same
// key for a logical value. ErrPermuteUnsupported means the file needs the logical reader.
func SortKeys(ctx context.Context, in RewriteInput, schema *types.StructType, matchFieldIDs bool) ([][]uint64, error) {
	out, err := buildOutputSchema(schema, false)
	if err != nil {
		return nil, fmt.Errorf("sort keys: %w", err)
	}
	if len(out.leaves) != len(schema.Fields) {
		return nil, fmt.Errorf("sort keys: only top-level primitive columns have keys")
	}
	outTree, _, err := buildSchemaTree(out.elements)
	if err != nil {
		return nil, fmt.Errorf("sort keys: %w", err)
	}
	f, err := Open(ctx, in.File)
	if err != nil {
		return nil, fmt.Errorf("sort keys: %w", err)
	}
	plan, err := planInput(f, schema, out, outTree, matchFieldIDs)
	if err != nil {
		return nil, fmt.Errorf("sort keys: %w", err)
	}
	if plan.general {
		return nil, fmt.Errorf("sort keys: %s: %w", plan.reason, ErrPermuteUnsupported)
	}
	keys := make([][]uint64, len(out.leaves))
	for j, leaf := range out.leaves {
		k := &keyCapture{leaf: leaf}
		l := &lane{leaf: leaf, files: []*File{f}, plans: []*inputPlan{plan}, rb: newReadBuffers(64 << 10), input: -1, sink: k.capture}
		src := &plan.sources[j]
		for s := range wholeRowGroups(0, f, in.Deleted) {
			if src.missing {
				k.keys = append(k.keys, make([]uint64, s.live)...)
				continue
			}
			if err := l.copySlice(ctx, s, src); err != nil {
				return nil, fmt.Errorf("sort keys: row group %d, column %s: %w", s.rg, joinPath(leaf.path), err)
			}
		}
		keys[j] = k.keys
	}
	return keys, nil
}

// keyCapture turns a column's batches into keys; dictionary entries are keyed once per dictionary.
type keyCapture struct {
	leaf    *leafDesc
	keys    []uint64
	dict    *sourceDict
	dictGen uint64
	dictKey []uint64
}

func (k *keyCapture) capture(b *columnBatch) error {
	maxDef := byte(k.leaf.maxDef)
	if b.idx != nil && (k.dict != b.src || k.dictGen != b.src.gen) {
		k.dict, k.dictGen = b.src, b.src.gen
		k.dictKey = k.dictKey[:0]
		for i := range b.src.len() {
			k.dictKey = append(k.dictKey, valueKey(k.leaf, &b.src.valueSlices, i))
		}
	}
	v := 0
	for t := range b.n {
		if b.defs != nil && b.defs[t] != maxDef {
			k.keys = append(k.keys, 0)
			continue
		}
		if b.idx != nil {
			k.keys = append(k.keys, k.dictKey[b.idx[v]])
		} else {
			k.keys = append(k.keys, valueKey(k.leaf, &b.valueSlices, v))
		}
		v++
	}
	return nil
}

// valueKey is the key of value i of a leaf's physical values.
func valueKey(leaf *leafDesc, v *valueSlices, i int) uint64 {
	const flip = 1 << 63
	p := leaf.logical
	decimal := p != nil && p.Name == types.TypeDecimal
	switch leaf.phys {
	case format.Boolean:
		if v.bools[i] {
			return 2
		}
		return 1
	case format.Int32:
		if decimal {
			return decimalKey(big.NewInt(int64(v.i32[i])), p.Scale)
		}
		return uint64(int64(v.i32[i])) ^ flip
	case format.Int64:
		if decimal {
			return decimalKey(big.NewInt(v.i64[i]), p.Scale)
		}
		return uint64(v.i64[i]) ^ flip
	case format.Float:
		return FloatKey(float64(v.f32[i]))
	case format.Double:
		return FloatKey(v.f64[i])
	case format.FixedLenByteArray:
		b := v.bytesAt(i)
		u := new(big.Int).SetBytes(b)
		if len(b) > 0 && b[0]&0x80 != 0 { // two's complement
			u.Sub(u, new(big.Int).Lsh(big.NewInt(1), uint(8*len(b))))
		}
		return decimalKey(u, p.Scale)
	default:
		return BytesKey(v.bytesAt(i))
	}
}

func decimalKey(unscaled *big.Int, scale int) uint64 {
	f, _ := new(big.Rat).SetFrac(unscaled, new(big.Int).Exp(big.NewInt(10), big.NewInt(int64(scale)), nil)).Float64()
	return FloatKey(f)
}

// FloatKey orders floats as Spark does: -Inf < … < -0 = +0 < … < +Inf < NaN.
func FloatKey(f float64) uint64 {
	if math.IsNaN(f) {
		return math.MaxUint64
	}
	if f == 0 {
		f = 0 // -0 and +0 are equal
	}
	b := math.Float64bits(f)
	if b&(1<<63) != 0 {
		return ^b
	}
	return b | 1<<63
}

// BytesKey keys a string or binary by its first 8 bytes; every key is at least 1, above null.
func BytesKey(b []byte) uint64 {
	var buf [8]byte
	copy(buf[:], b)
	return binary.BigEndian.Uint64(buf[:])>>1 + 1
}

// KeyOf is the key SortKeys gives a logical value of a primitive column.
func KeyOf(v types.Value) uint64 {
	const flip = 1 << 63
	switch x := v.(type) {
	case nil:
		return 0
	case bool:
		if x {
			return 2
		}
		return 1
	case int8:
		return uint64(int64(x)) ^ flip
	case int16:
		return uint64(int64(x)) ^ flip
	case int32:
		return uint64(int64(x)) ^ flip
	case int64:
		return uint64(x) ^ flip
	case types.Date:
		return uint64(int64(x)) ^ flip
	case types.Timestamp:
		return uint64(int64(x)) ^ flip
	case types.TimestampNTZ:
		return uint64(int64(x)) ^ flip
	case float32:
		return FloatKey(float64(x))
	case float64:
		return FloatKey(x)
	case types.DecimalValue:
		return decimalKey(x.Unscaled, x.Scale)
	case string:
		return BytesKey([]byte(x))
	case []byte:
		return BytesKey(x)
	}
	return 0
}
