package cli

import (
	"fmt"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/scaleout"
	"github.com/deltakeeper/deltakeeper/worker/vacuum"
)

// shareVacuum runs share s's part of the run's vacuum (worker/vacuum's Share), once the run is settled
// (worker/scaleout/vacuum.go): before that, a short retention would let this share delete another share's
// outputs that the commit is about to reference. Every index waits for the commit, vacuums its part and
// records it; index 0 then sums the parts into its result, which is the run's. layoutOK is false when this
// share's rewrite, or index 0's commit, failed: the Job retries the index, and the retry vacuums.
func shareVacuum(e *env, tbl *delta.Table, s scaleout.Share, waits shareWaits, opts vacuum.Options, layoutOK bool,
	sh *result.Share, step func(*result.Op, error)) {
	wait := waits.settle
	progress := func(msg string) { e.progress.update("share %d/%d: vacuum: %s", s.Index, s.Count, msg) }
	skip := func(why string) {
		sh.VacuumSkipped = why
		op := &result.Op{Name: "vacuum", Outcome: result.NothingToDo, Message: "vacuum skipped: " + why}
		fmt.Fprint(e.text, stepText(tbl.Location(), op))
		step(op, nil)
	}
	if !layoutOK {
		skip("the share's rewrite or the run's commit failed; its retry, or the next run, vacuums")
		return
	}
	settled, err := scaleout.WaitSettled(e.ctx, tbl, s, scaleout.WaitOptions{Timeout: wait, Progress: progress})
	if err != nil {
		step(&result.Op{Name: "vacuum"}, tableError(err))
		return
	}
	if !settled {
		skip(fmt.Sprintf("run %s was neither committed nor settled by index 0 within %s, so its outputs may still be committed", s.RunID, wait))
		return
	}
	opts.Share = &vacuum.Share{Index: s.Index, Count: s.Count, Version: delta.Version(s.Version)}
	rep, err := vacuum.Run(e.ctx, tbl, opts, progress)
	if rep == nil {
		step(&result.Op{Name: "vacuum"}, err)
		return
	}
	fmt.Fprint(e.text, vacuumText(tbl.Location(), rep, opts.DryRun))
	own := &scaleout.VacuumPart{Index: s.Index, FilesToDelete: rep.FilesToDelete, FilesDeleted: rep.FilesDeleted,
		BytesDeleted: rep.BytesDeleted, Directories: rep.Directories, Leftovers: rep.LeftoversRemoved, Outcome: string(rep.Op.Outcome)}
	sh.Vacuumed = []int{s.Index}
	sh.VacuumFilesDeleted, sh.VacuumBytesDeleted, sh.VacuumDirectories = own.FilesDeleted, own.BytesDeleted, own.Directories
	if err != nil {
		step(&rep.Op, err)
		return
	}
	if werr := scaleout.WriteVacuumPart(e.ctx, tbl.Store(), s.RunID, own); werr != nil {
		// Index 0 counts this share as not reported; what was deleted stays deleted.
		rep.Op.Message += "; " + werr.Error()
	}
	if s.Index == 0 {
		sumVacuumParts(e, tbl, s, max(time.Until(waits.reports), 0), own, opts.DryRun, &rep.Op, sh)
	}
	step(&rep.Op, nil)
}

// shareWaits bound a share's waits: for the run to settle, and (index 0) until when to wait for the other
// shares' vacuum reports — the end of its --share-wait from its start, so that the manifests' wait and this
// one together stay within the budget the Job's deadline was given (controllers/scaleout.go).
type shareWaits struct {
	settle  time.Duration
	reports time.Time
}

// sumVacuumParts waits for the other shares' vacuum reports and makes index 0's vacuum op and share block
// the run's totals.
func sumVacuumParts(e *env, tbl *delta.Table, s scaleout.Share, wait time.Duration, own *scaleout.VacuumPart, dryRun bool, op *result.Op, sh *result.Share) {
	parts, err := scaleout.WaitVacuumParts(e.ctx, tbl.Store(), s, scaleout.WaitOptions{Timeout: wait,
		Progress: func(msg string) { e.progress.update("share 0/%d: %s", s.Count, msg) }})
	if err != nil {
		op.Message += "; the other shares' vacuum reports: " + err.Error()
		return
	}
	parts[0] = own
	sh.Vacuumed = nil
	var toDelete, files, bytes, dirs int64
	var missing []int
	for i, p := range parts {
		if p == nil {
			missing = append(missing, i)
			continue
		}
		sh.Vacuumed = append(sh.Vacuumed, i)
		toDelete, files, bytes, dirs = toDelete+p.FilesToDelete, files+p.FilesDeleted, bytes+p.BytesDeleted, dirs+p.Directories
	}
	sh.VacuumFilesDeleted, sh.VacuumBytesDeleted, sh.VacuumDirectories = files, bytes, dirs
	op.FilesRemoved, op.BytesRemoved = files, bytes
	if toDelete > 0 && op.Outcome == result.NothingToDo {
		op.Outcome = result.Succeeded
	}
	verb := fmt.Sprintf("deleted %d of %d files (%d bytes)", files, toDelete, bytes)
	if dryRun {
		verb = fmt.Sprintf("dry run: would delete %d files", toDelete)
	}
	op.Message = fmt.Sprintf("run over %d shares: %s, %d directories listed; share 0: %s", s.Count, verb, dirs, op.Message)
	if len(missing) > 0 {
		op.Message += fmt.Sprintf("; shares %v did not report their vacuum within %s", missing, wait)
		return
	}
	// Every part is counted: the reports served their purpose.
	_ = scaleout.RemoveVacuumParts(e.ctx, tbl.Store(), s.RunID, s.Count)
}
