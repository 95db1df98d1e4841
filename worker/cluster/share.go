package cluster

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/scaleout"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// ShareFiles is share index of count of a clustering selection: the files ordered by the minimum of the
// first clustering column (then path), cut into count consecutive ranges of about equal bytes. Each share
// sorts its range into its own ZCube, so shares overlap only where their ranges meet; every share
// computing it from the same selection gets the same range.
func ShareFiles(snap *delta.Snapshot, files []*delta.AddFile, logical [][]string, index, count int) []*delta.AddFile {
	type keyed struct {
		f   *delta.AddFile
		min types.Value
	}
	ks := make([]keyed, len(files))
	for i, f := range files {
		ks[i] = keyed{f: f}
		if b, err := fileBox(snap, f, logical[:1]); err == nil {
			ks[i].min = b.Bounds[0].Min
		}
	}
	slices.SortStableFunc(ks, func(a, b keyed) int {
		switch {
		case a.min == nil && b.min == nil:
		case a.min == nil:
			return 1
		case b.min == nil:
			return -1
		default:
			if c, err := types.Compare(a.min, b.min); err == nil && c != 0 {
				return c
			}
		}
		return cmp.Compare(a.f.Path, b.f.Path)
	})
	r := scaleout.Contiguous(len(ks), count, func(i int) int64 { return ks[i].f.Size })[index]
	out := make([]*delta.AddFile, 0, r[1]-r[0])
	for _, k := range ks[r[0]:r[1]] {
		out = append(out, k.f)
	}
	return out
}

// ShareReport is what one share of a scale-out clustering run did.
type ShareReport struct {
	Op       result.Op
	Share    result.Share
	Manifest *scaleout.Manifest
}

// RunShare clusters share s of the selection planned from snap (the snapshot at s.Version) into one new
// ZCube and writes the share's manifest; scaleout.Commit commits every share at once. An earlier attempt's
// manifest stands: the plan is the same, so is the work.
func RunShare(ctx context.Context, snap *delta.Snapshot, opts Options, s scaleout.Share, progress func(string)) (*ShareReport, error) {
	start := time.Now()
	rep := &ShareReport{Op: result.Op{Name: "cluster"}, Share: result.Share{Run: s.RunID, Index: s.Index, Count: s.Count, Version: s.Version}}
	err := rep.run(ctx, snap, opts, s, progress)
	rep.Op.DurationMs = time.Since(start).Milliseconds()
	switch {
	case err != nil:
		rep.Op.Outcome, rep.Op.Reason = result.Classify(err)
		rep.Op.Message = err.Error()
	case rep.Share.Units == 0:
		rep.Op.Outcome = result.NothingToDo
	default:
		rep.Op.Outcome = result.Succeeded
	}
	return rep, err
}

func (rep *ShareReport) run(ctx context.Context, snap *delta.Snapshot, opts Options, s scaleout.Share, progress func(string)) error {
	loc := snap.Table().Location()
	if err := s.Validate(); err != nil {
		return result.Refuse(result.ReasonBadArgument, err)
	}
	if int64(snap.Version()) != s.Version {
		return result.Refuse(result.ReasonBadArgument, fmt.Errorf("%s was given the snapshot at version %d; every share must plan from the run's pinned version", s, snap.Version()))
	}
	store := snap.Table().Store()
	if m, err := scaleout.ReadManifest(ctx, store, s.RunID, s.Index); err == nil {
		rep.describe(m, "an earlier attempt of this share finished; its manifest stands")
		rep.Share.Reused = true
		return nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return result.Fail(result.ReasonUnreachable, err)
	}
	opts, err := prepareRewrite(snap, opts)
	if err != nil {
		return err
	}
	keys, clustered, err := snap.ClusteringColumns()
	if err != nil {
		return result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", loc, err))
	}
	if !clustered || len(keys) == 0 || len(snap.Metadata().PartitionColumns) > 0 {
		return result.Refuse(result.ReasonBadArgument, fmt.Errorf("table %s: a clustering share needs an unpartitioned table with clustering columns", loc))
	}
	logical, _, err := snap.ClusteringColumnsLogical()
	if err != nil {
		return result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", loc, err))
	}
	names := logicalNames(logical)
	target, err := targetFileSize(snap, opts)
	if err != nil {
		return result.Refuse(result.ReasonBadArgument, err)
	}
	rs, err := baseRegions(snap, logical, names, opts)
	if err != nil {
		return result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", loc, err))
	}
	sel, err := selectFiles(snap, logical, names, opts, target, rs, nil)
	if err != nil {
		return result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", loc, err))
	}
	files := ShareFiles(snap, sel.files, logical, s.Index, s.Count)
	say(progress, "%s: %d of the selection's %d files (%s)", s, len(files), len(sel.files), sel.describe())
	cube := newZCube(names, CurveHilbert, target)
	m := &scaleout.Manifest{RunID: s.RunID, Index: s.Index, Count: s.Count, Version: s.Version, Operation: "cluster",
		Params: map[string]string{"predicate": "[]", "zOrderBy": "[]", "clusterBy": cube.orderBy, "auto": "false", "isFull": fmt.Sprint(opts.Full)}}
	var rw *rewritten
	if len(files) > 0 {
		// Every share sees the same snapshot, so the same regions: each cuts its own rows along them
		// (a region gets a piece per share that has rows for it).
		if rw, err = rewriteFiles(ctx, snap, keys, files, nil, &cube, false, opts, target, progress, sel.alignment(files)); err != nil {
			return err
		}
		m.RowTrackingPreserved = rw.preserved
		m.Units = []scaleout.Unit{{Label: "zcube " + cube.id, Inputs: rw.removes, Adds: rw.adds, Rows: rowsOf(rw.adds)}}
		for _, f := range rw.removes {
			if f.DeletionVector != nil {
				m.Units[0].DVs++
				m.Units[0].Purged += f.DeletionVector.Cardinality
			}
		}
	}
	stored, existed, err := scaleout.WriteManifest(ctx, store, m)
	if err != nil || existed {
		if rw != nil {
			_ = rw.abort(ctx)
		}
	}
	if err != nil {
		return result.Fail(result.ReasonUnreachable, err)
	}
	why := "committed by the run's commit step"
	if existed {
		why = "another attempt of this share finished first; its manifest stands"
		rep.Share.Reused = true
	}
	rep.describe(stored, why)
	return nil
}

func rowsOf(adds []*delta.AddFile) int64 {
	var n int64
	for _, a := range adds {
		if r, ok := delta.NumRecords(a.Stats); ok {
			n += r
		}
	}
	return n
}

func (rep *ShareReport) describe(m *scaleout.Manifest, why string) {
	rep.Manifest = m
	sh := &rep.Share
	sh.Units = len(m.Units)
	var parts []string
	for _, u := range m.Units {
		sh.Inputs += len(u.Inputs)
		sh.Outputs += len(u.Adds)
		sh.BytesWritten += u.OutputBytes()
		sh.Rows += u.Rows
		parts = append(parts, u.Label)
	}
	rep.Op.FilesAdded, rep.Op.BytesAdded = int64(sh.Outputs), sh.BytesWritten
	rep.Op.Message = fmt.Sprintf("share %d/%d clustered %d files into %d (%d rows) %s; %s",
		sh.Index, sh.Count, sh.Inputs, sh.Outputs, sh.Rows, strings.Join(parts, ", "), why)
}
