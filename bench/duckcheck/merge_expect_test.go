package duckcheck

import (
	"fmt"
	"strings"
)

// MERGE's semantics written as DuckDB SQL, independently of the engine: from the previous version's
// expected rows (table prev) and the batch as written to the source file (table batch), the rows the next
// version must hold. The rules, as Spark's MERGE and issue 13 state them:
//   - a source row matches a target row when every key is equal; a null key never matches (SQL's = gives
//     NULL, which a join drops);
//   - with --order-by, the batch is first reduced to one row per key, the one with the largest ordering value;
//   - upsert: matched target rows are replaced by their source row, unmatched source rows are inserted; a
//     source row whose delete marker is true deletes its match and is never inserted;
//   - update: matched rows only; delete: matched rows removed; append: every source row inserted;
//   - overwrite (table) and truncateinsert: the batch is the table; overwrite (partitions): the partitions
//     present in the batch are replaced, the others kept; delete-marked rows are not written;
//   - with --partition-pruning p, only target rows whose p is among the batch's values can match.

// mergeSpec is one merge as the model sees it.
type mergeSpec struct {
	mode         string   // append, upsert, update, delete, overwrite, truncateinsert
	keys         []string // key columns
	deleteColumn string   // upsert's delete marker, or ""
	orderBy      string   // the batch's ordering column, or ""
	scope        string   // overwrite: table or partitions
	partitionCol string   // the table's partition column, for scope partitions and pruned
	pruned       bool     // --partition-pruning partitionCol: only target rows of the batch's partition values can match
	columns      []string // the table's columns after the merge (the batch's extra ones dropped unless they evolved in)
}

func quoteIdents(cols []string, prefix string) string {
	parts := make([]string, len(cols))
	for i, c := range cols {
		parts[i] = prefix + `"` + c + `"`
	}
	return strings.Join(parts, ", ")
}

// matchOn is the join condition between target t and source s.
func (m mergeSpec) matchOn() string {
	parts := make([]string, len(m.keys))
	for i, k := range m.keys {
		parts[i] = fmt.Sprintf(`t."%s" = s."%s"`, k, k)
	}
	if m.pruned {
		parts = append(parts, fmt.Sprintf(`t."%[1]s" IN (SELECT DISTINCT "%[1]s" FROM batch)`, m.partitionCol))
	}
	return strings.Join(parts, " AND ")
}

// source is the batch as the merge must apply it: deduplicated by key when an ordering column is given
// (rows with a null key are never deduplicated: they match nothing, not even each other).
func (m mergeSpec) source() string {
	if m.orderBy == "" {
		return "batch"
	}
	var nullKey []string
	for _, k := range m.keys {
		nullKey = append(nullKey, `"`+k+`" IS NULL`)
	}
	return fmt.Sprintf(`(SELECT * EXCLUDE (rn__) FROM (SELECT *, row_number() OVER (PARTITION BY %s ORDER BY "%s" DESC) AS rn__
		FROM batch WHERE NOT (%s)) WHERE rn__ = 1 UNION ALL SELECT * FROM batch WHERE %s)`,
		quoteIdents(m.keys, ""), m.orderBy, strings.Join(nullKey, " OR "), strings.Join(nullKey, " OR "))
}

// notDeleted filters source rows whose delete marker is set.
func (m mergeSpec) notDeleted() string {
	if m.deleteColumn == "" {
		return "true"
	}
	return fmt.Sprintf(`NOT coalesce(s."%s", false)`, m.deleteColumn)
}

// expectedSQL is the query of the next version's rows, with m.columns in order. prev must already hold every
// column of m.columns (schema evolution adds the new ones as NULL before this runs).
func (m mergeSpec) expectedSQL() string {
	cols := quoteIdents(m.columns, "")
	tcols, scols := quoteIdents(m.columns, "t."), quoteIdents(m.columns, "s.")
	src := m.source()
	unmatchedTarget := fmt.Sprintf("SELECT %s FROM prev t WHERE NOT EXISTS (SELECT 1 FROM %s s WHERE %s)", tcols, src, m.matchOn())
	updated := fmt.Sprintf("SELECT %s FROM prev t JOIN %s s ON %s WHERE %s", scols, src, m.matchOn(), m.notDeleted())
	inserted := fmt.Sprintf("SELECT %s FROM %s s WHERE NOT EXISTS (SELECT 1 FROM prev t WHERE %s) AND %s", scols, src, m.matchOn(), m.notDeleted())
	switch m.mode {
	case "append":
		return fmt.Sprintf("SELECT %s FROM prev UNION ALL SELECT %s FROM batch", cols, cols)
	case "upsert":
		return unmatchedTarget + " UNION ALL " + updated + " UNION ALL " + inserted
	case "update":
		return unmatchedTarget + " UNION ALL " + updated
	case "delete":
		return unmatchedTarget
	case "truncateinsert":
		return fmt.Sprintf("SELECT %s FROM batch s WHERE %s", scols, m.notDeleted())
	case "overwrite":
		// The partitions replaced are those of every batch row, delete-marked ones included.
		if m.scope == "partitions" {
			return fmt.Sprintf(`SELECT %s FROM prev WHERE "%s" NOT IN (SELECT DISTINCT "%s" FROM batch) UNION ALL SELECT %s FROM batch s WHERE %s`,
				cols, m.partitionCol, m.partitionCol, scols, m.notDeleted())
		}
		return fmt.Sprintf("SELECT %s FROM batch s WHERE %s", scols, m.notDeleted())
	}
	panic("mergeSpec: unknown mode " + m.mode)
}

// ambiguousKeysSQL counts the target rows that two or more source rows match: the merge must fail on any
// (unless an ordering column deduplicates the batch first).
func (m mergeSpec) ambiguousKeysSQL() string {
	return fmt.Sprintf(`SELECT count(*) FROM (SELECT 1 FROM prev t JOIN batch s ON %s GROUP BY t.rowid HAVING count(*) > 1)`, m.matchOn())
}
