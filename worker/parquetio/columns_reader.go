package parquetio

import (
	"context"
	"fmt"
	"io"
	"slices"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// ColumnReader streams rows of a file as column batches.
type ColumnReader struct {
	ctx       context.Context
	f         *File
	plan      *readPlan
	leaves    []*columnLeaf
	batchSize int
	firstRow  int64
	numRows   int64
	groups    []int
	next      int   // index into groups of the next row group to open
	rg        int   // current row group, -1 before the first
	rgLeft    int64 // rows left in the current row group
	rgEnd     bool  // the range reaches the end of the current row group
	row       int64 // physical index of the next row
	batch     ColumnBatch
	vecs      []*Vector   // per top-level field
	nodes     []*readNode // per top-level field
	// per top-level field: its guard leaves (nil: not sparse), and whether this batch skips it
	guards    [][]*columnLeaf
	skipField []bool
	fieldOf   []int     // per leaf: its top-level field
	ctxBuf    [][]int32 // per list/map node: the triplets of its entries
	closed    bool
}

// Columns reads the columns of schema (field names as stored in the file) column by column. It accepts
// the schemas File.Rows accepts, as long as every primitive is a string, binary, boolean, integer,
// float, double, date or timestamp (not a decimal), and no list or map is nested in another list or map; other schemas fail with an error matching
// ErrColumnsUnsupported before anything is read. Values are the ones File.Rows returns for the same
// schema; like Rows, it checks that every column holds exactly its row group's rows.
func (f *File) Columns(ctx context.Context, schema *types.StructType, opts ColumnOptions) (*ColumnReader, error) {
	if schema == nil {
		return nil, fmt.Errorf("read parquet columns: nil schema")
	}
	plan, err := planRead(f, schema, false)
	if err != nil {
		return nil, fmt.Errorf("read parquet columns: %w", err)
	}
	if opts.FirstRow < 0 || opts.NumRows < 0 {
		return nil, fmt.Errorf("read parquet columns: negative row range %d+%d", opts.FirstRow, opts.NumRows)
	}
	r := &ColumnReader{ctx: ctx, f: f, plan: plan, batchSize: opts.BatchSize, firstRow: opts.FirstRow, numRows: opts.NumRows, rg: -1}
	if r.batchSize <= 0 {
		r.batchSize = DefaultBatchSize
	}
	if opts.RowGroups == nil {
		for i := range f.NumRowGroups() {
			r.groups = append(r.groups, i)
		}
	} else {
		for _, g := range opts.RowGroups {
			if g < 0 || g >= f.NumRowGroups() {
				return nil, fmt.Errorf("read parquet columns: row group %d out of range (the file has %d)", g, f.NumRowGroups())
			}
		}
		r.groups = append(r.groups, opts.RowGroups...)
	}
	modes := make([]leafMode, len(plan.columns)) // modeLevels unless a primitive reads the leaf
	for i, sf := range schema.Fields {
		if err := checkColumnar(plan.root.children[i], sf.Type, plan.columns, false, modes); err != nil {
			return nil, fmt.Errorf("read parquet columns: field %q: %w", sf.Name, err)
		}
	}
	for i, leaf := range plan.columns {
		l := getColumnLeaf(f, leaf)
		l.mode, l.maxDef, l.maxRep = modes[i], leaf.maxDef, leaf.maxRep
		r.leaves = append(r.leaves, l)
	}
	for _, n := range plan.root.children {
		r.nodes = append(r.nodes, n)
		r.vecs = append(r.vecs, r.newVector(n))
	}
	r.guards, r.skipField = make([][]*columnLeaf, len(r.nodes)), make([]bool, len(r.nodes))
	r.fieldOf = make([]int, len(r.leaves))
	for i, n := range r.nodes {
		for _, c := range n.leaves {
			r.fieldOf[c] = i
		}
	}
	for _, sp := range opts.Sparse {
		if sp.Field < 0 || sp.Field >= len(r.nodes) {
			r.Close()
			return nil, fmt.Errorf("read parquet columns: sparse field %d out of range", sp.Field)
		}
		var guards []*columnLeaf
		for _, path := range sp.Guards {
			for c, leaf := range plan.columns {
				if r.fieldOf[c] == sp.Field && leaf.maxRep == 0 && slices.Equal(leaf.path, path) && r.leaves[c].mode != modeLevels {
					guards = append(guards, r.leaves[c])
				}
			}
		}
		// A field none of whose guards is read is never skipped: nothing says its rows are empty.
		r.guards[sp.Field] = guards
	}
	r.batch.cols = r.vecs
	return r, nil
}

func (r *ColumnReader) newVector(n *readNode) *Vector {
	v := &Vector{}
	switch n.kind {
	case rkMissing:
		v.kind = VecMissing
	case rkStruct:
		v.kind = VecStruct
		for _, c := range n.children {
			v.children = append(v.children, r.newVector(c))
		}
	case rkList, rkMap:
		v.kind = VecList
		if n.kind == rkMap {
			v.kind = VecMap
		}
		for _, c := range n.children {
			v.children = append(v.children, r.newVector(c))
		}
	case rkPrimitive:
		v.leaf = r.leaves[n.cursor]
		v.kind = leafVectorKind(v.leaf.mode)
	}
	return v
}

// checkColumnar refuses what the columnar reader cannot decode and records how each primitive's leaf is
// copied. inList is set below a list or map, whose leaves must repeat exactly once.
func checkColumnar(n *readNode, t types.DataType, leaves []*pqNode, inList bool, modes []leafMode) error {
	// Below a list or map every leaf repeats once, so that one triplet index addresses the same
	// entry in all of them; elsewhere a primitive does not repeat at all.
	wantRep := 0
	if inList {
		wantRep = 1
	}
	repeats := func(c int) error {
		return fmt.Errorf("parquet column %q repeats %d times: %w", leaves[c].pathString(), leaves[c].maxRep, ErrColumnsUnsupported)
	}
	switch n.kind {
	case rkMissing:
		return nil
	case rkPrimitive:
		if leaves[n.cursor].maxRep != wantRep {
			return repeats(n.cursor)
		}
		pt, _ := t.(*types.PrimitiveType)
		mode, ok := leafModeFor(leaves[n.cursor], pt)
		if !ok {
			return fmt.Errorf("%s stored as %s: %w", t, leaves[n.cursor].lt, ErrColumnsUnsupported)
		}
		modes[n.cursor] = mode
		return nil
	case rkStruct:
		st, ok := t.(*types.StructType)
		if !ok || len(st.Fields) != len(n.children) {
			return fmt.Errorf("%s read as a struct: %w", t, ErrColumnsUnsupported)
		}
		if n.probe >= 0 && inList && leaves[n.probe].maxRep != 1 {
			return repeats(n.probe)
		}
		for i, c := range n.children {
			if err := checkColumnar(c, st.Fields[i].Type, leaves, inList, modes); err != nil {
				return err
			}
		}
		return nil
	case rkList, rkMap:
		if inList || n.rep != 0 || n.listRep != 1 {
			return fmt.Errorf("a list or map nested in another: %w", ErrColumnsUnsupported)
		}
		for _, c := range n.leaves {
			if leaves[c].maxRep != 1 {
				return repeats(c)
			}
		}
		var childTypes []types.DataType
		switch t := t.(type) {
		case *types.ArrayType:
			childTypes = []types.DataType{t.ElementType}
		case *types.MapType:
			childTypes = []types.DataType{t.KeyType, t.ValueType}
		}
		if len(childTypes) != len(n.children) {
			return fmt.Errorf("%s read as a list or map: %w", t, ErrColumnsUnsupported)
		}
		for i, c := range n.children {
			if err := checkColumnar(c, childTypes[i], leaves, true, modes); err != nil {
				return err
			}
		}
		return nil
	}
	return fmt.Errorf("%s: %w", t, ErrColumnsUnsupported)
}

// leafModeFor picks the copy for a primitive the planner already accepted (converterFor): the same
// conversions as the row reader's, for the types the columnar reader supports.
func leafModeFor(n *pqNode, want *types.PrimitiveType) (leafMode, bool) {
	if want == nil {
		return 0, false
	}
	t := n.lt
	// converterFor has accepted the stored type for want: only the physical type and the
	// annotations that change the value are looked at here.
	isInt32 := t.phys == format.Int32 && (t.ann == annNone || t.ann == annInt)
	isUint32 := isInt32 && t.ann == annInt && !t.signed && t.bitWidth == 32
	isInt64 := t.phys == format.Int64 && (t.ann == annNone || t.ann == annInt)
	timestamp := func() (leafMode, bool) {
		switch {
		case t.phys == format.Int96:
			return modeInt96, true
		case t.phys == format.Int64 && t.ann == annTimestamp:
			switch t.unit {
			case unitMillis:
				return modeMillis, true
			case unitNanos:
				return modeNanos, true
			}
			return modeInt64, true
		}
		return 0, false
	}
	switch want.Name {
	case types.TypeByte:
		return modeInt8, isInt32
	case types.TypeShort:
		return modeInt16, isInt32
	case types.TypeInteger:
		return modeInt32, isInt32 && !isUint32
	case types.TypeLong:
		switch {
		case isUint32:
			return modeUint32, true
		case isInt32:
			return modeInt32, true
		case isInt64:
			return modeInt64, true
		}
	case types.TypeFloat:
		return modeFloat, t.phys == format.Float
	case types.TypeDouble:
		switch {
		case t.phys == format.Double:
			return modeDouble, true
		case t.phys == format.Float:
			return modeFloatDouble, true
		case isInt32:
			return modeInt32Double, true
		case isInt64:
			return modeInt64Double, true
		}
	case types.TypeDate:
		return modeInt32, t.phys == format.Int32 && t.ann == annDate
	case types.TypeTimestamp:
		return timestamp()
	case types.TypeTimestampNTZ:
		if t.phys == format.Int32 && t.ann == annDate {
			return modeDayMicros, true
		}
		return timestamp()
	case types.TypeBoolean:
		return modeBool, t.phys == format.Boolean
	case types.TypeString, types.TypeBinary:
		return modeBytes, t.phys == format.ByteArray && t.ann != annDecimal
	}
	return 0, false
}

// advance opens the next row group that has rows in the range; false after the last.
func (r *ColumnReader) advance() bool {
	for r.next < len(r.groups) {
		r.rg = r.groups[r.next]
		r.next++
		info := r.f.RowGroup(r.rg)
		skip := min(r.firstRow, info.NumRows)
		r.row, r.rgLeft = info.FirstRow+skip, info.NumRows-skip
		r.rgEnd = true
		if r.numRows > 0 && r.numRows < r.rgLeft {
			r.rgLeft, r.rgEnd = r.numRows, false
		}
		if r.rgLeft == 0 {
			continue
		}
		for _, l := range r.leaves {
			l.c.open(r.rg)
			if l.c.err == nil && skip > 0 {
				l.c.err = l.skipRows(int(skip))
			}
		}
		return true
	}
	return false
}

// Next returns the next batch, or io.EOF after the last row. The batch and its vectors are reused by
// the next call.
func (r *ColumnReader) Next() (*ColumnBatch, error) {
	if r.closed {
		return nil, fmt.Errorf("read parquet columns: reader is closed")
	}
	if err := r.ctx.Err(); err != nil {
		return nil, err
	}
	if r.rgLeft == 0 {
		if err := r.endRowGroup(); err != nil {
			return nil, err
		}
		if !r.advance() {
			return nil, io.EOF
		}
	}
	want := int(min(int64(r.batchSize), r.rgLeft))
	fill := func(l *columnLeaf) error {
		got, err := l.fill(want)
		if err != nil {
			return fmt.Errorf("row group %d: %w", r.rg, err)
		}
		if got != want {
			return fmt.Errorf("read parquet columns: column %q has fewer values than row group %d has rows (%d); the file is corrupt: %w", l.c.leaf.pathString(), r.rg, r.f.RowGroup(r.rg).NumRows, ErrCorruptFile)
		}
		return nil
	}
	// Guards first: they decide which sparse fields this batch decodes.
	for i, guards := range r.guards {
		r.skipField[i] = len(guards) > 0
		for _, l := range guards {
			if err := fill(l); err != nil {
				return nil, err
			}
			if l.maxDef == 0 || countEqual(l.defs, byte(l.maxDef)) > 0 {
				r.skipField[i] = false
			}
		}
	}
	for c, l := range r.leaves {
		switch {
		case r.isGuard(c):
			// filled above
		case r.skipField[r.fieldOf[c]]:
			l.reset()
			if err := l.skipRows(want); err != nil {
				return nil, fmt.Errorf("row group %d: %w", r.rg, err)
			}
		default:
			if err := fill(l); err != nil {
				return nil, err
			}
		}
	}
	r.batch.n = want
	r.ctxBuf = r.ctxBuf[:0]
	for i, n := range r.nodes {
		r.vecs[i].skipped = r.skipField[i]
		if r.skipField[i] {
			r.vecs[i].n = want
			continue
		}
		r.build(r.vecs[i], n, nil, want)
	}
	r.row += int64(want)
	r.rgLeft -= int64(want)
	return &r.batch, nil
}

// isGuard reports whether leaf c is a guard (filled before the others).
func (r *ColumnReader) isGuard(c int) bool {
	for _, l := range r.guards[r.fieldOf[c]] {
		if l == r.leaves[c] {
			return true
		}
	}
	return false
}

// endRowGroup checks that every column ended with its row group (when the range reached its end).
func (r *ColumnReader) endRowGroup() error {
	if r.rg < 0 {
		return nil
	}
	for _, l := range r.leaves {
		if l.c.cr == nil {
			continue
		}
		if r.rgEnd && !l.c.exhausted() {
			return fmt.Errorf("read parquet columns: column %q has more values than row group %d has rows (%d); the file is corrupt: %w", l.c.leaf.pathString(), r.rg, r.f.RowGroup(r.rg).NumRows, ErrCorruptFile)
		}
		if l.c.err != nil {
			return l.c.err
		}
		l.c.close()
	}
	return nil
}

// build fills v for node n. elems is nil for one element per row (rows of them); otherwise it lists,
// per element, the triplet that holds it in every leaf below n (entries of one list or map).
func (r *ColumnReader) build(v *Vector, n *readNode, elems []int32, rows int) {
	count := rows
	if elems != nil {
		count = len(elems)
	}
	v.n = count
	// triplets lists the triplet of each element in leaf l; nil when element e is triplet e (one
	// row each, not repeated), the common case, which gets loops of its own.
	triplets := func(l *columnLeaf) []int32 {
		if elems == nil && l.maxRep > 0 {
			return l.rowStart[:rows]
		}
		return elems
	}
	switch n.kind {
	case rkMissing:
		return
	case rkPrimitive:
		l := v.leaf
		v.vidx = resize(v.vidx, count)
		ts := triplets(l)
		switch {
		case l.maxDef == 0 && ts == nil:
			for e := range v.vidx {
				v.vidx[e] = int32(e)
			}
		case l.maxDef == 0:
			copy(v.vidx, ts)
		case ts == nil:
			maxDef, vi := uint8(l.maxDef), int32(0)
			for e, d := range l.defs[:count] {
				if d == maxDef {
					v.vidx[e] = vi
					vi++
				} else {
					v.vidx[e] = -1
				}
			}
		default:
			// Elements are visited in triplet order: count the present values on the way.
			maxDef, vi, next := uint8(l.maxDef), int32(0), int32(0)
			for e, t := range ts {
				for ; next < t; next++ {
					if l.defs[next] == maxDef {
						vi++
					}
				}
				if l.defs[t] == maxDef {
					v.vidx[e] = vi
				} else {
					v.vidx[e] = -1
				}
			}
		}
	case rkStruct:
		first := r.leaves[n.first]
		v.nulls = resize(v.nulls, count)
		switch ts := triplets(first); {
		case first.maxDef == 0:
			clear(v.nulls) // n.nullDef is 0 too: a required struct of required fields
		case ts == nil:
			nullDef := uint8(n.nullDef)
			for e, d := range first.defs[:count] {
				v.nulls[e] = d < nullDef
			}
		default:
			for e, t := range ts {
				v.nulls[e] = first.def(t) < n.nullDef
			}
		}
		for i, c := range n.children {
			r.build(v.children[i], c, elems, rows)
		}
	case rkList, rkMap:
		// Only ever one element per row (checkColumnar): the row's triplets are its entries.
		first := r.leaves[n.first]
		v.nulls = resize(v.nulls, count)
		v.offs = resize(v.offs, count+1)
		idx := r.entryBuf()
		v.offs[0] = 0
		for e := range count {
			t0, t1 := first.rowStart[e], first.rowStart[e+1]
			d := first.def(t0)
			v.nulls[e] = d < n.nullDef
			if d >= n.emptyDef {
				for t := t0; t < t1; t++ {
					idx = append(idx, t)
				}
			}
			v.offs[e+1] = int32(len(idx))
		}
		r.ctxBuf[len(r.ctxBuf)-1] = idx
		for i, c := range n.children {
			r.build(v.children[i], c, idx, rows)
		}
	}
}

// entryBuf hands out a reusable slice for the entry triplets of one list or map node.
func (r *ColumnReader) entryBuf() []int32 {
	if len(r.ctxBuf) < cap(r.ctxBuf) {
		r.ctxBuf = r.ctxBuf[:len(r.ctxBuf)+1]
		return r.ctxBuf[len(r.ctxBuf)-1][:0]
	}
	r.ctxBuf = append(r.ctxBuf, nil)
	return nil
}

func resize[T any](s []T, n int) []T {
	if cap(s) < n {
		return make([]T, n, n+n/4)
	}
	return s[:n]
}

// Close releases the page buffers. It does not close the file's storage.ReaderAt.
func (r *ColumnReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	for _, l := range r.leaves {
		l.c.close()
		putColumnLeaf(l)
	}
	r.leaves = nil
	return nil
}

// ColumnAllNull reports whether the leaf column at path (stored names from the root) holds only nulls
// in row group rg according to the chunk's statistics: a caller that needs a non-null value of that
// column can skip the row group without reading it. False when the statistics do not say so, or when
// the column is repeated or absent.
func (f *File) ColumnAllNull(rg int, path ...string) bool {
	n := f.root
	for _, name := range path {
		if n = n.child(name); n == nil {
			return false
		}
	}
	if !n.isLeaf() || n.maxRep > 0 || rg < 0 || rg >= f.NumRowGroups() {
		return false
	}
	md := &f.metadata().RowGroups[rg].Columns[n.leaf].MetaData
	return md.NumValues > 0 && md.Statistics.NullCount == md.NumValues
}
