package parquetio

import (
	"fmt"
	"math/big"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// shredder splits logical rows into per-leaf triplets (Dremel striping).
type shredder struct {
	schema  *outputSchema
	batches []columnBatch
	tmp     []byte
}

func newShredder(s *outputSchema) *shredder {
	sh := &shredder{schema: s, batches: make([]columnBatch, len(s.leaves))}
	for i := range sh.batches {
		sh.batches[i].reset()
	}
	return sh
}

func (s *shredder) row(row types.Struct) error {
	root := s.schema.root
	if len(row) != len(root.children) {
		return fmt.Errorf("row has %d values but the schema has %d columns", len(row), len(root.children))
	}
	for i, c := range root.children {
		if err := s.value(c, row[i], 0, 0); err != nil {
			return err
		}
	}
	return nil
}

// levels appends one level entry to leaf i.
func (s *shredder) levels(i, def, rep int) *columnBatch {
	b := &s.batches[i]
	leaf := s.schema.leaves[i]
	b.n++
	if leaf.maxDef > 0 {
		b.defs = append(b.defs, byte(def))
	}
	if leaf.maxRep > 0 {
		b.reps = append(b.reps, byte(rep))
	}
	return b
}

// absent records that value n is null or empty at definition level def.
func (s *shredder) absent(n *writeNode, def, rep int) {
	for _, l := range n.leaves {
		s.levels(l, def, rep)
	}
}

func (s *shredder) value(n *writeNode, v types.Value, def, rep int) error {
	if v == nil {
		if !n.optional {
			return fmt.Errorf("column %q is not nullable but the value is null", n.path)
		}
		s.absent(n, def, rep)
		return nil
	}
	d := n.def
	switch n.kind {
	case wkPrimitive:
		return s.primitive(n, v, d, rep)
	case wkStruct:
		st, ok := v.(types.Struct)
		if !ok || len(st) != len(n.children) {
			return fmt.Errorf("column %q: want a types.Struct of %d fields, got %T", n.path, len(n.children), v)
		}
		for i, c := range n.children {
			if err := s.value(c, st[i], d, rep); err != nil {
				return err
			}
		}
	case wkVariant:
		vv, ok := v.(types.VariantValue)
		if !ok {
			return fmt.Errorf("column %q: want a types.VariantValue, got %T", n.path, v)
		}
		for i, part := range [][]byte{vv.Value, vv.Metadata} {
			leaf := n.children[i].leaf
			s.levels(leaf, d, rep).appendBytes(part)
		}
	case wkList:
		arr, ok := v.(types.Array)
		if !ok {
			return fmt.Errorf("column %q: want a types.Array, got %T", n.path, v)
		}
		if len(arr) == 0 {
			s.absent(n, d, rep)
			return nil
		}
		for i, e := range arr {
			r := rep
			if i > 0 {
				r = n.listRep
			}
			if err := s.value(n.children[0], e, d+1, r); err != nil {
				return err
			}
		}
	case wkMap:
		m, ok := v.(types.Map)
		if !ok {
			return fmt.Errorf("column %q: want a types.Map, got %T", n.path, v)
		}
		if len(m) == 0 {
			s.absent(n, d, rep)
			return nil
		}
		for i, e := range m {
			r := rep
			if i > 0 {
				r = n.listRep
			}
			if err := s.value(n.children[0], e.Key, d+1, r); err != nil {
				return err
			}
			if err := s.value(n.children[1], e.Value, d+1, r); err != nil {
				return err
			}
		}
	}
	return nil
}

// asInt64 accepts any Go integer type that fits the column, so callers need not convert narrow values.

func (s *shredder) primitive(n *writeNode, v types.Value, def, rep int) error {
	leaf := s.schema.leaves[n.leaf]
	bad := func() error {
		return fmt.Errorf("column %q of type %s cannot hold a value of Go type %T", joinPath(leaf.path), n.prim, v)
	}
	rangeErr := func() error {
		return fmt.Errorf("column %q of type %s cannot hold %v: out of range", joinPath(leaf.path), n.prim, v)
	}
	var b *columnBatch
	switch n.prim.Name {
	case types.TypeString:
		x, ok := v.(string)
		if !ok {
			return bad()
		}
		b = s.levels(n.leaf, def, rep)
		b.bin = append(b.bin, x...)
		b.binOff = append(b.binOff, uint32(len(b.bin)))
	case types.TypeBinary:
		x, ok := v.([]byte)
		if !ok {
			return bad()
		}
		s.levels(n.leaf, def, rep).appendBytes(x)
	case types.TypeBoolean:
		x, ok := v.(bool)
		if !ok {
			return bad()
		}
		b = s.levels(n.leaf, def, rep)
		b.bools = append(b.bools, x)
	case types.TypeByte, types.TypeShort, types.TypeInteger:
		x, ok := types.AsInt64(v)
		if !ok {
			return bad()
		}
		lim := map[string]int64{types.TypeByte: 1 << 7, types.TypeShort: 1 << 15, types.TypeInteger: 1 << 31}[n.prim.Name]
		if x < -lim || x >= lim {
			return rangeErr()
		}
		b = s.levels(n.leaf, def, rep)
		b.i32 = append(b.i32, int32(x))
	case types.TypeLong:
		x, ok := types.AsInt64(v)
		if !ok {
			return bad()
		}
		b = s.levels(n.leaf, def, rep)
		b.i64 = append(b.i64, x)
	case types.TypeFloat:
		x, ok := v.(float32)
		if !ok {
			return bad()
		}
		b = s.levels(n.leaf, def, rep)
		b.f32 = append(b.f32, x)
	case types.TypeDouble:
		var x float64
		switch y := v.(type) {
		case float64:
			x = y
		case float32:
			x = float64(y)
		default:
			return bad()
		}
		b = s.levels(n.leaf, def, rep)
		b.f64 = append(b.f64, x)
	case types.TypeDate:
		x, ok := v.(types.Date)
		if !ok {
			return bad()
		}
		b = s.levels(n.leaf, def, rep)
		b.i32 = append(b.i32, int32(x))
	case types.TypeTimestamp:
		x, ok := v.(types.Timestamp)
		if !ok {
			return bad()
		}
		b = s.levels(n.leaf, def, rep)
		b.i64 = append(b.i64, int64(x))
	case types.TypeTimestampNTZ:
		x, ok := v.(types.TimestampNTZ)
		if !ok {
			return bad()
		}
		b = s.levels(n.leaf, def, rep)
		b.i64 = append(b.i64, int64(x))
	case types.TypeDecimal:
		x, ok := v.(types.DecimalValue)
		if !ok || x.Unscaled == nil {
			return bad()
		}
		u, err := rescaleDecimal(x, n.prim)
		if err != nil {
			return fmt.Errorf("column %q: %w", joinPath(leaf.path), err)
		}
		b = s.levels(n.leaf, def, rep)
		switch leaf.phys {
		case format.Int32:
			b.i32 = append(b.i32, int32(u.Int64()))
		case format.Int64:
			b.i64 = append(b.i64, u.Int64())
		default:
			s.tmp = appendBigEndian(s.tmp[:0], u, leaf.typeLen)
			b.appendBytes(s.tmp)
		}
	default:
		return bad()
	}
	return nil
}

// rescaleDecimal brings a decimal to the column's scale exactly and checks its precision.
func rescaleDecimal(x types.DecimalValue, t *types.PrimitiveType) (*big.Int, error) {
	u := x.Unscaled
	switch {
	case x.Scale < t.Scale:
		u = new(big.Int).Mul(u, pow10(t.Scale-x.Scale))
	case x.Scale > t.Scale:
		q, r := new(big.Int).QuoRem(u, pow10(x.Scale-t.Scale), new(big.Int))
		if r.Sign() != 0 {
			return nil, fmt.Errorf("decimal %s does not fit scale %d without rounding", x, t.Scale)
		}
		u = q
	}
	if new(big.Int).Abs(u).Cmp(pow10(t.Precision)) >= 0 {
		return nil, fmt.Errorf("decimal %s exceeds precision %d", x, t.Precision)
	}
	return u, nil
}

// appendBigEndian appends u as a size-byte big-endian two's-complement integer.
func appendBigEndian(dst []byte, u *big.Int, size int) []byte {
	start := len(dst)
	dst = append(dst, make([]byte, size)...)
	out := dst[start:]
	if u.Sign() >= 0 {
		u.FillBytes(out)
		return dst
	}
	// two's complement: 2^(8*size) + u
	t := new(big.Int).Lsh(big.NewInt(1), uint(8*size))
	t.Add(t, u)
	t.FillBytes(out)
	return dst
}
