package merge

import (
	"fmt"

	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// prepared is the batch ready to match: which rows take part (after --order-by deduplication),
// which carry a true delete marker, and the source rows of each non-null key.
type prepared struct {
	src     *srcRows
	schema  *types.StructType
	keyIdx  []int
	live    []bool // false: dropped by deduplication
	deleted []bool // true delete marker
	byKey   map[string][]int32
	// byLong indexes the same rows by value when the key is one integer column: the columnar
	// fast path of matchFile probes it without building a string per target row.
	byLong  map[int64][]int32
	deduped int64
}

// prepare resolves the key, delete-marker and order-by columns against the write schema (every one
// must exist in the table and in every source file) and indexes the batch by key.
func prepare(src *srcRows, schema *types.StructType, width int, o *Options, table string) (*prepared, error) {
	p := &prepared{src: src, schema: schema, live: make([]bool, len(src.rows)), deleted: make([]bool, len(src.rows))}
	for i := range p.live {
		p.live[i] = true
	}
	need := func(what, name string) (int, error) {
		if what == "delete-marker" {
			// A file without the marker deletes nothing (its rows read null).
			if i := columnIndex(schema, name); i >= 0 {
				return i, nil
			}
		}
		i := columnIndex(schema, name)
		if i < 0 {
			return -1, result.Refuse(result.ReasonBadArgument, fmt.Errorf("%s column %q is not a column of table %s (columns: %s)", what, name, table, columnNames(&types.StructType{Fields: schema.Fields[:width]})))
		}
		for f, present := range src.present {
			if !present[i] {
				return -1, result.Refuse(result.ReasonBadFile, fmt.Errorf("%s column %q is missing from source file %s: every source row needs it", what, name, src.files[f]))
			}
		}
		return i, nil
	}
	for _, k := range o.Keys {
		i, err := need("key", k)
		if err != nil {
			return nil, err
		}
		p.keyIdx = append(p.keyIdx, i)
	}
	if o.DeleteColumn != "" {
		i, err := need("delete-marker", o.DeleteColumn)
		if err != nil {
			return nil, err
		}
		if pt, ok := schema.Fields[i].Type.(*types.PrimitiveType); !ok || pt.Name != types.TypeBoolean {
			return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("delete-marker column %q is %s, not boolean", o.DeleteColumn, schema.Fields[i].Type))
		}
		for n, r := range src.rows {
			p.deleted[n] = r[i] == true
		}
	}
	if o.OrderBy != "" {
		i, err := need("order-by", o.OrderBy)
		if err != nil {
			return nil, err
		}
		if err := p.dedup(i); err != nil {
			return nil, err
		}
	}
	if len(p.keyIdx) == 1 && integral(schema.Fields[p.keyIdx[0]].Type) {
		p.byLong = map[int64][]int32{}
		for n, r := range src.rows {
			if v, ok := types.AsInt64(r[p.keyIdx[0]]); ok && p.live[n] {
				p.byLong[v] = append(p.byLong[v], int32(n))
			}
		}
	}
	if len(p.keyIdx) > 0 {
		p.byKey = map[string][]int32{}
		for n, r := range src.rows {
			if !p.live[n] {
				continue
			}
			if k, ok := keyOf(r, p.keyIdx); ok {
				p.byKey[k] = append(p.byKey[k], int32(n))
			}
		}
	}
	return p, nil
}

// dedup keeps, per non-null key, the row with the greatest order-by value (nulls first; the later
// row wins a tie). Rows with a null key are all kept: they never match, so they never collide.
func (p *prepared) dedup(orderIdx int) error {
	best := map[string]int{}
	for n, r := range p.src.rows {
		k, ok := keyOf(r, p.keyIdx)
		if !ok {
			continue
		}
		prev, seen := best[k]
		if !seen {
			best[k] = n
			continue
		}
		a, b := p.src.rows[prev][orderIdx], r[orderIdx]
		later := true // b wins unless a orders after it
		switch {
		case b == nil && a != nil:
			later = false
		case a != nil && b != nil:
			c, err := types.Compare(a, b)
			if err != nil {
				return result.Refuse(result.ReasonBadArgument, fmt.Errorf("order-by column %s: %w", p.schema.Fields[orderIdx].Name, err))
			}
			later = c <= 0
		}
		if later {
			p.live[prev] = false
			best[k] = n
		} else {
			p.live[n] = false
		}
		p.deduped++
	}
	return nil
}

// integral reports whether a column holds byte, short, integer or long values (read as long by the
// columnar reader).
func integral(t types.DataType) bool {
	pt, ok := t.(*types.PrimitiveType)
	if !ok {
		return false
	}
	switch pt.Name {
	case types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong:
		return true
	}
	return false
}
