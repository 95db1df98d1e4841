package ingest

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/ingest/state"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// PropTxnRetention is the table property after which checkpoints drop txn actions.
const PropTxnRetention = "delta.setTransactionRetentionDuration"

// runner is one run of a stream.
type runner struct {
	o     Options
	tbl   *delta.Table
	src   *source.Source
	ckpt  storage.Store
	st    *state.Stream
	appID string
	// frozen is AvailableNow's listing taken at start (oldest first), minus what batches took.
	frozen []listed
	froze  bool
	rep    *Report
}

// listed is a new file with the key listed just before it, which is where an incremental listing
// must start for the file to be seen again.
type listed struct {
	f    source.File
	prev string
}

// Run runs batches of the stream into tbl: the pending batch first, then new ones, until the source
// has nothing new, or MaxBatches / TimeBudget are spent (AvailableNow: until everything listed at
// start is committed). The report holds every committed batch even when an error stops the run.
func Run(ctx context.Context, tbl *delta.Table, opts Options) (*Report, error) {
	o, err := opts.withDefaults()
	if err != nil {
		return nil, result.Refuse(result.ReasonBadArgument, err)
	}
	srcStore, err := storage.Open(ctx, o.Source, o.Storage)
	if err != nil {
		return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("source %s: %w", o.Source, err))
	}
	ckptURI := o.Checkpoint
	if ckptURI == "" {
		ckptURI = storage.URI(tbl.Store(), "_deltakeeper/streams/"+DefaultCheckpointName(srcStore.Location(), o.Format.Format))
	}
	ckpt, err := storage.Open(ctx, ckptURI, o.Storage)
	if err != nil {
		return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("checkpoint %s: %w", ckptURI, err))
	}
	var skip []string
	if k, ok := storage.Relative(srcStore, ckpt.Location()); ok {
		skip = append(skip, k)
	}
	if k, ok := storage.Relative(srcStore, tbl.Location()); ok {
		skip = append(skip, k)
	}
	r := &runner{o: o, tbl: tbl, src: source.New(srcStore, skip...), ckpt: ckpt}
	snap, err := latest(ctx, tbl)
	if err != nil {
		return nil, err
	}
	if err := checkTable(snap); err != nil {
		return nil, err
	}
	var baseline func() ([]source.File, error)
	if o.ExcludeExistingFiles {
		baseline = func() ([]source.File, error) {
			var files []source.File
			for f, err := range r.src.List(ctx, "") {
				if err != nil {
					return nil, err
				}
				files = append(files, f)
			}
			return files, nil
		}
	}
	r.st, err = state.Open(ctx, ckpt, state.Metadata{Source: srcStore.Location(), Format: o.Format.Format}, baseline)
	if err != nil {
		return nil, stateError(err)
	}
	r.st.SetCompactEvery(o.StateCompactEvery)
	r.appID = r.st.Meta.ID
	r.rep = &Report{StreamID: r.appID, Checkpoint: ckpt.Location(), LastBatchID: r.st.LastCommitted, Version: -1}
	err = r.loop(ctx)
	if berr := r.backlog(ctx); err == nil {
		err = berr
	}
	r.rep.LastBatchID = r.st.LastCommitted
	if s, lerr := latest(ctx, tbl); lerr == nil && s != nil {
		r.rep.Version = int64(s.Version())
	}
	return r.rep, err
}

// stateError marks a corrupt checkpoint as a refusal.
func stateError(err error) error {
	if errors.Is(err, state.ErrCorruptState) {
		return result.Refuse(result.ReasonCorruptTable, err)
	}
	if errors.Is(err, source.ErrMissingPrefix) {
		return result.Refuse(result.ReasonBadArgument, err)
	}
	return err
}

// latest is the table's latest snapshot, or nil when it does not exist yet.
func latest(ctx context.Context, tbl *delta.Table) (*delta.Snapshot, error) {
	snap, err := tbl.Latest(ctx)
	var vnf *delta.VersionNotFoundError
	if errors.As(err, &vnf) && vnf.Latest == delta.NoVersion {
		return nil, nil
	}
	return snap, err
}

// checkTable refuses tables an append cannot serve: features the gate refuses, and a txn retention
// that could drop the stream's txn before the stream stops needing it (the stream keeps relying on
// its txn for as long as it exists, so any expiry could make a finished batch look unfinished).
func checkTable(snap *delta.Snapshot) error {
	if snap == nil {
		return nil
	}
	if err := snap.CheckOperation(delta.OpAppend); err != nil {
		return result.Refuse(result.ReasonUnsupportedFeature, err)
	}
	if v, ok := snap.Metadata().Configuration[PropTxnRetention]; ok {
		return result.Refuse(result.ReasonUnsupportedFeature, fmt.Errorf(
			"table %s sets %s=%s: checkpoints would drop the stream's txn actions after that time, and a batch whose commit landed but was not yet marked done would then be ingested twice; unset the property to ingest exactly once",
			snap.Table().Location(), PropTxnRetention, v))
	}
	return nil
}

func (r *runner) loop(ctx context.Context) error {
	start := r.o.Now()
	for n := 0; ; n++ {
		if err := ctx.Err(); err != nil {
			return err
		}
		off := r.st.Pending
		replayed := off != nil
		if off == nil {
			if !r.o.AvailableNow && (n >= r.o.MaxBatches || (r.o.TimeBudget > 0 && r.o.Now().Sub(start) >= r.o.TimeBudget)) {
				return nil
			}
			plan, err := r.next(ctx)
			if err != nil || plan == nil {
				return err
			}
			if stale, err := r.stale(ctx); err != nil {
				return err
			} else if stale {
				continue // another process of the stream moved on: the state was reloaded
			}
			if off, err = r.st.Plan(ctx, *plan); err != nil {
				return err
			}
			replayed = !off.PlannedAt.Equal(plan.PlannedAt) || len(off.Files) != len(plan.Files)
		}
		crashPoint("planned")
		br, err := r.execute(ctx, off)
		if err != nil {
			return err
		}
		br.Replayed = br.Replayed || replayed
		crashPoint("after-commit")
		if err := r.st.MarkCommitted(ctx, state.Commit{BatchID: off.BatchID, Version: br.Version, Rows: br.Rows, Skipped: br.Skipped}); err != nil {
			return err
		}
		crashPoint("marked")
		if _, err := r.st.MaybeCompact(ctx); err != nil {
			r.o.Logger.Warn("Stream state compaction failed; it is retried after the next batch", "checkpoint", r.ckpt.Location(), "err", err)
		}
		r.rep.Batches = append(r.rep.Batches, *br)
		if r.o.Progress != nil {
			r.o.Progress(*br)
		}
	}
}

// stale reports (and repairs) a state that another process of the stream has moved past: the table
// holds a txn for the batch this process would plan next. The state is then loaded again.
func (r *runner) stale(ctx context.Context) (bool, error) {
	snap, err := latest(ctx, r.tbl)
	if err != nil || snap == nil {
		return false, err
	}
	if t, ok := snap.Txn(r.appID); !ok || t.Version <= r.st.LastCommitted {
		return false, nil
	}
	st, err := state.Open(ctx, r.ckpt, r.st.Meta, nil)
	if err != nil {
		return false, stateError(err)
	}
	st.SetCompactEvery(r.o.StateCompactEvery)
	r.st = st
	return true, nil
}

// next plans the next batch from the source (nil when nothing is new).
func (r *runner) next(ctx context.Context) (*state.Offsets, error) {
	var pending []listed
	var listedMax string
	sinceFull := 0
	if r.o.AvailableNow {
		if !r.froze {
			all, max, err := r.list(ctx, true)
			if err != nil {
				return nil, err
			}
			r.frozen, r.froze, listedMax = all, true, max
		}
		r.frozen = slices.DeleteFunc(r.frozen, func(l listed) bool { return r.st.Taken.Contains(l.f, r.o.AllowOverwrites) })
		pending = r.frozen
		if listedMax == "" {
			listedMax = r.st.MaxKey
		}
	} else {
		full := r.st.MaxKey == "" || r.st.SinceFull+1 >= r.o.FullListingEvery
		var err error
		pending, listedMax, err = r.list(ctx, full)
		if err != nil {
			return nil, err
		}
		if !full {
			sinceFull = r.st.SinceFull + 1
			if len(pending) == 0 {
				// Nothing after the position: look everywhere once, so that a late file with a
				// smaller key is never reported as "no backlog".
				if pending, listedMax, err = r.list(ctx, true); err != nil {
					return nil, err
				}
				sinceFull = 0
			}
		}
	}
	if len(pending) == 0 {
		return nil, nil
	}
	files := make([]source.File, len(pending))
	for i, l := range pending {
		files[i] = l.f
	}
	take := Admit(files, Limits{MaxFiles: r.o.MaxFilesPerTrigger, MaxBytes: r.o.MaxBytesPerTrigger})
	// Incremental listing resumes after the last key below every file still pending.
	pos := listedMax
	for _, l := range pending[take:] {
		if l.prev < pos {
			pos = l.prev
		}
	}
	snap, err := latest(ctx, r.tbl)
	if err != nil {
		return nil, err
	}
	plan := &state.Offsets{Files: files[:take], MaxKey: pos, SinceFull: sinceFull, PlannedAt: r.o.Now().UTC()}
	if snap != nil {
		plan.Schema = snap.Metadata().SchemaString
	}
	return plan, nil
}

// list returns the source's files not yet taken, oldest first, and the largest key listed.
func (r *runner) list(ctx context.Context, full bool) ([]listed, string, error) {
	startAfter := ""
	if !full {
		startAfter = r.st.MaxKey
	}
	var out []listed
	prev, maxKey := startAfter, startAfter
	for f, err := range r.src.List(ctx, startAfter) {
		if err != nil {
			return nil, "", stateError(err)
		}
		if !r.st.Taken.Contains(f, r.o.AllowOverwrites) {
			out = append(out, listed{f: f, prev: prev})
		}
		prev, maxKey = f.Key, max(maxKey, f.Key)
	}
	slices.SortFunc(out, func(a, b listed) int {
		if c := a.f.ModTime.Compare(b.f.ModTime); c != 0 {
			return c
		}
		return strings.Compare(a.f.Key, b.f.Key)
	})
	return out, maxKey, nil
}

// backlog fills the report's backlog: AvailableNow's frozen listing, else a fresh listing.
func (r *runner) backlog(ctx context.Context) error {
	var pending []listed
	if r.o.AvailableNow && r.froze {
		pending = slices.DeleteFunc(r.frozen, func(l listed) bool { return r.st.Taken.Contains(l.f, r.o.AllowOverwrites) })
	} else {
		var err error
		// From the incremental position: every key up to it is taken or planned (late files below it
		// are found by the next full listing), so the backlog costs no full listing.
		if pending, _, err = r.list(ctx, r.st.MaxKey == ""); err != nil {
			return err
		}
	}
	files := make([]source.File, len(pending))
	for i, l := range pending {
		files[i] = l.f
	}
	r.rep.Backlog = backlogOf(files, r.o.Now())
	return nil
}
