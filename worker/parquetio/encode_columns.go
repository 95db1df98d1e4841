package parquetio

import (
	"errors"
	"fmt"
	"sync"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// FlatColumn holds the values of one flat (primitive, top-level) column for a run of rows, in the form
// the column encoder takes them, so that readers that parse text (CSV, JSON) hand their values to
// the encoder without boxing each one in an interface. Slots are dense: row i is slot i whatever
// its nullness (a null row holds a zero value), so a subset of rows — one partition's — is a list
// of indexes. Which slice holds the values is fixed by the column's Delta type (FlatKindOf).
type FlatColumn struct {
	// Null marks null rows; empty means none is null.
	Null []bool
	I32  []int32   // byte, short, integer, date (days)
	I64  []int64   // long, timestamp, timestamp_ntz (microseconds)
	F32  []float32 // float
	F64  []float64 // double
	Bool []bool    // boolean
	// Bin and Off hold string and binary values back to back: row i is Bin[Off[i]:Off[i+1]]; Off
	// has one entry more than there are rows and starts at 0.
	Bin []byte
	Off []uint32
}

// FlatKind says which slice of a FlatColumn holds a column's values.
type FlatKind int

// FlatColumn kinds.
const (
	FlatI32 FlatKind = iota + 1
	FlatI64
	FlatF32
	FlatF64
	FlatBool
	FlatBytes
)

// FlatKindOf is the kind of FlatColumn that holds values of t, and false for types the columnar path
// does not take (decimals, whose physical form depends on the precision, and anything nested).
func FlatKindOf(t types.DataType) (FlatKind, bool) {
	p, ok := t.(*types.PrimitiveType)
	if !ok {
		return 0, false
	}
	switch p.Name {
	case types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeDate:
		return FlatI32, true
	case types.TypeLong, types.TypeTimestamp, types.TypeTimestampNTZ:
		return FlatI64, true
	case types.TypeFloat:
		return FlatF32, true
	case types.TypeDouble:
		return FlatF64, true
	case types.TypeBoolean:
		return FlatBool, true
	case types.TypeString, types.TypeBinary:
		return FlatBytes, true
	}
	return 0, false
}

// FlatSchema reports whether every top-level field of schema has a FlatKind: the schemas
// WriteColumns accepts.
func FlatSchema(schema *types.StructType) bool {
	for _, f := range schema.Fields {
		if _, ok := FlatKindOf(f.Type); !ok {
			return false
		}
	}
	return len(schema.Fields) > 0
}

// FlatBatch is a run of rows as one FlatColumn per top-level field of a flat schema, in schema order.
type FlatBatch struct {
	Rows int
	Cols []FlatColumn
}

// NewFlatBatch returns an empty batch for a flat schema, with room for capRows rows.
func NewFlatBatch(schema *types.StructType, capRows int) *FlatBatch {
	b := &FlatBatch{Cols: make([]FlatColumn, len(schema.Fields))}
	for i, f := range schema.Fields {
		v := &b.Cols[i]
		v.Null = make([]bool, 0, capRows)
		k, _ := FlatKindOf(f.Type)
		switch k {
		case FlatI32:
			v.I32 = make([]int32, 0, capRows)
		case FlatI64:
			v.I64 = make([]int64, 0, capRows)
		case FlatF32:
			v.F32 = make([]float32, 0, capRows)
		case FlatF64:
			v.F64 = make([]float64, 0, capRows)
		case FlatBool:
			v.Bool = make([]bool, 0, capRows)
		case FlatBytes:
			v.Off = make([]uint32, 1, capRows+1)
		}
	}
	return b
}

// AppendNull adds a null row to a column of kind k.
func (v *FlatColumn) AppendNull(k FlatKind) {
	v.Null = append(v.Null, true)
	switch k {
	case FlatI32:
		v.I32 = append(v.I32, 0)
	case FlatI64:
		v.I64 = append(v.I64, 0)
	case FlatF32:
		v.F32 = append(v.F32, 0)
	case FlatF64:
		v.F64 = append(v.F64, 0)
	case FlatBool:
		v.Bool = append(v.Bool, false)
	case FlatBytes:
		v.Off = append(v.Off, uint32(len(v.Bin)))
	}
}

// AppendBytes adds a string or binary value.
func (v *FlatColumn) AppendBytes(b []byte) {
	v.Null = append(v.Null, false)
	v.Bin = append(v.Bin, b...)
	v.Off = append(v.Off, uint32(len(v.Bin)))
}

// AppendValue adds a logical value (as the row path holds it: int32 for integers, types.Date,
// types.Timestamp, string…) to a column of type t; nil is null.
func (v *FlatColumn) AppendValue(t types.DataType, val types.Value) error {
	k, ok := FlatKindOf(t)
	if !ok {
		return fmt.Errorf("type %s has no column vector", t)
	}
	if val == nil {
		v.AppendNull(k)
		return nil
	}
	bad := fmt.Errorf("a value of Go type %T does not fit a %s column vector", val, t)
	switch k {
	case FlatI32:
		switch x := val.(type) {
		case types.Date:
			v.I32 = append(v.I32, int32(x))
		default:
			n, ok := types.AsInt64(val)
			if !ok || n < -1<<31 || n >= 1<<31 {
				return bad
			}
			v.I32 = append(v.I32, int32(n))
		}
	case FlatI64:
		switch x := val.(type) {
		case types.Timestamp:
			v.I64 = append(v.I64, int64(x))
		case types.TimestampNTZ:
			v.I64 = append(v.I64, int64(x))
		default:
			n, ok := types.AsInt64(val)
			if !ok {
				return bad
			}
			v.I64 = append(v.I64, n)
		}
	case FlatF32:
		x, ok := val.(float32)
		if !ok {
			return bad
		}
		v.F32 = append(v.F32, x)
	case FlatF64:
		x, ok := val.(float64)
		if !ok {
			return bad
		}
		v.F64 = append(v.F64, x)
	case FlatBool:
		x, ok := val.(bool)
		if !ok {
			return bad
		}
		v.Bool = append(v.Bool, x)
	case FlatBytes:
		switch x := val.(type) {
		case string:
			v.Bin = append(v.Bin, x...)
		case []byte:
			v.Bin = append(v.Bin, x...)
		default:
			return bad
		}
		v.Off = append(v.Off, uint32(len(v.Bin)))
	}
	v.Null = append(v.Null, false)
	return nil
}

// IsNull reports whether row i is null.
func (v *FlatColumn) IsNull(i int) bool { return len(v.Null) > 0 && v.Null[i] }

// Value is row i as a logical value of type t (nil when null): for the few values a caller must
// look at one by one, such as partition values.
func (v *FlatColumn) Value(t types.DataType, i int) types.Value {
	if v.IsNull(i) {
		return nil
	}
	p := t.(*types.PrimitiveType)
	switch p.Name {
	case types.TypeByte:
		return int8(v.I32[i])
	case types.TypeShort:
		return int16(v.I32[i])
	case types.TypeInteger:
		return v.I32[i]
	case types.TypeDate:
		return types.Date(v.I32[i])
	case types.TypeLong:
		return v.I64[i]
	case types.TypeTimestamp:
		return types.Timestamp(v.I64[i])
	case types.TypeTimestampNTZ:
		return types.TimestampNTZ(v.I64[i])
	case types.TypeFloat:
		return v.F32[i]
	case types.TypeDouble:
		return v.F64[i]
	case types.TypeBoolean:
		return v.Bool[i]
	case types.TypeString:
		return string(v.Bin[v.Off[i]:v.Off[i+1]])
	case types.TypeBinary:
		return append([]byte{}, v.Bin[v.Off[i]:v.Off[i+1]]...)
	}
	return nil
}

// WriteColumns appends rows of a batch whose columns are the file schema's top-level fields, in
// order: the rows listed in sel, or all of them when sel is nil. The values go into the column
// encoders directly, without the logical rows Write shreds. The schema must be flat (FlatSchema).
func (w *Writer) WriteColumns(b *FlatBatch, sel []int32) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("parquet writer: write after Close")
	}
	root := w.schema.root
	if len(b.Cols) != len(root.children) {
		return fmt.Errorf("parquet writer: the batch has %d columns but the schema has %d", len(b.Cols), len(root.children))
	}
	for _, c := range root.children {
		if c.kind != wkPrimitive {
			return fmt.Errorf("parquet writer: column %q is not flat: write it with Write", c.path)
		}
	}
	total := b.Rows
	if sel != nil {
		total = len(sel)
	}
	// Rows go to the encoders in rounds, the row group checked between two: shredBatch rows one
	// column after another, or with encodeWorkers on a large call parallelEncodeRound rows with the
	// columns encoded side by side (they are independent until their row group closes, which happens
	// between rounds, at the same row for every column).
	round, workers := shredBatch, 1
	if w.encodeWorkers > 1 && len(root.children) > 1 && total >= minParallelEncodeRows {
		round, workers = parallelEncodeRound, min(w.encodeWorkers, len(root.children))
	}
	errs := make([]error, len(root.children))
	for pos := 0; pos < total; {
		n := min(total-pos, round)
		if w.rowGroupRows > 0 {
			n = int(min(int64(n), w.rowGroupRows-w.rgRows))
		}
		if workers == 1 {
			for i := range root.children {
				if errs[i] = w.encodeRange(i, b, sel, pos, pos+n); errs[i] != nil {
					break
				}
			}
		} else {
			next := make(chan int, len(root.children))
			for i := range root.children {
				next <- i
			}
			close(next)
			var wg sync.WaitGroup
			for range workers {
				wg.Go(func() {
					for i := range next {
						errs[i] = w.encodeRange(i, b, sel, pos, pos+n)
					}
				})
			}
			wg.Wait()
		}
		if err := errors.Join(errs...); err != nil {
			w.err = fmt.Errorf("parquet writer: %w; the file is incomplete and must be discarded", err)
			return w.err
		}
		w.rgRows += int64(n)
		if err := w.closeFullRowGroup(); err != nil {
			w.err = err
			return err
		}
		pos += n
	}
	return nil
}

// minParallelEncodeRows is the smallest WriteColumns call whose columns are encoded on several
// goroutines; parallelEncodeRound is how many rows they encode between two row-group checks (a row
// group overshoots its size by at most that many rows).
const (
	minParallelEncodeRows = 4096
	parallelEncodeRound   = 16 << 10
)

// encodeRange stripes and encodes the rows [lo, hi) of WriteColumns' selection into column i's
// encoder, shredBatch rows at a time.
func (w *Writer) encodeRange(i int, b *FlatBatch, sel []int32, lo, hi int) error {
	c := w.schema.root.children[i]
	dst, e := &w.shred.batches[c.leaf], w.encs[c.leaf]
	for pos := lo; pos < hi; {
		n := min(hi-pos, shredBatch)
		var part []int32
		if sel != nil {
			part = sel[pos : pos+n]
		}
		if err := w.stripe(dst, c, &b.Cols[i], part, pos, pos+n); err != nil {
			return err
		}
		if err := e.write(dst); err != nil {
			return err
		}
		dst.reset()
		pos += n
	}
	return nil
}

// stripe appends rows of one vector to a leaf's batch: those in sel, else rows [lo, hi).
func (w *Writer) stripe(dst *columnBatch, n *writeNode, v *FlatColumn, sel []int32, lo, hi int) error {
	leaf := w.schema.leaves[n.leaf]
	count := hi - lo
	if sel != nil {
		count = len(sel)
	}
	row := func(k int) int {
		if sel != nil {
			return int(sel[k])
		}
		return lo + k
	}
	nulls := len(v.Null) > 0
	for k := range count {
		r := row(k)
		null := nulls && v.Null[r]
		if null && !n.optional {
			return fmt.Errorf("column %q is not nullable but the value is null", n.path)
		}
		if leaf.maxDef > 0 {
			d := byte(0)
			if !null {
				d = byte(n.def)
			}
			dst.defs = append(dst.defs, d)
		}
		dst.n++
		if null {
			continue
		}
		switch leaf.phys {
		case format.Int32:
			dst.i32 = append(dst.i32, v.I32[r])
		case format.Int64:
			dst.i64 = append(dst.i64, v.I64[r])
		case format.Float:
			dst.f32 = append(dst.f32, v.F32[r])
		case format.Double:
			dst.f64 = append(dst.f64, v.F64[r])
		case format.Boolean:
			dst.bools = append(dst.bools, v.Bool[r])
		case format.ByteArray:
			dst.appendBytes(v.Bin[v.Off[r]:v.Off[r+1]])
		default:
			return fmt.Errorf("column %q: physical type %s has no column vector", n.path, leaf.phys)
		}
	}
	return nil
}
