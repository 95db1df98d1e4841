package cluster

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// maxReplans bounds how often one clustering run re-plans after concurrent commits removed some of
// its inputs; each re-plan rewrites only what is left, so the attempts shrink under contention.
const maxReplans = 3

// inputRemovedError is a conflict that removed (or replaced) an input of the rewrite: the outputs
// cannot be committed, but the inputs still live in latest can be clustered again.
type inputRemovedError struct {
	latest *delta.Snapshot
	path   string
	err    error
}

func (e *inputRemovedError) Error() string {
	return fmt.Sprintf("input %s was removed or replaced by a concurrent commit: %v", e.path, e.err)
}

func (e *inputRemovedError) Unwrap() error { return e.err }

// liquidRun is one liquid clustering run: what it clusters by, and how its attempts went.
type liquidRun struct {
	tbl      *delta.Table
	keys     [][]string // physical paths of the clustering columns
	logical  [][]string
	names    []string
	mode     string
	opts     Options
	target   int64
	progress func(string)

	// esc is what the quality check escalated (nil: nothing); a re-plan keeps the escalated files
	// that are still live.
	esc *escalation

	replans      int
	droppedFiles int // inputs of abandoned attempts that were no longer live when re-planning
}

// cluster rewrites and commits sel, planned on snap. When a concurrent commit removed an input, the
// attempt's outputs are deleted and the run re-plans on the latest snapshot: the attempt's inputs that
// are still live there, selected by the same incremental or FULL rules, are rewritten from that
// snapshot and committed on it. It stops after maxReplans re-plans, when nothing is left to cluster,
// when the table's clustering changed, and before a round that would not fit in the context's deadline.
func (r *liquidRun) cluster(ctx context.Context, snap *delta.Snapshot, sel *selection, op *result.Op) error {
	for {
		start := time.Now()
		plan := r.describe(sel)
		say(r.progress, "%s", plan)
		cube := newZCube(r.names, CurveHilbert, r.target)
		rw, err := rewriteFiles(ctx, snap, r.keys, sel.files, nil, &cube, false, r.opts, r.target, r.progress, sel.alignment(sel.files))
		if err != nil {
			return r.annotate(err)
		}
		params := map[string]string{"predicate": "[]", "zOrderBy": "[]", "clusterBy": cube.orderBy, "auto": "false", "isFull": fmt.Sprint(r.opts.Full)}
		err = commitAndReport(ctx, r.tbl, snap, op, "OPTIMIZE", params, rw, plan)
		var gone *inputRemovedError
		if !errors.As(err, &gone) {
			if err == nil && r.replans > 0 {
				op.Message += r.replanNote()
			}
			return r.annotate(err)
		}
		op.ConflictFiles += int64(notLive(gone.latest, sel.files))
		if why := r.stop(ctx, snap, gone.latest, time.Since(start)); why != "" {
			return r.annotate(fmt.Errorf("%w; not re-planning: %s", err, why))
		}
		next, serr := r.replan(gone.latest, sel.files)
		if serr != nil {
			return r.annotate(errors.Join(err, serr))
		}
		if len(next.files) == 0 {
			return r.annotate(fmt.Errorf("%w; nothing of the run's plan is left to cluster (concurrent commits replaced its files); the next run plans the new files", err))
		}
		say(r.progress, "re-planning on version %d: %v", gone.latest.Version(), gone)
		snap, sel = gone.latest, next
	}
}

// notLive counts the files that are not live in snap any more (same path, deletion vector and size).
func notLive(snap *delta.Snapshot, files []*delta.AddFile) int {
	n := 0
	for _, f := range files {
		if cur, ok := snap.File(f.Key()); !ok || cur.Size != f.Size {
			n++
		}
	}
	return n
}

// stop says why the run must not re-plan on latest, or "".
func (r *liquidRun) stop(ctx context.Context, base, latest *delta.Snapshot, lastAttempt time.Duration) string {
	if r.replans >= maxReplans {
		return fmt.Sprintf("already re-planned %d times", r.replans)
	}
	if err := ctx.Err(); err != nil {
		return err.Error()
	}
	// The next attempt rewrites at most what the last one did: it must fit before the deadline.
	if deadline, ok := ctx.Deadline(); ok && time.Until(deadline) < lastAttempt {
		return fmt.Sprintf("the run's deadline is %s away, the last attempt took %s", time.Until(deadline).Round(time.Millisecond), lastAttempt.Round(time.Millisecond))
	}
	if latest.Metadata().SchemaString != base.Metadata().SchemaString {
		return "the table schema changed"
	}
	if len(latest.Metadata().PartitionColumns) > 0 {
		return "the table became partitioned"
	}
	logical, ok, err := latest.ClusteringColumnsLogical()
	if err != nil || !ok || !slices.Equal(logicalNames(logical), r.names) {
		return "the clustering columns changed"
	}
	return ""
}

// replan selects, on latest, the inputs of the abandoned attempt that are still live (same path,
// deletion vector and size), with the run's selection rules.
func (r *liquidRun) replan(latest *delta.Snapshot, inputs []*delta.AddFile) (*selection, error) {
	keys, _, err := latest.ClusteringColumns()
	if err != nil {
		return nil, result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", r.tbl.Location(), err))
	}
	live := map[delta.FileKey]bool{}
	var escalated []*delta.AddFile
	for _, f := range inputs {
		if cur, ok := latest.File(f.Key()); ok && cur.Size == f.Size {
			live[f.Key()] = true
			if r.esc != nil && r.esc.keys[f.Key()] {
				escalated = append(escalated, cur)
			}
		}
	}
	r.replans++
	r.droppedFiles += len(inputs) - len(live)
	r.keys = keys
	rs, err := baseRegions(latest, r.logical, r.names, r.opts)
	if err != nil {
		return nil, result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", r.tbl.Location(), err))
	}
	if r.esc != nil {
		rs = nil // an escalated run is planned without regions (escalate)
	}
	sel, err := selectFiles(latest, r.logical, r.names, r.opts, r.target, rs, func(f *delta.AddFile) bool { return live[f.Key()] })
	if err != nil {
		return nil, result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", r.tbl.Location(), err))
	}
	// Files the quality check escalated are well clustered on their own: the selection rules alone
	// would drop them, so the ones still live are carried over.
	for _, f := range escalated {
		if !slices.Contains(sel.files, f) {
			sel.files = append(sel.files, f)
			sel.escalated++
		}
	}
	return sel, nil
}

func (r *liquidRun) describe(sel *selection) string {
	plan := fmt.Sprintf("%s clustering by %s: %s (%d bytes)", r.mode, strings.Join(r.names, ", "), sel.describe(), sel.bytes())
	if r.esc != nil {
		plan += "; " + r.esc.describe(r.opts.MaxQualityGap)
	}
	return plan
}

func (r *liquidRun) replanNote() string {
	return fmt.Sprintf("; re-planned %d times after concurrent commits removed %d of its input files", r.replans, r.droppedFiles)
}

// annotate adds the re-plans to a failure's message, keeping its outcome and reason.
func (r *liquidRun) annotate(err error) error {
	if err == nil || r.replans == 0 {
		return err
	}
	return &annotated{err: err, note: r.replanNote()}
}

// annotated is an error with a note appended to its message; errors.As still finds the
// *result.Error inside, so the outcome and reason are the original's.
type annotated struct {
	err  error
	note string
}

func (e *annotated) Error() string { return e.err.Error() + e.note }
func (e *annotated) Unwrap() error { return e.err }
