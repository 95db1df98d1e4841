package merge

import (
	"context"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// The common upsert — a CDC batch whose files carry every table column, into a table that keeps no
// row ids — writes each batch row as it is: an updated row is its source row, and so is an
// inserted one. What the new files hold then does not depend on the match, so they are written
// on one core while the other reads the target's key columns and removes the matched rows, and
// a re-plan after a concurrent OPTIMIZE reuses them whatever it matches. (stageKeyed writes the
// updated rows after the match, which it needs for the target values of the columns a source file
// lacks and for the row ids it keeps.)

// upsertsBatchAsIs reports whether the attempt's upsert writes every live, not deleted batch row as
// it is (stageUpsertAsIs).
func (m *merger) upsertsBatchAsIs(st *staged) bool {
	if m.o.Mode != Upsert || !columnarWrite(st.p.src, st.wsnap) {
		return false
	}
	for _, present := range st.p.src.present {
		if slices.Contains(present[:st.width], false) {
			return false
		}
	}
	track, err := st.wsnap.RowTracking()
	if err != nil {
		return false // stageKeyed reports it
	}
	rt, err := track.PreservedColumns()
	return err == nil && rt == nil
}

// writeSet is the batch rows an upsert writes: the live ones (not dropped by --order-by) without a
// true delete marker, in batch order; nil when that is every row.
func writeSet(p *prepared) []int32 {
	n := p.src.len()
	for r := range n {
		if !p.live[r] || p.deleted[r] {
			rows := make([]int32, 0, n)
			for k := range n {
				if p.live[k] && !p.deleted[k] {
					rows = append(rows, int32(k))
				}
			}
			return rows
		}
	}
	return nil
}

// stageUpsertAsIs is stageKeyed and stageInserts for an upsert of batch rows written as they are
// (upsertsBatchAsIs): the rows are written while the target is matched, and a source row that
// matches several target rows (a key the target holds twice) is written again for each further
// one, as the update of each.
func (m *merger) stageUpsertAsIs(ctx context.Context, st *staged) error {
	p, rep := st.p, m.rep
	rows := writeSet(p)
	count := p.src.len()
	if rows != nil {
		count = len(rows)
	}
	schema := st.wsnap.Metadata().SchemaString
	fp := fingerprint(rows)
	reuse := false
	if m.inserts.reusable(fp, schema, true) {
		reuse = true
	} else {
		m.inserts.abort(ctx)
		m.inserts = nil
	}
	var (
		adds    []*delta.AddFile
		abortFn func(context.Context) error
		copied  bool
		werr    error
	)
	done := make(chan struct{})
	wctx, cancel := context.WithCancel(ctx)
	defer cancel()
	if reuse || count == 0 {
		close(done)
	} else {
		go func() {
			defer close(done)
			// The columns that planning does not read may still be arriving (readBatch's first).
			if werr = p.src.await(); werr != nil {
				werr = batchError(werr)
				return
			}
			if rows == nil {
				if adds, abortFn, copied, werr = m.copyBatchPages(wctx, st); copied || werr != nil {
					return
				}
			}
			adds, abortFn, werr = m.writeColumns(wctx, st, rows, nil, nil, "write upserted rows")
		}()
	}
	_, updates, err := m.matchAndRemove(ctx, st)
	if err != nil {
		cancel()
	}
	<-done
	if err == nil && werr == nil {
		werr = batchError(p.src.await()) // read already, unless no writer ran; the twice-held keys' rows need it
	}
	if !reuse && werr == nil && abortFn != nil {
		m.inserts = &insertCache{fingerprint: fp, schema: schema, asIs: true, copied: copied, adds: adds, abortFn: abortFn}
	}
	if err != nil {
		return err
	}
	if werr != nil {
		return werr
	}
	if m.inserts != nil {
		st.inserts = m.inserts
		m.addFiles(st, m.inserts.adds)
		if m.inserts.copied {
			rep.FilesCopied = len(m.inserts.adds)
		}
	}
	// Every matched source row was written once; a target key held twice needs its row again.
	seen := make([]bool, p.src.len())
	var again []int32
	distinct := 0
	for _, u := range updates {
		rep.RowsUpdated += int64(len(u.pos))
		for _, s := range u.src {
			if seen[s] {
				again = append(again, s)
				continue
			}
			seen[s] = true
			distinct++
		}
	}
	rep.RowsInserted = int64(count - distinct)
	if len(again) > 0 {
		more, abort, err := m.writeColumns(ctx, st, again, nil, nil, "write updated rows")
		if err != nil {
			return err
		}
		st.aborts = append(st.aborts, abort)
		m.addFiles(st, more)
	}
	return nil
}
