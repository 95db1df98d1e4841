package parquetio

import (
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// assembler rebuilds nested values from the leaf cursors (Dremel record assembly). Every value below a
// null or empty node has exactly one triplet per leaf carrying that node's definition level, so a null
// or empty value is consumed by skipping one value in each of its leaves.
type assembler struct {
	cursors []*cursor
}

// skipValue consumes value n in all of its leaves.
func (a *assembler) skipValue(n *readNode) {
	for _, c := range n.leaves {
		a.cursors[c].skip(n.rep)
	}
}

// read assembles value n.
func (a *assembler) read(n *readNode) types.Value {
	if n.kind == rkMissing {
		return nil
	}
	first := a.cursors[n.first]
	def := first.peekDef()
	if def < n.nullDef {
		a.skipValue(n)
		return nil
	}
	switch n.kind {
	case rkPrimitive:
		vals, i, present, _ := first.next()
		if !present {
			return nil
		}
		return n.conv(vals, i)
	case rkStruct:
		s := make(types.Struct, len(n.children))
		for i, c := range n.children {
			s[i] = a.read(c)
		}
		if n.probe >= 0 {
			a.cursors[n.probe].skip(n.rep)
		}
		return s
	case rkVariant:
		val, _ := a.read(n.children[0]).([]byte)
		meta, _ := a.read(n.children[1]).([]byte)
		return types.VariantValue{Value: val, Metadata: meta}
	case rkList:
		if def < n.emptyDef {
			a.skipValue(n)
			return types.Array{}
		}
		arr := types.Array{}
		for {
			arr = append(arr, a.read(n.children[0]))
			if first.peekRep() != n.listRep || first.err != nil {
				return arr
			}
		}
	case rkMap:
		if def < n.emptyDef {
			a.skipValue(n)
			return types.Map{}
		}
		m := types.Map{}
		for {
			k := a.read(n.children[0])
			v := a.read(n.children[1])
			m = append(m, types.MapEntry{Key: k, Value: v})
			if first.peekRep() != n.listRep || first.err != nil {
				return m
			}
		}
	}
	return nil
}

// readRow assembles one top-level row.
func (a *assembler) readRow(root *readNode) types.Struct {
	s := make(types.Struct, len(root.children))
	for i, c := range root.children {
		s[i] = a.read(c)
	}
	return s
}

// skipRow consumes one top-level row in every cursor.
func (a *assembler) skipRow() {
	for _, c := range a.cursors {
		c.skip(0)
	}
}
