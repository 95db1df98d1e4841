package duckcheck

import (
	"context"
	"fmt"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
)

// Row tracking under merges (issue 13 item 4: updated rows keep their row ids; table.DeleteRows: kept rows
// keep their row ids and commit versions). On the scenarios with row tracking enabled, every commit's
// stable row identities (tabletest.RowIdentities: row id → row and row commit version, DVs applied) are
// compared with the previous version's: the rows the model leaves unchanged keep id, content and commit
// version; the rows it updates keep their id with new content; the rows it deletes lose theirs; the rows it
// inserts get ids no row had.

// rowIDChange is what the model says a commit does to the previous version's rows.
type rowIDChange struct {
	unchanged, updated, deleted, inserted int64
	skip                                  bool // the step changes every row's identity (schema evolution) or is not modelled
}

// keyedChange counts, for a keyed merge, the target rows left alone, updated and deleted, and the source
// rows inserted.
func (m *model) keyedChange(spec mergeSpec) rowIDChange {
	src := spec.source()
	var c rowIDChange
	c.unchanged = m.count(fmt.Sprintf("SELECT count(*) FROM prev t WHERE NOT EXISTS (SELECT 1 FROM %s s WHERE %s)", src, spec.matchOn()))
	if spec.mode != "delete" {
		c.updated = m.count(fmt.Sprintf("SELECT count(*) FROM prev t JOIN %s s ON %s WHERE %s", src, spec.matchOn(), spec.notDeleted()))
	}
	if spec.mode == "upsert" {
		c.inserted = m.count(fmt.Sprintf("SELECT count(*) FROM %s s WHERE NOT EXISTS (SELECT 1 FROM prev t WHERE %s) AND %s", src, spec.matchOn(), spec.notDeleted()))
	}
	c.deleted = m.count("SELECT count(*) FROM prev") - c.unchanged - c.updated
	return c
}

// mergeChange is keyedChange for every mode the model runs.
func (m *model) mergeChange(spec mergeSpec, evolved bool) rowIDChange {
	switch {
	case evolved:
		return rowIDChange{skip: true}
	case spec.mode == "append":
		return rowIDChange{unchanged: m.count("SELECT count(*) FROM prev"), inserted: m.count("SELECT count(*) FROM batch")}
	case len(spec.keys) > 0:
		return m.keyedChange(spec)
	}
	return rowIDChange{skip: true} // overwrite and truncateinsert: every row goes
}

// checkRowIDs compares version v's row identities with the last ones seen, as change says, and keeps v's.
func (m *model) checkRowIDs(v delta.Version, change rowIDChange) {
	m.t.Helper()
	if !m.sc.rowTracking {
		return
	}
	snap, err := delta.NewTable(m.store).At(context.Background(), v)
	if err != nil {
		m.fatalf("loading version %d: %v", v, err)
	}
	ids, err := tabletest.RowIdentities(context.Background(), snap)
	if err != nil {
		m.fatalf("row identities of version %d: %v", v, err)
	}
	before := m.rowIDs
	m.rowIDs = ids
	if change.skip || before == nil {
		return
	}
	var got rowIDChange
	for id, row := range before {
		switch now, ok := ids[id]; {
		case !ok:
			got.deleted++
		case now == row:
			got.unchanged++
		default:
			got.updated++
		}
	}
	for id := range ids {
		if _, ok := before[id]; !ok {
			got.inserted++
		}
	}
	if got != change {
		m.fatalf("version %d's row ids: %d rows kept id, content and commit version, %d kept their id with new content, %d ids went, %d are new; "+
			"the model says %d, %d, %d and %d", v, got.unchanged, got.updated, got.deleted, got.inserted, change.unchanged, change.updated, change.deleted, change.inserted)
	}
}
