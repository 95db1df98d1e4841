package parquetio

import (
	"fmt"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// convKind is a value conversion the column-copy path applies in bulk, without logical values.
type convKind int

const (
	convIdentity convKind = iota
	convInt32ToInt64
	convInt96ToMicros
	convMillisToMicros
	convNanosToMicros
	convDateToMicros
	convInt32ToDouble
	convInt64ToDouble
	convFloatToDouble
)

// leafSource says where an output leaf's triplets come from in one input file.
type leafSource struct {
	missing bool    // the column is not stored: one null triplet (level 0) per row
	in      *pqNode // stored leaf
	conv    convKind
	// defMap maps stored definition levels to output ones (nil: identical). noNull marks a stored level
	// whose value the output cannot represent: a null where the output schema is not nullable.
	defMap []byte
}

const noNull = 0xFF

// inputPlan is how one input file feeds the output columns.
type inputPlan struct {
	// general is set when some column's layout differs from the output's (legacy lists, a missing
	// field inside a stored struct, decimal rescaling…): such files go through the logical reader.
	general bool
	reason  string
	sources []leafSource
}

// matcher pairs the output schema's leaves with a file's stored leaves.
type matcher struct {
	matchIDs bool
	out      *pqNode // output schema tree (built from the output elements)
	plan     *inputPlan
}

func planInput(f *File, schema *types.StructType, out *outputSchema, outTree *pqNode, matchIDs bool) (*inputPlan, error) {
	// The logical planner validates compatibility (and produces the errors) for both paths.
	if _, err := planRead(f, schema, matchIDs); err != nil {
		return nil, err
	}
	m := &matcher{matchIDs: matchIDs, out: outTree, plan: &inputPlan{sources: make([]leafSource, len(out.leaves))}}
	for i, sf := range schema.Fields {
		o := outTree.children[i]
		in := (&planner{matchIDs: matchIDs}).lookup(f.root, sf)
		if in == nil {
			if o.rep == format.Required {
				return nil, fmt.Errorf("column %q is not nullable but the file does not store it", sf.Name)
			}
			m.missing(o)
			continue
		}
		m.match(sf.Type, o, in)
		if m.plan.general {
			break
		}
	}
	return m.plan, nil
}

func (m *matcher) general(why string, args ...any) {
	if !m.plan.general {
		m.plan.general, m.plan.reason = true, fmt.Sprintf(why, args...)
	}
}

func (m *matcher) missing(o *pqNode) {
	if o.isLeaf() {
		m.plan.sources[o.leaf] = leafSource{missing: true}
		return
	}
	for _, c := range o.children {
		m.missing(c)
	}
}

// match pairs output node o (of Delta type t) with stored node in.
func (m *matcher) match(t types.DataType, o, in *pqNode) {
	if m.plan.general {
		return
	}
	switch t := t.(type) {
	case *types.StructType:
		if in.isLeaf() || in.rep == format.Repeated {
			m.general("%q is not a plain group", in.pathString())
			return
		}
		for i, sf := range t.Fields {
			c := (&planner{matchIDs: m.matchIDs}).lookup(in, sf)
			if c == nil {
				m.general("%q lacks nested field %q", in.pathString(), sf.Name)
				return
			}
			m.match(sf.Type, o.children[i], c)
		}
	case *types.ArrayType:
		if in.rep == format.Repeated || in.lt.ann != annList {
			m.general("%q is not a standard LIST", in.pathString())
			return
		}
		r, e, err := listLayout(in)
		if err != nil || r == e {
			m.general("%q is a legacy two-level list", in.pathString())
			return
		}
		m.match(t.ElementType, o.children[0].children[0], e)
	case *types.MapType:
		if in.rep == format.Repeated || !in.isMapGroup() {
			m.general("%q is not a standard MAP", in.pathString())
			return
		}
		_, k, v, err := mapLayout(in)
		if err != nil || v == nil {
			m.general("%q is a key-only map", in.pathString())
			return
		}
		m.match(t.KeyType, o.children[0].children[0], k)
		m.match(t.ValueType, o.children[0].children[1], v)
	case *types.PrimitiveType:
		if t.Name == types.TypeVariant {
			if !in.isVariantGroup(false) || in.rep == format.Repeated {
				m.general("%q is not an unshredded variant", in.pathString())
				return
			}
			m.leaf(o.child("value"), in.child("value"), convIdentity)
			m.leaf(o.child("metadata"), in.child("metadata"), convIdentity)
			return
		}
		if !in.isLeaf() || in.rep == format.Repeated {
			m.general("%q is not a primitive", in.pathString())
			return
		}
		conv, ok := fastConversion(in.lt, o.lt, t)
		if !ok {
			m.general("%q (%s) needs a logical conversion to %s", in.pathString(), in.lt, t)
			return
		}
		m.leaf(o, in, conv)
	}
}

// leaf records a leaf pairing after checking that the two paths repeat at the same depths, and derives
// the definition level mapping.
func (m *matcher) leaf(o, in *pqNode, conv convKind) {
	if m.plan.general {
		return
	}
	oc, ic := chain(o), chain(in)
	if len(oc) != len(ic) {
		m.general("%q nests differently from the output", in.pathString())
		return
	}
	defMap := make([]byte, in.maxDef+1)
	identity := in.maxDef == o.maxDef
	inDef, outDef := 0, 0
	for j := range oc {
		if (oc[j].rep == format.Repeated) != (ic[j].rep == format.Repeated) {
			m.general("%q repeats differently from the output", in.pathString())
			return
		}
		if ic[j].rep != format.Required {
			// stored level inDef: nodes before j are defined, node j is not
			defMap[inDef] = byte(outDef)
			if oc[j].rep == format.Required {
				defMap[inDef] = noNull
				identity = false
			}
			inDef++
		}
		if oc[j].rep != format.Required {
			outDef++
		}
	}
	defMap[inDef] = byte(outDef)
	for d, v := range defMap {
		if int(v) != d {
			identity = false
		}
	}
	src := leafSource{in: in, conv: conv}
	if !identity {
		src.defMap = defMap
	}
	m.plan.sources[o.leaf] = src
}

// chain lists the nodes from the top-level field down to n.
func chain(n *pqNode) []*pqNode {
	var c []*pqNode
	for ; n.parent != nil; n = n.parent {
		c = append([]*pqNode{n}, c...)
	}
	return c
}

// fastConversion picks a bulk conversion from a stored leaf type to an output leaf, or reports that only
// the logical path can convert (decimal rescaling and re-representation).
func fastConversion(in, out leafType, t *types.PrimitiveType) (convKind, bool) {
	switch t.Name {
	case types.TypeDecimal:
		if in.ann != annDecimal || in.scale != t.Scale {
			return 0, false
		}
		switch {
		case in.phys == out.phys && (in.phys != format.FixedLenByteArray || in.typeLen == out.typeLen):
			return convIdentity, true
		case in.phys == format.Int32 && out.phys == format.Int64:
			return convInt32ToInt64, true
		}
		return 0, false
	case types.TypeTimestamp, types.TypeTimestampNTZ:
		switch {
		case in.phys == format.Int96:
			return convInt96ToMicros, true
		case in.phys == format.Int32 && in.ann == annDate:
			return convDateToMicros, true
		case in.unit == unitMillis:
			return convMillisToMicros, true
		case in.unit == unitNanos:
			return convNanosToMicros, true
		}
		return convIdentity, true
	case types.TypeDouble:
		switch in.phys {
		case format.Float:
			return convFloatToDouble, true
		case format.Int32:
			return convInt32ToDouble, true
		case format.Int64:
			return convInt64ToDouble, true
		}
		return convIdentity, true
	case types.TypeLong:
		if in.phys == format.Int32 {
			return convInt32ToInt64, true
		}
		return convIdentity, true
	case types.TypeByte, types.TypeShort:
		// Only stored values that are already that narrow may be copied; others are cast logically.
		bits := map[string]int{types.TypeByte: 8, types.TypeShort: 16}[t.Name]
		return convIdentity, in.ann == annInt && in.signed && in.bitWidth <= bits
	case types.TypeInteger:
		return convIdentity, in.ann == annNone || (in.ann == annInt && (in.signed || in.bitWidth < 32))
	}
	// Same physical type (the logical planner has checked compatibility): string and binary from any
	// byte array, date, boolean, float.
	return convIdentity, in.phys == out.phys || (in.phys == format.FixedLenByteArray && out.phys == format.ByteArray)
}
