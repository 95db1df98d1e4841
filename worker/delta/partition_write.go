package delta

import (
	"fmt"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// HiveDefaultPartition is the directory name Spark uses for a null partition value.
const HiveDefaultPartition = "__HIVE_DEFAULT_PARTITION__"

// PartitionValuesOf builds add.partitionValues for a new file from typed values keyed by logical
// partition column name: every partition column must be given (nil for null), values are
// serialized in the protocol's recommended forms and keyed by physical name.
func (s *Snapshot) PartitionValuesOf(values map[string]types.Value) (PartitionValues, error) {
	cols := s.PartitionColumns()
	if len(values) != len(cols) {
		return nil, fmt.Errorf("table %s: %d partition values given, the table has %d partition columns", s.table.Location(), len(values), len(cols))
	}
	pv := make(PartitionValues, 0, len(cols))
	for _, f := range cols {
		v, ok := values[f.Name]
		if !ok {
			return nil, fmt.Errorf("table %s: no value for partition column %q", s.table.Location(), f.Name)
		}
		e, err := FormatPartitionValue(PhysicalName(f, s.mode), v)
		if err != nil {
			return nil, err
		}
		// The formatted value must read back as the same typed value.
		back, err := ParsePartitionValue(f.Type, e)
		if err != nil {
			return nil, fmt.Errorf("table %s: partition column %q: %w", s.table.Location(), f.Name, err)
		}
		if (back == nil) != (v == nil) {
			return nil, fmt.Errorf("table %s: partition column %q: value %v does not round-trip", s.table.Location(), f.Name, v)
		}
		pv = append(pv, e)
	}
	pv.sortByColumn()
	return pv, nil
}

// PartitionDir returns the conventional Hive-style directory for a file's partition values
// ("a=1/b=x%2Fy"), in partition-column order, with Spark's escaping of path-unsafe characters and
// __HIVE_DEFAULT_PARTITION__ for null. The directory is only a convention: readers take
// partition values from the log. Pass the result through EncodePath for the add's path.
func (s *Snapshot) PartitionDir(pv PartitionValues) (string, error) {
	var parts []string
	for _, f := range s.PartitionColumns() {
		name := PhysicalName(f, s.mode)
		e, ok := pv.Get(name)
		if !ok {
			return "", fmt.Errorf("table %s: no value for partition column %q", s.table.Location(), f.Name)
		}
		value := HiveDefaultPartition
		if !e.IsNull() {
			value = EscapePathName(e.Value)
		}
		parts = append(parts, EscapePathName(name)+"="+value)
	}
	return strings.Join(parts, "/"), nil
}

// EscapePathName escapes a partition column name or value for a directory name the way Spark's
// ExternalCatalogUtils.escapePathName does: control characters and "#%'*/:=?\{[]^ and DEL become
// %XX (upper-case hex); everything else, spaces and non-ASCII included, stays as it is. Writers name
// directories with it (PartitionDir); vacuum recognises them with it.
func EscapePathName(s string) string {
	const hex = "0123456789ABCDEF"
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c < 0x20 || c == 0x7F || strings.IndexByte("\"#%'*/:=?\\{[]^", c) >= 0 {
			b.WriteByte('%')
			b.WriteByte(hex[c>>4])
			b.WriteByte(hex[c&0xF])
			continue
		}
		b.WriteByte(c)
	}
	return b.String()
}
