package vacuum

import (
	"context"
	"fmt"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Mode is how candidates are found.
type Mode string

// Modes.
const (
	Full Mode = "full" // list storage
	Lite Mode = "lite" // expired tombstones of the log only
)

// DefaultParallelism is the number of concurrent deletes: deleting is request latency, not CPU.
const DefaultParallelism = 32

// Options control a vacuum.
type Options struct {
	// Retention keeps unreferenced files younger than this; nil means the table's
	// delta.deletedFileRetentionDuration (7 days by default).
	Retention *time.Duration
	// AllowShortRetention permits a retention below the table's.
	AllowShortRetention bool
	Mode                Mode // Full when empty
	DryRun              bool
	// Parallelism is the number of concurrent deletes; 0 means DefaultParallelism.
	Parallelism int
	// Now is the clock of the retention horizon; time.Now when nil.
	Now func() time.Time
	// SampleSize is how many of the files to delete the report lists (dry runs show them).
	SampleSize int
	// Share, when set, limits a full-mode vacuum to one share of a scale-out run (shares.go).
	Share *Share
}

// Report describes a vacuum.
type Report struct {
	Op        result.Op
	Mode      Mode
	Version   delta.Version // the snapshot whose references were kept
	Retention time.Duration
	Cutoff    time.Time // files last modified (full) or removed (lite) before it may go
	// FilesToDelete/BytesToDelete are the candidates; FilesDeleted/BytesDeleted what was deleted.
	FilesToDelete, FilesDeleted int64
	BytesToDelete, BytesDeleted int64
	// Directories is the number of directories scanned (full mode); KeptRecent counts unreferenced
	// files kept because they are younger than the retention.
	Directories, KeptRecent int64
	// Leftovers (full mode) are the temp files and incomplete uploads of interrupted deltakeeper
	// writes in data directories whose last activity is older than the cutoff (leftovers.go), with
	// their bytes; LeftoversRemoved and LeftoverBytesRemoved what was removed; KeptRecentLeftovers the
	// younger ones, which may belong to writes still in progress.
	Leftovers, LeftoversRemoved         int64
	LeftoverBytes, LeftoverBytesRemoved int64
	KeptRecentLeftovers                 int64
	// Sample lists the first SampleSize candidates (storage keys).
	Sample []string
	// Share is the part of the table this vacuum listed, when it ran as one share of a scale-out run.
	Share *Share
}

// Run vacuums the latest snapshot of tbl.
func Run(ctx context.Context, tbl *delta.Table, opts Options, progress func(string)) (*Report, error) {
	start := time.Now()
	if progress == nil {
		progress = func(string) {}
	}
	now := time.Now
	if opts.Now != nil {
		now = opts.Now
	}
	mode := opts.Mode
	if mode == "" {
		mode = Full
	}
	if mode != Full && mode != Lite {
		return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("vacuum mode %q: use full or lite", mode))
	}
	snap, err := tbl.Latest(ctx)
	if err != nil {
		return nil, err
	}
	// vacuumProtocolCheck: understand every writer feature before deleting anything.
	if err := snap.CheckOperation(delta.OpVacuum); err != nil {
		return nil, err
	}
	retention, err := checkRetention(snap, opts)
	if err != nil {
		return nil, err
	}
	rep := &Report{Op: result.Op{Name: "vacuum"}, Mode: mode, Version: snap.Version(), Retention: retention,
		Cutoff: now().Add(-retention)}
	defer func() { rep.Op.DurationMs = time.Since(start).Milliseconds() }()

	refs, err := referenced(snap, rep.Cutoff)
	if err != nil {
		return rep, err
	}
	plan, err := sharePlan(ctx, tbl, snap, opts.Share)
	if err != nil {
		return rep, err
	}
	rep.Share = opts.Share
	var cands []candidate
	var leftovers []storage.Leftover
	if mode == Full {
		cands, err = listCandidates(ctx, snap, plan, refs, rep, progress)
		if err == nil && plan.ownsRest() {
			leftovers, err = findLeftovers(ctx, snap, rep)
		}
	} else {
		cands, err = tombstoneCandidates(ctx, snap, plan, refs, opts.Parallelism)
	}
	if err != nil {
		return rep, err
	}
	for i, c := range cands {
		rep.FilesToDelete++
		rep.BytesToDelete += c.size
		if i < opts.SampleSize {
			rep.Sample = append(rep.Sample, c.key)
		}
	}
	if opts.DryRun || len(cands) == 0 && len(leftovers) == 0 {
		rep.summarize(opts.DryRun)
		return rep, nil
	}
	err = deleteAll(ctx, tbl.Store(), cands, opts.Parallelism, rep, progress)
	if err == nil {
		err = removeLeftovers(ctx, tbl.Store(), leftovers, opts.Parallelism, rep)
	}
	rep.summarize(false)
	if err != nil {
		rep.Op.Outcome, rep.Op.Reason = result.Failed, result.ReasonUnreachable
		rep.Op.Message = err.Error() + "; " + rep.Op.Message
	}
	return rep, err
}

// sharePlan is the part of the key space this vacuum lists: all of it, or the share's part of the plan
// made from the share's pinned version.
func sharePlan(ctx context.Context, tbl *delta.Table, latest *delta.Snapshot, s *Share) (*listPlan, error) {
	if s == nil {
		return planShares(latest, 0, 1)
	}
	if s.Count < 1 || s.Index < 0 || s.Index >= s.Count {
		return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("vacuum share %d/%d: the index must be 0..count-1", s.Index, s.Count))
	}
	base := latest
	if s.Version != latest.Version() {
		var err error
		if base, err = tbl.At(ctx, s.Version); err != nil {
			return nil, fmt.Errorf("read version %d, which every vacuum share splits the table by: %w", s.Version, err)
		}
	}
	return planShares(base, s.Index, s.Count)
}

// checkRetention resolves the retention and refuses one shorter than the table's unless allowed
// (Spark's retentionDurationCheck).
func checkRetention(snap *delta.Snapshot, opts Options) (time.Duration, error) {
	table, err := snap.Properties().DeletedFileRetention()
	if err != nil {
		return 0, result.Refuse(result.ReasonBadArgument, fmt.Errorf("table %s: %w; fix %s or pass --retention",
			snap.Table().Location(), err, delta.PropDeletedFileRetention))
	}
	if opts.Retention == nil {
		return table, nil
	}
	r := *opts.Retention
	switch {
	case r < 0:
		return 0, result.Refuse(result.ReasonBadArgument, fmt.Errorf("retention %s is negative", r))
	case r < table && !opts.AllowShortRetention:
		return 0, result.Refuse(result.ReasonBadArgument, fmt.Errorf(
			"retention %s is shorter than the table's %s (%s): readers of older snapshots and writers still committing may need those files; "+
				"pass --allow-short-retention if no such reader or writer exists", r, delta.PropDeletedFileRetention, table))
	}
	return r, nil
}

func (r *Report) summarize(dryRun bool) {
	op := &r.Op
	op.FilesRemoved, op.BytesRemoved = r.FilesDeleted, r.BytesDeleted
	op.TempFilesRemoved, op.TempBytesRemoved = r.LeftoversRemoved, r.LeftoverBytesRemoved
	switch {
	case r.FilesToDelete == 0 && r.Leftovers == 0:
		op.Outcome = result.NothingToDo
		op.Message = fmt.Sprintf("no unreferenced files older than %s (%s mode)", r.Retention, r.Mode)
	case dryRun:
		op.Outcome = result.Succeeded
		op.Message = fmt.Sprintf("dry run: would delete %d files (%d bytes) older than %s (%s mode)", r.FilesToDelete, r.BytesToDelete, r.Retention, r.Mode)
	default:
		op.Outcome = result.Succeeded
		op.Message = fmt.Sprintf("deleted %d of %d files (%d bytes) older than %s (%s mode)", r.FilesDeleted, r.FilesToDelete, r.BytesDeleted, r.Retention, r.Mode)
	}
	switch {
	case r.Leftovers == 0:
	case dryRun:
		op.Message += fmt.Sprintf("; would remove %d temp files and uploads of interrupted writes (%d bytes)", r.Leftovers, r.LeftoverBytes)
	default:
		op.Message += fmt.Sprintf("; removed %d of %d temp files and uploads of interrupted writes (%d bytes)", r.LeftoversRemoved, r.Leftovers, r.LeftoverBytesRemoved)
	}
	if r.Mode == Full {
		op.Message += fmt.Sprintf(", %d directories scanned", r.Directories)
	}
}
