package parquetio

import (
	"context"
	"errors"
	"fmt"
	"hash/crc32"
	"io"
	"slices"
	"sync"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// The columnar reader decodes a batch of rows one leaf column at a time into flat vectors instead of
// assembling a types.Struct per row. It exists for Delta checkpoints: a million-file checkpoint is a
// million rows of a few dozen small columns, where the row reader's per-value boxing, per-row structs
// and maps cost more than the decoding itself, and where the caller (worker/delta) wants strings and
// integers, not logical values. It understands the shapes checkpoints use — structs, strings, booleans,
// integers read as long, and lists and maps of those that are not nested in another list or map — in
// every layout the row reader accepts (it shares its planner: legacy lists and maps, absent columns,
// widening). Other shapes are refused up front with ErrColumnsUnsupported, so a caller can fall back to
// File.Rows before it has read anything.

// ErrColumnsUnsupported is matched by errors of File.Columns for schemas (or stored layouts) the
// columnar reader does not handle; File.Rows reads them.
var ErrColumnsUnsupported = errors.New("not supported by the columnar reader")

// ColumnOptions control Columns.
type ColumnOptions struct {
	// BatchSize is the largest number of rows per batch (DefaultBatchSize when 0). A batch never spans
	// two row groups.
	BatchSize int
	// RowGroups lists the row groups to read, in the order given; nil reads all of them in file order.
	RowGroups []int
	// FirstRow and NumRows narrow every row group read to its rows [FirstRow, FirstRow+NumRows)
	// (NumRows 0: to its end), so that parts of one row group can be decoded in parallel. Pages
	// before FirstRow are skipped by their headers where the column does not repeat; repeated
	// columns (maps, lists) decode them to count their rows.
	FirstRow, NumRows int64
	// Sparse lists top-level fields that hold a value in few rows, by a guard: leaf columns below
	// the field (stored names from the root, not repeated) of which at least one is non-null in
	// every row the caller cares about. In a batch where all guards of a field are null, its other
	// columns are skipped rather than decoded, and the field reads as null in every row.
	Sparse []SparseField
}

// SparseField is a top-level field (its index in the requested schema) and its guard columns.
type SparseField struct {
	Field  int
	Guards [][]string
}

// VectorKind is what a Vector holds.
type VectorKind uint8

// Vector kinds. Integer columns of any stored width are read as Long, as the row reader widens them.
const (
	VecMissing VectorKind = iota // not stored in the file: every element is null
	VecStruct
	VecList
	VecMap
	VecLong
	VecBool
	VecString
)

// Vector is one requested field decoded for a batch: one element per row for top-level fields and
// fields of structs below them, one element per entry for list elements and map keys and values. Its
// content is valid until the reader's next call to Next or Close.
type Vector struct {
	kind VectorKind
	n    int
	// skipped: a sparse field whose guards are all null in this batch; every element is null.
	skipped bool
	// nulls marks null elements of structs, lists and maps.
	nulls []bool
	// vidx is, for primitives, each element's index into the leaf's values, or -1 for null.
	vidx []int32
	leaf *columnLeaf
	// offs delimits the entries of list and map elements: element i's are [offs[i], offs[i+1]).
	offs []int32
	// children: the fields of a struct (VecMissing for fields absent from the file), [element] for a
	// list, [key, value] for a map.
	children []*Vector
}

// Kind is what the vector holds.
func (v *Vector) Kind() VectorKind { return v.kind }

// Len is the number of elements.
func (v *Vector) Len() int { return v.n }

// IsNull reports whether element i is null (absent columns are null everywhere).
func (v *Vector) IsNull(i int) bool {
	if v.skipped {
		return true
	}
	switch v.kind {
	case VecMissing:
		return true
	case VecLong, VecBool, VecString:
		return v.vidx[i] < 0
	}
	return v.nulls[i]
}

// Long returns element i of a VecLong vector (0 when null).
func (v *Vector) Long(i int) int64 {
	if v.kind != VecLong || v.vidx[i] < 0 {
		return 0
	}
	return v.leaf.i64[v.vidx[i]]
}

// Bool returns element i of a VecBool vector (false when null).
func (v *Vector) Bool(i int) bool {
	if v.kind != VecBool || v.vidx[i] < 0 {
		return false
	}
	return v.leaf.bools[v.vidx[i]]
}

// Bytes returns element i of a VecString vector (nil when null). The bytes belong to the reader: copy
// them to keep them past the next batch.
func (v *Vector) Bytes(i int) []byte {
	if v.kind != VecString || v.vidx[i] < 0 {
		return nil
	}
	j := v.vidx[i]
	return v.leaf.bin[v.leaf.off[j]:v.leaf.off[j+1]:v.leaf.off[j+1]]
}

// Field returns field j of a struct vector in the requested schema's order.
func (v *Vector) Field(j int) *Vector { return v.children[j] }

// Entries returns the range of element i's entries in Elem (lists) or Key and Value (maps); empty for
// null and empty elements.
func (v *Vector) Entries(i int) (start, end int) { return int(v.offs[i]), int(v.offs[i+1]) }

// Elem returns the element vector of a list.
func (v *Vector) Elem() *Vector { return v.children[0] }

// Key returns the key vector of a map.
func (v *Vector) Key() *Vector { return v.children[0] }

// Value returns the value vector of a map (VecMissing for legacy key-only maps).
func (v *Vector) Value() *Vector { return v.children[1] }

// ColumnBatch is a run of rows of one row group, one Vector per top-level field of the requested
// schema. It is reused by the next call to Next.
type ColumnBatch struct {
	n    int
	cols []*Vector
}

// Len is the number of rows.
func (b *ColumnBatch) Len() int { return b.n }

// Column returns the vector of top-level field i of the requested schema.
func (b *ColumnBatch) Column(i int) *Vector { return b.cols[i] }

// leafMode is how a leaf's values are copied out of its pages.
type leafMode uint8

const (
	modeLevels leafMode = iota // levels only: a probe for the nullness of a struct
	modeInt32                  // INT32 widened to long
	modeUint32                 // unsigned INT32 widened to long
	modeInt64                  // INT64
	modeBool                   // BOOLEAN
	modeBytes                  // BYTE_ARRAY
)

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
	bools    []bool
	bin      []byte
	off      []uint32 // value j is bin[off[j]:off[j+1]]
}

func (l *columnLeaf) reset() {
	l.n = 0
	l.defs, l.rowStart = l.defs[:0], l.rowStart[:0]
	l.i64, l.bools, l.bin = l.i64[:0], l.bools[:0], l.bin[:0]
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
	case modeUint32:
		for _, x := range v.i32[vi : vi+present] {
			l.i64 = append(l.i64, int64(uint32(x)))
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
	}
}

func (l *columnLeaf) appendValue(v *valueSlices, j int) {
	switch l.mode {
	case modeInt32:
		l.i64 = append(l.i64, int64(v.i32[j]))
	case modeUint32:
		l.i64 = append(l.i64, int64(uint32(v.i32[j])))
	case modeInt64:
		l.i64 = append(l.i64, v.i64[j])
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
			return rows, fmt.Errorf("parquet column %q: a row starts with repetition level %d; the file is corrupt", c.leaf.pathString(), p.reps[c.i])
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
				return fmt.Errorf("parquet column %q has fewer values than its row group has rows; the file is corrupt", c.leaf.pathString())
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
// the schemas File.Rows accepts, as long as every primitive is a string, a boolean or an integer read as
// long, and no list or map is nested in another list or map; other schemas fail with an error matching
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
		v.kind = [...]VectorKind{modeInt32: VecLong, modeUint32: VecLong, modeInt64: VecLong, modeBool: VecBool, modeBytes: VecString}[v.leaf.mode]
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
	switch want.Name {
	case types.TypeLong:
		switch {
		case t.phys == format.Int32 && t.ann == annInt && !t.signed && t.bitWidth == 32:
			return modeUint32, true
		case t.phys == format.Int32:
			return modeInt32, true
		case t.phys == format.Int64:
			return modeInt64, true
		}
	case types.TypeBoolean:
		return modeBool, t.phys == format.Boolean
	case types.TypeString:
		return modeBytes, t.phys == format.ByteArray
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
			return fmt.Errorf("read parquet columns: column %q has fewer values than row group %d has rows (%d); the file is corrupt", l.c.leaf.pathString(), r.rg, r.f.RowGroup(r.rg).NumRows)
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
			return fmt.Errorf("read parquet columns: column %q has more values than row group %d has rows (%d); the file is corrupt", l.c.leaf.pathString(), r.rg, r.f.RowGroup(r.rg).NumRows)
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

// columnLeaves keeps the buffers of closed readers' columns (page, decompression, value and batch
// buffers, up to a few MiB per reader) for the next reader: a checkpoint read in parallel ranges
// opens a reader per range, and fresh buffers for each made a tenth of the load's garbage.
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
