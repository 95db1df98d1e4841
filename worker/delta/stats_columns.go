package delta

import (
	"fmt"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// statsColumn is one leaf column that gets statistics.
type statsColumn struct {
	logical, physical []string
	typ               types.DataType
	minMax            bool // the type is "skipping eligible" in Spark: numbers, dates, timestamps, strings
}

// skippingEligible is Spark's SkippingEligibleDataType (DataSkippingReader.scala): min/max are
// collected for numeric types (including decimal), date, timestamp, timestamp_ntz and string.
// Boolean, binary, arrays, maps and variants get a null count only.
func skippingEligible(t types.DataType) bool {
	p, ok := t.(*types.PrimitiveType)
	if !ok {
		return false
	}
	switch p.Name {
	case types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong, types.TypeFloat, types.TypeDouble,
		types.TypeDecimal, types.TypeDate, types.TypeTimestamp, types.TypeTimestampNTZ, types.TypeString:
		return true
	}
	return false
}

// StatsColumns returns the leaf columns (logical paths) that get statistics in new files: the
// delta.dataSkippingStatsColumns list when set, otherwise the first
// delta.dataSkippingNumIndexedCols (default 32; -1 = all) leaves of the data schema in schema
// order, where an array or map counts as one leaf (Spark StatisticsCollection.getIndexedColumns).
// Partition columns never get statistics; clustering columns always do (clustered tables must
// have them, PROTOCOL.md §Clustered Table).
func (s *Snapshot) StatsColumns() ([][]string, error) {
	cols, err := s.statsColumns()
	if err != nil {
		return nil, err
	}
	out := make([][]string, len(cols))
	for i, c := range cols {
		out[i] = c.logical
	}
	return out, nil
}

func (s *Snapshot) statsColumns() ([]statsColumn, error) {
	data := &types.StructType{}
	for _, f := range s.schema.Fields {
		if !slices.Contains(s.metadata.PartitionColumns, f.Name) {
			data.Fields = append(data.Fields, f)
		}
	}
	var all []statsColumn
	collectLeaves(data, s.mode, nil, nil, &all)
	var chosen []statsColumn
	if list, ok, err := s.props.StatsColumns(); err != nil {
		return nil, fmt.Errorf("table %s: %w", s.table.Location(), err)
	} else if ok {
		for _, want := range list {
			n := 0
			for _, c := range all {
				if hasPrefixFold(c.logical, want) {
					chosen = append(chosen, c)
					n++
				}
			}
			if n == 0 && !isPartitionPath(s.metadata.PartitionColumns, want) {
				return nil, fmt.Errorf("table %s: %s names column %s, which is not in the schema", s.table.Location(), PropStatsColumns, strings.Join(want, "."))
			}
		}
	} else {
		n, err := s.props.NumIndexedCols()
		if err != nil {
			return nil, fmt.Errorf("table %s: %w", s.table.Location(), err)
		}
		if n < 0 || n > len(all) {
			n = len(all)
		}
		chosen = append(chosen, all[:n]...)
	}
	if clustering, ok, err := s.ClusteringColumnsLogical(); err == nil && ok {
		for _, cc := range clustering {
			for _, c := range all {
				if slices.Equal(c.logical, cc) && !containsColumn(chosen, c) {
					chosen = append(chosen, c)
				}
			}
		}
	}
	// Keep schema order, without duplicates (a list may name a column twice via a parent).
	var out []statsColumn
	for _, c := range all {
		if containsColumn(chosen, c) {
			out = append(out, c)
		}
	}
	return out, nil
}

func collectLeaves(st *types.StructType, mode ColumnMappingMode, logical, physical []string, out *[]statsColumn) {
	for _, f := range st.Fields {
		lp := append(slices.Clip(logical), f.Name)
		pp := append(slices.Clip(physical), PhysicalName(f, mode))
		if sub, ok := f.Type.(*types.StructType); ok {
			collectLeaves(sub, mode, lp, pp, out)
			continue
		}
		*out = append(*out, statsColumn{logical: lp, physical: pp, typ: f.Type, minMax: skippingEligible(f.Type)})
	}
}

func containsColumn(cols []statsColumn, c statsColumn) bool {
	return slices.ContainsFunc(cols, func(x statsColumn) bool { return slices.Equal(x.logical, c.logical) })
}

// hasPrefixFold reports whether path starts with prefix, comparing names case-insensitively as
// Spark does for the stats column list.
func hasPrefixFold(path, prefix []string) bool {
	if len(prefix) > len(path) {
		return false
	}
	for i := range prefix {
		if !strings.EqualFold(path[i], prefix[i]) {
			return false
		}
	}
	return true
}

func isPartitionPath(partitionCols []string, p []string) bool {
	return len(p) == 1 && slices.ContainsFunc(partitionCols, func(c string) bool { return strings.EqualFold(c, p[0]) })
}

// statsStructType is the typed shape of add.stats (Spark's statsSchema): numRecords, minValues
// and maxValues over the eligible columns, nullCount over all stats columns, and tightBounds when
// the table supports deletion vectors. Field names are physical. It types checkpoint stats_parsed.
func statsStructType(cols []statsColumn, withTightBounds bool) *types.StructType {
	st := &types.StructType{Fields: []*types.StructField{field("numRecords", long())}}
	var eligible []statsColumn
	for _, c := range cols {
		if c.minMax {
			eligible = append(eligible, c)
		}
	}
	if len(eligible) > 0 {
		st.Fields = append(st.Fields,
			field("minValues", nestColumns(eligible, func(c statsColumn) types.DataType { return c.typ })),
			field("maxValues", nestColumns(eligible, func(c statsColumn) types.DataType { return c.typ })))
	}
	if len(cols) > 0 {
		st.Fields = append(st.Fields, field("nullCount", nestColumns(cols, func(statsColumn) types.DataType { return long() })))
	}
	if withTightBounds {
		st.Fields = append(st.Fields, field("tightBounds", boolean()))
	}
	return st
}

// nestColumns builds a struct type mirroring the columns' physical paths.
func nestColumns(cols []statsColumn, leaf func(statsColumn) types.DataType) *types.StructType {
	root := &types.StructType{}
	for _, c := range cols {
		cur := root
		for i, name := range c.physical {
			if i == len(c.physical)-1 {
				cur.Fields = append(cur.Fields, field(name, leaf(c)))
				break
			}
			f := cur.Field(name)
			if f == nil {
				f = field(name, &types.StructType{})
				cur.Fields = append(cur.Fields, f)
			}
			cur = f.Type.(*types.StructType)
		}
	}
	return root
}
