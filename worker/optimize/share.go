package optimize

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/scaleout"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// ShareBins is share index of count of the plan's bins: balanced by bytes, ordered by partition and first
// file, so that every share computing it from the same plan gets the same partition of the bins.
func ShareBins(p *Plan, index, count int) []*Bin {
	parts := scaleout.Balance(len(p.Bins), count,
		func(i int) int64 { return p.Bins[i].Bytes },
		func(i int) string { return p.Bins[i].Partition + "\x00" + p.Bins[i].Files[0].Path })
	bins := make([]*Bin, 0, len(parts[index]))
	for _, i := range parts[index] {
		bins = append(bins, p.Bins[i])
	}
	return bins
}

// ShareReport is what one share of a scale-out compaction did.
type ShareReport struct {
	Op       result.Op
	Share    result.Share
	Manifest *scaleout.Manifest
}

// RunShare rewrites share s of the compaction planned from snap, which must be the snapshot at s.Version,
// and writes the share's manifest; it commits nothing (scaleout.Commit does, once for every share). A
// share whose manifest an earlier attempt already wrote does nothing: the plan is the same, so the work
// is too. On failure the outputs written so far are deleted; a killed share leaves them unreferenced
// for VACUUM.
func RunShare(ctx context.Context, snap *delta.Snapshot, opts Options, s scaleout.Share, progress func(string)) (*ShareReport, error) {
	start := time.Now()
	if progress == nil {
		progress = func(string) {}
	}
	rep := &ShareReport{Op: result.Op{Name: "optimize"}, Share: result.Share{Run: s.RunID, Index: s.Index, Count: s.Count, Version: s.Version}}
	defer func() { rep.Op.DurationMs = time.Since(start).Milliseconds() }()
	err := rep.run(ctx, snap, opts, s, progress)
	switch {
	case err != nil:
		rep.Op.Outcome, rep.Op.Reason = classify(err)
		rep.Op.Message = err.Error()
	case rep.Share.Units == 0:
		rep.Op.Outcome = result.NothingToDo
	default:
		rep.Op.Outcome = result.Succeeded
	}
	return rep, err
}

func (rep *ShareReport) run(ctx context.Context, snap *delta.Snapshot, opts Options, s scaleout.Share, progress func(string)) error {
	if err := s.Validate(); err != nil {
		return badArg("%v", err)
	}
	if int64(snap.Version()) != s.Version {
		return fmt.Errorf("%s was given the snapshot at version %d: %w", s, snap.Version(), errWrongSnapshot)
	}
	store := snap.Table().Store()
	if m, err := scaleout.ReadManifest(ctx, store, s.RunID, s.Index); err == nil {
		rep.reused(m, "an earlier attempt of this share finished")
		return nil
	} else if !errors.Is(err, storage.ErrNotFound) {
		return err
	}
	cfg, err := configure(snap, opts)
	if err != nil {
		return err
	}
	if cfg.footerRows, err = footerRowCounts(ctx, snap, cfg); err != nil {
		return err
	}
	p, err := plan(snap, cfg)
	if err != nil {
		return fmt.Errorf("table %s: plan compaction: %w", snap.Table().Location(), err)
	}
	bins := ShareBins(p, s.Index, s.Count)
	n, bytes := p.Files()
	progress(fmt.Sprintf("%s: %d of the plan's %d bins (%d files, %d bytes in all)", s, len(bins), len(p.Bins), n, bytes))
	done, err := rewriteShare(ctx, p, bins, opts, progress)
	if err != nil {
		return err
	}
	m := &scaleout.Manifest{RunID: s.RunID, Index: s.Index, Count: s.Count, Version: s.Version, Operation: "optimize",
		Params: operationParameters(snap, opts), RowTrackingPreserved: len(done) > 0}
	for _, rw := range done {
		m.RowTrackingPreserved = m.RowTrackingPreserved && rw.outs.RowTrackingPreserved()
		m.Units = append(m.Units, unitOf(rw))
	}
	stored, existed, err := scaleout.WriteManifest(ctx, store, m)
	if err != nil {
		abortRewritten(ctx, done)
		return err
	}
	if existed {
		// Another attempt of this share finished first: its outputs are the ones the manifest names.
		abortRewritten(ctx, done)
		rep.reused(stored, "another attempt of this share finished first")
		return nil
	}
	rep.describe(stored)
	return nil
}

var errWrongSnapshot = errors.New("every share must plan from the run's pinned version")

// unitOf is a rewritten bin as the manifest records it: the inputs as planned, with the footer's row
// count on those whose add has no numRecords.
func unitOf(rw *rewritten) scaleout.Unit {
	u := scaleout.Unit{Label: rw.bin.Dir, Adds: rw.adds, Rows: rw.rows, Purged: rw.purged, DVs: rw.bin.DVFiles}
	for _, f := range rw.bin.Files {
		if n, ok := rw.bin.footerRows[f.Key()]; ok {
			f = f.WithNumRecords(n)
		}
		u.Inputs = append(u.Inputs, f)
	}
	if u.Label == "" {
		u.Label = rw.bin.Partition
	}
	return u
}

func (rep *ShareReport) reused(m *scaleout.Manifest, why string) {
	rep.describe(m)
	rep.Share.Reused = true
	rep.Op.Message = why + "; its manifest stands"
}

func (rep *ShareReport) describe(m *scaleout.Manifest) {
	rep.Manifest = m
	sh := &rep.Share
	sh.Units = len(m.Units)
	for _, u := range m.Units {
		sh.Inputs += len(u.Inputs)
		sh.Outputs += len(u.Adds)
		sh.BytesWritten += u.OutputBytes()
		sh.Rows += u.Rows
	}
	rep.Op.FilesAdded, rep.Op.BytesAdded = int64(sh.Outputs), sh.BytesWritten
	rep.Op.Message = fmt.Sprintf("share %d/%d wrote %d files (%d bytes, %d rows) for %d bins; committed by the run's commit step",
		sh.Index, sh.Count, sh.Outputs, sh.BytesWritten, sh.Rows, sh.Units)
}

// rewriteShare rewrites bins, several at once, and returns them all or, on the first failure, deletes
// every output written and returns the error.
func rewriteShare(ctx context.Context, p *Plan, bins []*Bin, opts Options, progress func(string)) ([]*rewritten, error) {
	if len(bins) == 0 {
		return nil, nil
	}
	par := parallelism(opts.Parallelism)
	workers := min(par, len(bins))
	perBin := max(1, par/workers)
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	out := make([]*rewritten, len(bins))
	errs := make([]error, len(bins))
	next := make(chan int)
	var wg sync.WaitGroup
	var mu sync.Mutex
	finished := 0
	for range workers {
		wg.Go(func() {
			for i := range next {
				out[i], errs[i] = rewriteBin(ctx, p, bins[i], perBin)
				if errs[i] != nil {
					cancel()
					continue
				}
				mu.Lock()
				finished++
				progress(fmt.Sprintf("rewrote %d/%d bins of this share", finished, len(bins)))
				mu.Unlock()
			}
		})
	}
	for i := range bins {
		if ctx.Err() != nil {
			break
		}
		next <- i
	}
	close(next)
	wg.Wait()
	var done []*rewritten
	for _, rw := range out {
		if rw != nil {
			done = append(done, rw)
		}
	}
	var err error
	for _, e := range errs {
		// The first real failure, not the cancellations it caused in the other workers.
		if e != nil && (err == nil || errors.Is(err, context.Canceled) && !errors.Is(e, context.Canceled)) {
			err = e
		}
	}
	if err != nil || len(done) < len(bins) {
		abortRewritten(ctx, done)
		if err == nil {
			err = fmt.Errorf("share interrupted after %d of %d bins: %w", len(done), len(bins), context.Cause(ctx))
		}
		return nil, err
	}
	return done, nil
}

func abortRewritten(ctx context.Context, done []*rewritten) {
	for _, rw := range done {
		abort(ctx, rw)
	}
}
