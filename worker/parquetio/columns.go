package parquetio

import (
	"errors"
)

// The columnar reader (File.Columns) decodes a batch of rows one leaf column at a time into flat
// vectors (Vector) instead of assembling a types.Struct per row, for callers that want strings,
// integers and booleans rather than logical values and read many rows of a few dozen small
// columns: there the row reader's per-value boxing, per-row structs and maps cost more than the
// decoding itself. worker/delta decodes every checkpoint with it.
//
// It understands structs, strings, binaries, booleans, integers (byte, short, integer, long, read
// as any wider integer too), floats, doubles (widened from float and integers as well), dates and
// timestamps (INT64 of any unit, INT96, dates widened to timestamp_ntz), and lists and maps of those
// that are not nested in another list or map, in every layout the row reader accepts (it shares
// its planner: legacy lists and maps, absent columns, widening). It reads row groups in any order,
// ranges of rows within one (pages before the range skipped by their headers), and skips the
// batches of sparse fields whose guard columns are null. Other shapes are refused up front with
// ErrColumnsUnsupported, before anything is read.

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

// Vector kinds. VecLong holds every integral type whatever its stored width (byte, short, integer,
// long: the value of the requested type, as the row reader narrows or widens it), dates (days since
// the epoch) and timestamps (microseconds since the epoch); the requested schema says which.
// VecString holds strings and binaries, VecDouble doubles (also widened from floats and integers).
const (
	VecMissing VectorKind = iota // not stored in the file: every element is null
	VecStruct
	VecList
	VecMap
	VecLong
	VecBool
	VecString
	VecFloat
	VecDouble
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

// IsNull reports whether element i is null (absent columns are null everywhere).
func (v *Vector) IsNull(i int) bool {
	if v.skipped {
		return true
	}
	switch v.kind {
	case VecMissing:
		return true
	case VecLong, VecBool, VecString, VecFloat, VecDouble:
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

// Float returns element i of a VecFloat vector (0 when null).
func (v *Vector) Float(i int) float32 {
	if v.kind != VecFloat || v.vidx[i] < 0 {
		return 0
	}
	return v.leaf.f32[v.vidx[i]]
}

// Double returns element i of a VecDouble vector (0 when null).
func (v *Vector) Double(i int) float64 {
	if v.kind != VecDouble || v.vidx[i] < 0 {
		return 0
	}
	return v.leaf.f64[v.vidx[i]]
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
