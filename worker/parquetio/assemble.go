package parquetio

import (
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// assembler rebuilds nested values from the leaf cursors (Dremel record assembly). Every value below a
// null or empty node has exactly one triplet per leaf carrying that node's definition level, so a null
// or empty value is consumed by skipping one value in each of its leaves.
type assembler struct {
	cursors []*cursor
	arena   []types.Value
	entries []types.MapEntry
	scratch []types.Value
}

// arenaChunk is how many values one arena allocation holds: struct, array and map values of a batch
// are carved out of shared chunks instead of allocated one by one (a checkpoint row is mostly two
// structs; allocations, not decoding, dominated the reader's profile).
const arenaChunk = 4096

// values returns n zeroed values that no other value shares; the capacity is capped so appending to
// the result cannot overwrite a neighbour.
func (a *assembler) values(n int) []types.Value {
	if n == 0 {
		return []types.Value{}
	}
	if n > arenaChunk/8 {
		return make([]types.Value, n)
	}
	if len(a.arena) < n {
		a.arena = make([]types.Value, arenaChunk)
	}
	v := a.arena[:n:n]
	a.arena = a.arena[n:]
	return v
}

func (a *assembler) mapEntries(n int) []types.MapEntry {
	if n > arenaChunk/16 {
		return make([]types.MapEntry, n)
	}
	if len(a.entries) < n {
		a.entries = make([]types.MapEntry, arenaChunk/4)
	}
	v := a.entries[:n:n]
	a.entries = a.entries[n:]
	return v
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
		s := types.Struct(a.values(len(n.children)))
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
		// Elements are gathered on a stack of scratch space (nested lists push above their parent),
		// then copied into the arena at their final length.
		base := len(a.scratch)
		for {
			a.scratch = append(a.scratch, a.read(n.children[0]))
			if first.peekRep() != n.listRep || first.err != nil {
				break
			}
		}
		arr := types.Array(a.values(len(a.scratch) - base))
		copy(arr, a.scratch[base:])
		clear(a.scratch[base:])
		a.scratch = a.scratch[:base]
		return arr
	case rkMap:
		if def < n.emptyDef {
			a.skipValue(n)
			return types.Map{}
		}
		base := len(a.scratch)
		for {
			k := a.read(n.children[0])
			v := a.read(n.children[1])
			a.scratch = append(a.scratch, k, v)
			if first.peekRep() != n.listRep || first.err != nil {
				break
			}
		}
		m := types.Map(a.mapEntries((len(a.scratch) - base) / 2))
		for i := range m {
			m[i] = types.MapEntry{Key: a.scratch[base+2*i], Value: a.scratch[base+2*i+1]}
		}
		clear(a.scratch[base:])
		a.scratch = a.scratch[:base]
		return m
	}
	return nil
}

// readRow assembles one top-level row.
func (a *assembler) readRow(root *readNode) types.Struct {
	s := types.Struct(a.values(len(root.children)))
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
