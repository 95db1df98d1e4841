package ingest

import (
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// evolve returns the schema the attempt must write: the table's, plus the new columns found by
// earlier attempts (addNewColumns), plus the rescued-data column in rescue mode.
func (r *runner) evolve(snap *delta.Snapshot, a *attempt) (*types.StructType, bool, error) {
	cur := snap.Schema()
	next := cloneStruct(cur)
	for _, c := range a.newCols {
		addColumn(next, c.Path, c.Field)
	}
	if r.o.Format.Evolution == format.Rescue && !slices.ContainsFunc(next.Fields, func(f *types.StructField) bool {
		return strings.EqualFold(f.Name, format.RescuedColumn)
	}) {
		next.Fields = append(next.Fields, &types.StructField{Name: format.RescuedColumn, Type: types.Primitive(types.TypeString), Nullable: true})
	}
	return next, len(addedColumns(cur, next)) > 0, nil
}

// cloneStruct copies the struct spine of a schema so fields can be appended without touching the
// snapshot's (field values are shared; they are never modified).
func cloneStruct(st *types.StructType) *types.StructType {
	out := &types.StructType{Fields: make([]*types.StructField, len(st.Fields))}
	for i, f := range st.Fields {
		c := *f
		if s, ok := f.Type.(*types.StructType); ok {
			c.Type = cloneStruct(s)
		}
		out.Fields[i] = &c
	}
	return out
}

// addColumn appends field at path (its last element is the field's name) unless present
// (case-insensitively); a nested path descends through struct columns only.
func addColumn(st *types.StructType, path []string, field *types.StructField) {
	for _, name := range path[:len(path)-1] {
		var next *types.StructType
		for _, f := range st.Fields {
			if s, ok := f.Type.(*types.StructType); ok && strings.EqualFold(f.Name, name) {
				next = s
			}
		}
		if next == nil {
			return
		}
		st = next
	}
	for _, f := range st.Fields {
		if strings.EqualFold(f.Name, field.Name) {
			return
		}
	}
	nf := *field
	nf.Nullable = true
	st.Fields = append(st.Fields, &nf)
}

// addedColumns lists the dotted paths of fields in next that cur lacks.
func addedColumns(cur, next *types.StructType) []string {
	var out []string
	var walk func(c, n *types.StructType, prefix string)
	walk = func(c, n *types.StructType, prefix string) {
		for _, f := range n.Fields {
			var old *types.StructField
			if c != nil {
				old = c.Field(f.Name)
			}
			if old == nil {
				out = append(out, prefix+f.Name)
				continue
			}
			if ns, ok := f.Type.(*types.StructType); ok {
				os, _ := old.Type.(*types.StructType)
				walk(os, ns, prefix+f.Name+".")
			}
		}
	}
	walk(cur, next, "")
	return out
}
