package parquetio

import (
	"fmt"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

type readKind int

const (
	rkMissing readKind = iota // not in the file: always null
	rkPrimitive
	rkStruct
	rkList
	rkMap
	rkVariant
)

// readNode is one requested Delta value bound to the Parquet node that stores it. The level fields are
// the Dremel thresholds the assembler compares the peeked levels with.
type readNode struct {
	kind readKind
	// nullDef: the value is null when the definition level is below it (0: never null at this level).
	nullDef int
	// rep is the repetition level of the stored node; skipping the value consumes triplets while the
	// next repetition level is deeper than this.
	rep int
	// emptyDef and listRep are set for lists and maps: no entries when the definition level is below
	// emptyDef; another entry follows while the next repetition level equals listRep.
	emptyDef, listRep int
	cursor            int // primitive: its cursor
	first             int // cursor peeked for this value's levels; -1 when missing
	leaves            []int
	probe             int // struct whose requested fields are all absent: a cursor read only for nullness, or -1
	conv              leafConverter
	// children: struct fields in schema order; [element] for lists; [key, value] for maps (value may be
	// rkMissing for legacy key-only maps); [value, metadata] for variants.
	children []*readNode
}

// readPlan binds a requested schema to a file.
type readPlan struct {
	root    *readNode
	columns []*pqNode // cursor index → Parquet leaf
}

type planner struct {
	matchIDs bool
	columns  []*pqNode
	byLeaf   map[int]int
}

func planRead(f *File, schema *types.StructType, matchIDs bool) (*readPlan, error) {
	p := &planner{matchIDs: matchIDs, byLeaf: map[int]int{}}
	root, err := p.structNode(schema, f.root, 0, 0)
	if err != nil {
		return nil, err
	}
	return &readPlan{root: root, columns: p.columns}, nil
}

func (p *planner) cursorFor(leaf *pqNode) int {
	if c, ok := p.byLeaf[leaf.leaf]; ok {
		return c
	}
	c := len(p.columns)
	p.columns = append(p.columns, leaf)
	p.byLeaf[leaf.leaf] = c
	return c
}

var missingNode = &readNode{kind: rkMissing, first: -1, probe: -1}

// lookup finds the stored child for a requested field: by field id in id mode (absent id → by name).
func (p *planner) lookup(parent *pqNode, sf *types.StructField) *pqNode {
	if p.matchIDs {
		if id, ok := sf.FieldID(); ok {
			return parent.childByID(id)
		}
	}
	return parent.child(sf.Name)
}

// value binds a requested type to node n. asElement is set when n is a repeated node that is itself the
// list element (legacy two-level lists): its own repetition then says nothing about nullness.
func (p *planner) value(t types.DataType, n *pqNode, asElement bool) (*readNode, error) {
	nullDef := 0
	if n.rep == format.Optional {
		nullDef = n.maxDef
	}
	if n.rep == format.Repeated && !asElement {
		// A bare repeated field: a required list whose elements are the field's values.
		at, ok := t.(*types.ArrayType)
		if !ok {
			return nil, fmt.Errorf("parquet column %q is a repeated field and cannot be read as %s", n.pathString(), t)
		}
		elem, err := p.value(at.ElementType, n, true)
		if err != nil {
			return nil, err
		}
		return p.finish(&readNode{kind: rkList, nullDef: 0, rep: n.maxRep - 1, emptyDef: n.maxDef, listRep: n.maxRep, children: []*readNode{elem}}), nil
	}
	switch t := t.(type) {
	case *types.StructType:
		if n.isLeaf() {
			return nil, fmt.Errorf("parquet column %q is a primitive %s and cannot be read as %s", n.pathString(), n.lt, t)
		}
		if n.lt.ann == annList || n.isMapGroup() {
			return nil, fmt.Errorf("parquet column %q is a list or map and cannot be read as %s", n.pathString(), t)
		}
		node, err := p.structNode(t, n, nullDef, n.maxRep)
		return node, err
	case *types.ArrayType:
		if n.isLeaf() {
			return nil, fmt.Errorf("parquet column %q is a primitive %s and cannot be read as %s", n.pathString(), n.lt, t)
		}
		r, e, err := listLayout(n)
		if err != nil {
			return nil, err
		}
		elem, err := p.value(t.ElementType, e, e == r)
		if err != nil {
			return nil, err
		}
		return p.finish(&readNode{kind: rkList, nullDef: nullDef, rep: n.maxRep, emptyDef: r.maxDef, listRep: r.maxRep, children: []*readNode{elem}}), nil
	case *types.MapType:
		if !n.isMapGroup() {
			return nil, fmt.Errorf("parquet column %q is not a map and cannot be read as %s", n.pathString(), t)
		}
		r, k, v, err := mapLayout(n)
		if err != nil {
			return nil, err
		}
		key, err := p.value(t.KeyType, k, false)
		if err != nil {
			return nil, err
		}
		val := missingNode
		if v != nil {
			if val, err = p.value(t.ValueType, v, false); err != nil {
				return nil, err
			}
		}
		return p.finish(&readNode{kind: rkMap, nullDef: nullDef, rep: n.maxRep, emptyDef: r.maxDef, listRep: r.maxRep, children: []*readNode{key, val}}), nil
	case *types.PrimitiveType:
		if t.Name == types.TypeVariant {
			if !n.isVariantGroup(false) {
				return nil, fmt.Errorf("parquet column %q is not an unshredded variant group (value, metadata binaries) and cannot be read as variant", n.pathString())
			}
			bin := types.Primitive(types.TypeBinary)
			val, err := p.value(bin, n.child("value"), false)
			if err != nil {
				return nil, err
			}
			meta, err := p.value(bin, n.child("metadata"), false)
			if err != nil {
				return nil, err
			}
			return p.finish(&readNode{kind: rkVariant, nullDef: nullDef, rep: n.maxRep, children: []*readNode{val, meta}}), nil
		}
		if !n.isLeaf() {
			return nil, fmt.Errorf("parquet column %q is a group and cannot be read as %s", n.pathString(), t)
		}
		conv, err := converterFor(n, t)
		if err != nil {
			return nil, err
		}
		c := p.cursorFor(n)
		return &readNode{kind: rkPrimitive, nullDef: nullDef, rep: n.maxRep, cursor: c, first: c, leaves: []int{c}, probe: -1, conv: conv}, nil
	}
	return nil, fmt.Errorf("unsupported requested type %s for parquet column %q", t, n.pathString())
}

func (p *planner) structNode(t *types.StructType, n *pqNode, nullDef, rep int) (*readNode, error) {
	node := &readNode{kind: rkStruct, nullDef: nullDef, rep: rep, probe: -1}
	for _, sf := range t.Fields {
		c := p.lookup(n, sf)
		if c == nil {
			node.children = append(node.children, missingNode)
			continue
		}
		child, err := p.value(sf.Type, c, false)
		if err != nil {
			return nil, err
		}
		node.children = append(node.children, child)
	}
	p.finish(node)
	if len(node.leaves) == 0 && n.parent != nil {
		// None of the requested fields is stored, but the struct itself is: read one of its columns
		// just for its levels, so that a null struct still reads as null rather than as all-null fields.
		leaf := n.firstLeaf()
		if leaf == nil {
			return missingNode, nil
		}
		node.probe = p.cursorFor(leaf)
		node.leaves = []int{node.probe}
		node.first = node.probe
	}
	return node, nil
}

// finish collects the cursors below a composite node.
func (p *planner) finish(n *readNode) *readNode {
	n.first, n.probe = -1, -1
	for _, c := range n.children {
		n.leaves = append(n.leaves, c.leaves...)
	}
	if len(n.leaves) > 0 {
		n.first = n.leaves[0]
	}
	return n
}
