package delta

import "slices"

// RewriteIncompatibility says why data files written for base (a compaction's or a clustering's outputs)
// cannot be committed on latest, or "" when they can: they were written with base's schema, partitioning
// and column mapping (Spark checks the partition schema), and carry materialized row ids only when base
// required them, so a table that started to require them (or renamed the columns) needs a new rewrite.
func RewriteIncompatibility(base, latest *Snapshot) string {
	a, b := base.Metadata(), latest.Metadata()
	switch {
	case a.SchemaString != b.SchemaString:
		return "the table schema changed"
	case !slices.Equal(a.PartitionColumns, b.PartitionColumns):
		return "the partition columns changed"
	case base.ColumnMappingMode() != latest.ColumnMappingMode():
		return "the column mapping mode changed"
	}
	ra, erra := base.RowTracking()
	rb, errb := latest.RowTracking()
	switch {
	case erra != nil || errb != nil:
		return "the row-tracking domain cannot be read"
	case ra.MustPreserve() != rb.MustPreserve(),
		rb.MustPreserve() && (ra.MaterializedRowIDColumn != rb.MaterializedRowIDColumn || ra.MaterializedRowCommitVersionColumn != rb.MaterializedRowCommitVersionColumn):
		return "row tracking changed"
	}
	return ""
}
