package parquetio

import (
	"errors"
	"fmt"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// RowTrackingColumns names the materialized row-tracking columns of a rewrite's output schema
// (Delta's delta.rowTracking.materializedRowIdColumnName and
// delta.rowTracking.materializedRowCommitVersionColumnName, physical names). Both must be top-level
// long fields of RewriteOptions.Schema.
type RowTrackingColumns struct {
	RowID, RowCommitVersion string
}

// RowTrackingBase is what a data file's add action says about its rows' identities: the row id of
// its first physical row and the commit version of rows without a materialized one. Nil when the
// add carries none; that is only an error for a row whose materialized value is null.
type RowTrackingBase struct {
	BaseRowID               *int64
	DefaultRowCommitVersion *int64
}

// RowID returns the stable row id of the row at physical index rowIndex (counting rows a deletion
// vector hides): the materialized value when the row has one, otherwise baseRowId + rowIndex
// (PROTOCOL.md §Row Tracking).
func (b RowTrackingBase) RowID(rowIndex int64, materialized types.Value) (int64, error) {
	if v, ok := types.AsInt64(materialized); ok {
		return v, nil
	}
	if b.BaseRowID == nil {
		return 0, errNoBaseRowID
	}
	return *b.BaseRowID + rowIndex, nil
}

// RowCommitVersion returns a row's commit version: the materialized value when set, otherwise the
// file's defaultRowCommitVersion.
func (b RowTrackingBase) RowCommitVersion(materialized types.Value) (int64, error) {
	if v, ok := types.AsInt64(materialized); ok {
		return v, nil
	}
	if b.DefaultRowCommitVersion == nil {
		return 0, errNoDefaultVersion
	}
	return *b.DefaultRowCommitVersion, nil
}

var (
	errNoBaseRowID      = errors.New("the file has no baseRowId, so its rows without a materialized row id have no stable id to preserve")
	errNoDefaultVersion = errors.New("the file has no defaultRowCommitVersion, so its rows without a materialized commit version have none to preserve")
)

// rowTrackingPlan locates the materialized row-tracking columns among the output's top-level fields
// (-1 when row tracking is not preserved) and holds each input's base values (nil when not
// preserved).
type rowTrackingPlan struct {
	id, version int
	base        []RowTrackingBase
}

// rtKind marks the output leaves that hold materialized row-tracking values.
type rtKind uint8

const (
	rtNone rtKind = iota
	rtRowID
	rtCommitVersion
)

// rowTrackingFields resolves the materialized columns to their positions among the schema's
// top-level fields.
func rowTrackingFields(schema *types.StructType, c *RowTrackingColumns) (id, version int, err error) {
	if c.RowID == "" || c.RowCommitVersion == "" || c.RowID == c.RowCommitVersion {
		return 0, 0, fmt.Errorf("row tracking needs two distinct materialized column names, got %q and %q", c.RowID, c.RowCommitVersion)
	}
	find := func(name string) (int, error) {
		i := slices.IndexFunc(schema.Fields, func(f *types.StructField) bool { return f.Name == name })
		if i < 0 {
			return 0, fmt.Errorf("materialized row-tracking column %q is not a top-level field of the output schema", name)
		}
		if p, ok := schema.Fields[i].Type.(*types.PrimitiveType); !ok || p.Name != types.TypeLong {
			return 0, fmt.Errorf("materialized row-tracking column %q is %s, not long", name, schema.Fields[i].Type)
		}
		return i, nil
	}
	if id, err = find(c.RowID); err != nil {
		return 0, 0, err
	}
	version, err = find(c.RowCommitVersion)
	return id, version, err
}

// preserve fills a logical row's materialized columns (positions id and version) from its physical
// index, as the logical path does.
func (b RowTrackingBase) preserve(row types.Struct, id, version int, rowIndex int64) error {
	rid, err := b.RowID(rowIndex, row[id])
	if err != nil {
		return fmt.Errorf("row %d: %w", rowIndex, err)
	}
	ver, err := b.RowCommitVersion(row[version])
	if err != nil {
		return fmt.Errorf("row %d: %w", rowIndex, err)
	}
	row[id], row[version] = rid, ver
	return nil
}

// rtFill is the column-copy side: it turns a batch of a materialized column (levels mapped, values in
// the output type, nulls possible) into one without nulls, computing the missing values from the
// rows' physical indexes. Rows of a top-level primitive are one triplet each, so the batch's
// triplets are the live records of [first, …) of the row group in order.
type rtFill struct {
	kind rtKind
	base []RowTrackingBase // per input
	vals []int64
	defs []byte
}

// value computes the value of a row without a materialized one; rowIndex is its index in the file.
func (f *rtFill) value(input int, rowIndex int64) (int64, error) {
	var v int64
	var err error
	if f.kind == rtRowID {
		v, err = f.base[input].RowID(rowIndex, nil)
	} else {
		v, err = f.base[input].RowCommitVersion(nil)
	}
	if err != nil {
		return 0, fmt.Errorf("row %d: %w", rowIndex, err)
	}
	return v, nil
}

// fill rewrites b in place. rgFirst is the row group's first physical row, first the row-group
// offset of b's first triplet (dead records included), deleted the slice's deleted offsets.
func (f *rtFill) fill(b *columnBatch, leaf *leafDesc, input int, rgFirst, first int64, deleted []int64) error {
	maxDef := byte(leaf.maxDef)
	vals := f.vals[:0]
	di := 0
	for di < len(deleted) && deleted[di] < first {
		di++
	}
	rec, v := first, 0
	for k := range b.n {
		for di < len(deleted) && deleted[di] == rec {
			di++
			rec++
		}
		if b.defs == nil || b.defs[k] == maxDef {
			if b.idx != nil {
				vals = append(vals, b.src.i64[b.idx[v]])
			} else {
				vals = append(vals, b.i64[v])
			}
			v++
		} else {
			x, err := f.value(input, rgFirst+rec)
			if err != nil {
				return err
			}
			vals = append(vals, x)
		}
		rec++
	}
	f.vals = vals
	f.setBatch(b, leaf, vals)
	return nil
}

// computed writes the values of rows [s.from, s.to) of a slice whose input does not store the column.
func (f *rtFill) computed(s rgSlice, rgFirst int64, leaf *leafDesc, write func(*columnBatch) error) error {
	var b columnBatch
	di := 0
	for r := s.from; r < s.to; {
		vals := f.vals[:0]
		for ; r < s.to && len(vals) < writeStep; r++ {
			if di < len(s.deleted) && s.deleted[di] == r {
				di++
				continue
			}
			x, err := f.value(s.input, rgFirst+r)
			if err != nil {
				return err
			}
			vals = append(vals, x)
		}
		f.vals = vals
		if len(vals) == 0 {
			continue
		}
		f.setBatch(&b, leaf, vals)
		if err := write(&b); err != nil {
			return err
		}
	}
	return nil
}

// setBatch makes b a batch of non-null int64 values.
func (f *rtFill) setBatch(b *columnBatch, leaf *leafDesc, vals []int64) {
	*b = columnBatch{n: len(vals)}
	b.i64 = vals
	if leaf.maxDef > 0 {
		for len(f.defs) < len(vals) {
			f.defs = append(f.defs, byte(leaf.maxDef))
		}
		b.defs = f.defs[:len(vals)]
	}
}
