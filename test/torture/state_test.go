package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"net/url"
	"slices"
	"strings"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// tableState is what a table holds at one version, seen two ways: through the project (log replay
// and scan) and independently (the harness's own replay of its copies of the commits, and the id
// column read from each live file with parquet-go).
type tableState struct {
	version int64
	rows    []string // the project's scan, canonical rows, sorted
	ids     []int64  // the independent reading, sorted
}

// idReader reads the id column of data files with parquet-go, caching by path: data files are
// immutable, their names unique.
type idReader map[string][]int64

func (c idReader) ids(s *site, path string) ([]int64, error) {
	if ids, ok := c[path]; ok {
		return ids, nil
	}
	f, size, closeFile, err := s.openRaw(path)
	if err != nil {
		return nil, fmt.Errorf("live file %s: %w", path, err)
	}
	defer closeFile()
	pf, err := parquet.OpenFile(f, size)
	if err != nil {
		return nil, fmt.Errorf("live file %s: parquet-go cannot open it: %w", path, err)
	}
	leaf, ok := pf.Schema().Lookup("id")
	if !ok {
		return nil, fmt.Errorf("live file %s has no id column", path)
	}
	ids := make([]int64, 0, pf.NumRows())
	for _, rg := range pf.RowGroups() {
		pages := rg.ColumnChunks()[leaf.ColumnIndex].Pages()
		for {
			p, err := pages.ReadPage()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				pages.Close()
				return nil, fmt.Errorf("live file %s: %w", path, err)
			}
			vals := make([]parquet.Value, p.NumValues())
			n, err := p.Values().ReadValues(vals)
			if err != nil && !errors.Is(err, io.EOF) {
				pages.Close()
				return nil, fmt.Errorf("live file %s: %w", path, err)
			}
			for _, v := range vals[:n] {
				if v.IsNull() {
					return nil, fmt.Errorf("live file %s: a null id", path)
				}
				ids = append(ids, v.Int64())
			}
			parquet.Release(p)
		}
		pages.Close()
	}
	if int64(len(ids)) != pf.NumRows() {
		return nil, fmt.Errorf("live file %s: %d ids read, the footer says %d rows", path, len(ids), pf.NumRows())
	}
	c[path] = ids
	return ids, nil
}

// observer looks at one table on behalf of a test: it records every commit, and reads states.
type observer struct {
	site *site
	tbl  *delta.Table
	log  *logRecorder
	ids  idReader
}

func newObserver(s *site) *observer {
	return &observer{site: s, tbl: delta.NewTable(s.store), log: newLogRecorder(), ids: idReader{}}
}

// latest checks the table's log (commits recorded, none overwritten, versions contiguous) and
// reads its latest state both ways, which must agree.
func (o *observer) latest(ctx context.Context) (tableState, error) {
	files, err := o.site.listRaw()
	if err != nil {
		return tableState{}, err
	}
	if err := o.log.observe(o.site, files); err != nil {
		return tableState{}, err
	}
	hi, err := listLog(files).contiguous()
	if err != nil {
		return tableState{}, err
	}
	snap, err := o.tbl.Latest(ctx)
	if err != nil {
		return tableState{}, fmt.Errorf("reading the latest version: %w", err)
	}
	if int64(snap.Version()) != hi {
		return tableState{}, fmt.Errorf("the project reads version %d as the latest, the log's newest commit is %d", snap.Version(), hi)
	}
	return o.stateOf(ctx, snap)
}

// at reads version v both ways (time travel).
func (o *observer) at(ctx context.Context, v int64) (tableState, error) {
	snap, err := o.tbl.At(ctx, delta.Version(v))
	if err != nil {
		return tableState{}, fmt.Errorf("time travel to version %d: %w", v, err)
	}
	return o.stateOf(ctx, snap)
}

func (o *observer) stateOf(ctx context.Context, snap *delta.Snapshot) (tableState, error) {
	v := int64(snap.Version())
	st := tableState{version: v}
	dvs, err := o.log.liveFileDVs(v)
	if err != nil {
		return st, err
	}
	live := slices.Sorted(maps.Keys(dvs))
	var projected []string
	for _, f := range snap.Files() {
		p, err := url.PathUnescape(f.Path)
		if err != nil {
			return st, err
		}
		projected = append(projected, p)
	}
	slices.Sort(projected)
	if !slices.Equal(projected, live) {
		// Most likely a commit changed under the harness: say which.
		if files, err := o.site.listRaw(); err == nil {
			if err := o.log.observe(o.site, files); err != nil {
				return st, fmt.Errorf("version %d: %w", v, err)
			}
		}
		return st, fmt.Errorf("version %d: the project's replay has %d live files, the harness's %d: %s", v, len(projected), len(live), diffStrings(live, projected))
	}
	projectIDs, err := scanRows(ctx, snap, &st)
	if err != nil {
		return st, fmt.Errorf("scanning version %d: %w", v, err)
	}
	for _, p := range live {
		ids, err := o.ids.ids(o.site, p)
		if err != nil {
			return st, fmt.Errorf("version %d: %w", v, err)
		}
		if ids, err = o.withoutDeleted(ctx, p, ids, dvs[p]); err != nil {
			return st, fmt.Errorf("version %d: %w", v, err)
		}
		st.ids = append(st.ids, ids...)
	}
	slices.Sort(st.ids)
	if !slices.Equal(projectIDs, st.ids) {
		return st, fmt.Errorf("version %d: the project's scan returns %d rows, the live files hold %d; ids: %s",
			v, len(projectIDs), len(st.ids), diffInts(st.ids, projectIDs))
	}
	return st, nil
}

// withoutDeleted drops the rows a file's deletion vector (the descriptor as the log spells it)
// deletes. The descriptor is the harness's own reading of the log; the bitmap is decoded by the
// project's reader, which worker/table's spec decoder checks on the DVs the project writes.
func (o *observer) withoutDeleted(ctx context.Context, path string, ids []int64, raw json.RawMessage) ([]int64, error) {
	if raw == nil {
		return ids, nil
	}
	var d delta.DeletionVectorDescriptor
	if err := json.Unmarshal(raw, &d); err != nil {
		return nil, fmt.Errorf("live file %s: deletion vector %s: %w", path, raw, err)
	}
	deleted, err := delta.LoadDeletionVector(ctx, o.site.store, &d)
	if err != nil {
		return nil, fmt.Errorf("live file %s: deletion vector %s: %w", path, raw, err)
	}
	if max, ok := deleted.Maximum(), !deleted.IsEmpty(); ok && max >= uint64(len(ids)) {
		return nil, fmt.Errorf("live file %s: its deletion vector deletes row %d of %d", path, max, len(ids))
	}
	kept := make([]int64, 0, len(ids)-int(deleted.GetCardinality()))
	for i, id := range ids {
		if !deleted.Contains(uint64(i)) {
			kept = append(kept, id)
		}
	}
	return kept, nil
}

// scanRows reads the snapshot with the project's scan into st.rows (canonical, sorted) and returns
// the ids it saw, sorted.
func scanRows(ctx context.Context, snap *delta.Snapshot, st *tableState) ([]int64, error) {
	scan, err := table.NewScan(snap, table.ScanOptions{})
	if err != nil {
		return nil, err
	}
	var ids []int64
	_, err = scan.Run(ctx, func(batch []types.Struct) error {
		for _, r := range batch {
			id, ok := r[0].(int64)
			if !ok {
				return fmt.Errorf("row %s: the id is %T", table.CanonicalRow(r), r[0])
			}
			ids = append(ids, id)
			st.rows = append(st.rows, table.CanonicalRow(r))
		}
		return nil
	})
	slices.Sort(st.rows)
	slices.Sort(ids)
	return ids, err
}

// sameRows reports how after differs from before, row for row and id for id.
func sameRows(before, after tableState) error {
	var errs []error
	if !slices.Equal(before.rows, after.rows) {
		errs = append(errs, fmt.Errorf("the project's scan differs (version %d: %d rows, version %d: %d rows): %s",
			before.version, len(before.rows), after.version, len(after.rows), diffStrings(before.rows, after.rows)))
	}
	if !slices.Equal(before.ids, after.ids) {
		errs = append(errs, fmt.Errorf("the independent reading differs (%d ids before, %d after): %s",
			len(before.ids), len(after.ids), diffInts(before.ids, after.ids)))
	}
	return errors.Join(errs...)
}

// diffStrings describes the multiset difference of two sorted slices, briefly.
func diffStrings(want, got []string) string {
	var missing, extra []string
	i, j := 0, 0
	for i < len(want) || j < len(got) {
		switch {
		case j == len(got) || (i < len(want) && want[i] < got[j]):
			missing = append(missing, want[i])
			i++
		case i == len(want) || got[j] < want[i]:
			extra = append(extra, got[j])
			j++
		default:
			i++
			j++
		}
	}
	return fmt.Sprintf("%d missing %s, %d extra %s", len(missing), brief(missing), len(extra), brief(extra))
}

func diffInts(want, got []int64) string {
	s := func(xs []int64) []string {
		out := make([]string, len(xs))
		for i, x := range xs {
			out[i] = fmt.Sprintf("%020d", x)
		}
		return out
	}
	return diffStrings(s(want), s(got))
}

func brief(xs []string) string {
	if len(xs) > 3 {
		return "[" + strings.Join(xs[:3], "; ") + "; …]"
	}
	return "[" + strings.Join(xs, "; ") + "]"
}
