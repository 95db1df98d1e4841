package parquetio

import (
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// CopyFits reports whether Rewrite can take file f into the output schema by copying its columns
// page by page, with exactly the rows and values a logical read of f into schema would give: f has
// rows, stores every column of schema under the same name at every nesting level and nothing
// else, in the output's layout (only the conversions Rewrite makes on the copy path: integer
// widening, timestamp units), and stores no column as nullable where schema says NOT NULL. Ingest
// uses it to write Parquet sources without decoding them; a file that does not fit is read as rows.
func CopyFits(f *File, schema *types.StructType) bool {
	if f.NumRows() <= 0 {
		return false
	}
	stored, err := f.Schema()
	if err != nil || !sameFieldShape(schema, stored) {
		return false
	}
	out, err := buildOutputSchema(schema, false)
	if err != nil {
		return false
	}
	outTree, _, err := buildSchemaTree(out.elements)
	if err != nil {
		return false
	}
	plan, err := planInput(f, schema, out, outTree, false)
	if err != nil || plan.general {
		return false
	}
	for _, s := range plan.sources {
		if s.missing {
			return false
		}
	}
	return requiredStored(outTree, f.root, schema)
}

// sameFieldShape reports whether two types have the same struct field names (exactly, in any order) at
// every level and the same nesting of arrays and maps.
func sameFieldShape(want, got types.DataType) bool {
	switch w := want.(type) {
	case *types.StructType:
		g, ok := got.(*types.StructType)
		if !ok || len(g.Fields) != len(w.Fields) {
			return false
		}
		for _, wf := range w.Fields {
			i := g.FieldIndex(wf.Name)
			if i < 0 || g.Fields[i].Name != wf.Name || !sameFieldShape(wf.Type, g.Fields[i].Type) {
				return false
			}
		}
		return true
	case *types.ArrayType:
		g, ok := got.(*types.ArrayType)
		return ok && sameFieldShape(w.ElementType, g.ElementType)
	case *types.MapType:
		g, ok := got.(*types.MapType)
		return ok && sameFieldShape(w.KeyType, g.KeyType) && sameFieldShape(w.ValueType, g.ValueType)
	}
	_, ok := got.(*types.PrimitiveType)
	return ok
}

// nullableBelow reports whether everything nested in t may be null: the copy path checks NOT NULL
// only for top-level columns.
func nullableBelow(t types.DataType) bool {
	switch t := t.(type) {
	case *types.StructType:
		for _, f := range t.Fields {
			if !f.Nullable || !nullableBelow(f.Type) {
				return false
			}
		}
	case *types.ArrayType:
		return t.ContainsNull && nullableBelow(t.ElementType)
	case *types.MapType:
		return t.ValueContainsNull && nullableBelow(t.ValueType)
	}
	return true
}

// requiredStored checks that every top-level column the output requires (NOT NULL) is required in
// the file too, so that the copy cannot carry a null into it.
func requiredStored(outTree, fileRoot *pqNode, schema *types.StructType) bool {
	for i, sf := range schema.Fields {
		if !nullableBelow(sf.Type) {
			return false
		}
		o := outTree.children[i]
		if o.rep != format.Required {
			continue
		}
		in := (&planner{}).lookup(fileRoot, sf)
		if in == nil || in.rep != format.Required {
			return false
		}
	}
	return true
}
