package optimize

import (
	"context"
	"fmt"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// defaultMaxReplans bounds the re-plans of one run after conflicts dropped bins.
const defaultMaxReplans = 3

// replanDropped rewrites again the files of bins that conflicts dropped, so that a run keeps making
// progress next to writers that touch some of its files: each round plans, on the latest snapshot and
// with the run's selection rules, the dropped bins' files that are still live there, rewrites them
// from that snapshot and commits them on it. Under contention each re-planned bin commits as soon as
// it is rewritten, so that one conflict costs one bin. It stops after opts.MaxReplans rounds (0 means
// defaultMaxReplans, negative none), when nothing is left, and before a round that would not fit in
// the context's deadline; an error is a failure of a round's rewrite or commit.
func replanDropped(ctx context.Context, tbl *delta.Table, cfg planConfig, opts Options, params map[string]string, rep *Report,
	progress func(string), lastRound time.Duration) error {
	limit := opts.MaxReplans
	if limit == 0 {
		limit = defaultMaxReplans
	}
	for len(rep.replan) > 0 {
		if rep.Replans >= limit {
			rep.replanStop = fmt.Sprintf("not re-planned again after %d rounds", rep.Replans)
			return nil
		}
		if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < lastRound {
			rep.replanStop = fmt.Sprintf("not re-planned: the run's deadline is %s away, the last round took %s",
				time.Until(deadline).Round(time.Millisecond), lastRound.Round(time.Millisecond))
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("compaction interrupted before re-planning %d files: %w", len(rep.replan), context.Cause(ctx))
		}
		start := time.Now()
		files := rep.replan
		rep.replan = nil
		latest, err := tbl.LatestWith(ctx, LoadOptions)
		if err != nil {
			return fmt.Errorf("re-plan dropped bins: %w", err)
		}
		rcfg := cfg
		rcfg.include = func(f *delta.AddFile) bool { return files[f.Key()] && (cfg.include == nil || cfg.include(f)) }
		if rcfg.footerRows, err = footerRowCounts(ctx, latest, rcfg); err != nil {
			return err
		}
		p, err := plan(latest, rcfg)
		if err != nil {
			return fmt.Errorf("table %s: re-plan dropped bins: %w", tbl.Location(), err)
		}
		if len(p.Bins) == 0 {
			// Nothing left worth compacting: the winners rewrote or deleted the dropped files.
			return nil
		}
		rep.Replans++
		n, _ := p.Files()
		rep.ReplannedFiles += n
		progress(fmt.Sprintf("re-planned %d files of dropped bins into %d bins on version %d", n, len(p.Bins), latest.Version()))
		ropts := opts
		ropts.BatchSize = 1
		rep.Batches += len(p.Bins)
		if err := execute(ctx, p, ropts, params, rep, progress); err != nil {
			return err
		}
		lastRound = time.Since(start)
	}
	return nil
}

// replanNote describes the re-plans for the step's message, or "".
func (r *Report) replanNote() string {
	if r.Replans == 0 {
		return r.replanStop
	}
	note := fmt.Sprintf("re-planned %d times: %d files of dropped bins rewritten again on newer snapshots", r.Replans, r.ReplannedFiles)
	if r.replanStop != "" {
		note += "; " + r.replanStop
	}
	return note
}
