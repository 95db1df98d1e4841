package merge

import (
	"context"
	"fmt"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// writeUpdated writes the updated rows into new files. With row tracking preserved (ids non-nil)
// each row keeps its stable row id in the materialized row id column, and its commit version is
// left null so that it reads as the new commit's (the file's defaultRowCommitVersion).
func (m *merger) writeUpdated(ctx context.Context, st *staged, rows []types.Struct, ids []int64, preserve bool) error {
	if !preserve {
		w, err := table.NewWriter(ctx, st.wsnap, m.writeOptions())
		if err != nil {
			return err
		}
		st.aborts = append(st.aborts, w.Abort)
		if err := w.Write(rows); err != nil {
			return result.Refuse(result.ReasonBadFile, fmt.Errorf("write updated rows: %w", err))
		}
		adds, err := w.Close()
		if err != nil {
			return err
		}
		m.addFiles(st, adds)
		return nil
	}
	if len(ids) != len(rows) {
		return fmt.Errorf("table %s: %d updated rows but %d preserved row ids", m.tbl.Location(), len(rows), len(ids))
	}
	// Group by partition: one file per partition of the updated rows (they are bounded by the batch).
	schema := st.wsnap.Schema()
	parts := st.wsnap.Metadata().PartitionColumns
	type group struct {
		pv   delta.PartitionValues
		rows []types.Struct
	}
	var order []string
	groups := map[string]*group{}
	for n, r := range rows {
		vals := map[string]types.Value{}
		for _, c := range parts {
			vals[c] = r[schema.FieldIndex(c)]
		}
		pv, err := st.wsnap.PartitionValuesOf(vals)
		if err != nil {
			return err
		}
		dir, err := st.wsnap.PartitionDir(pv)
		if err != nil {
			return err
		}
		g, ok := groups[dir]
		if !ok {
			g = &group{pv: pv}
			groups[dir] = g
			order = append(order, dir)
		}
		data := make(types.Struct, 0, len(schema.Fields)+2)
		for i, f := range schema.Fields {
			if !slices.Contains(parts, f.Name) {
				data = append(data, r[i])
			}
		}
		g.rows = append(g.rows, append(data, ids[n], nil))
	}
	for _, dir := range order {
		g := groups[dir]
		outs, err := table.NewRewriteOutputs(ctx, st.wsnap, g.pv, m.writeOptions())
		if err != nil {
			return err
		}
		st.aborts = append(st.aborts, outs.Abort)
		ro := outs.Options()
		if len(ro.Schema.Fields) != len(g.rows[0]) {
			return fmt.Errorf("table %s: the row-tracking file schema has %d columns, the updated rows %d", m.tbl.Location(), len(ro.Schema.Fields), len(g.rows[0]))
		}
		sw, err := outs.Create(0)
		if err != nil {
			return err
		}
		pw, err := parquetio.NewWriter(sw, ro.Schema, ro.Writer)
		if err != nil {
			_ = sw.Abort()
			return err
		}
		if err := pw.Write(g.rows); err != nil {
			_ = sw.Abort()
			return result.Refuse(result.ReasonBadFile, fmt.Errorf("write updated rows: %w", err))
		}
		res, err := pw.Close()
		if err != nil {
			_ = sw.Abort()
			return err
		}
		if err := sw.Close(); err != nil {
			_ = sw.Abort()
			return err
		}
		add, err := outs.AddFile(0, res)
		if err != nil {
			return err
		}
		m.addFiles(st, []*delta.AddFile{add})
	}
	st.tx.MarkRowTrackingPreserved()
	return nil
}

func (m *merger) addFiles(st *staged, adds []*delta.AddFile) {
	st.tx.Add(adds...)
	m.rep.FilesAdded += len(adds)
	for _, a := range adds {
		m.rep.BytesWritten += a.Size
	}
}
