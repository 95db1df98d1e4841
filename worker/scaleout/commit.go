package scaleout

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/errclass"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// ScaleOutAppID is the txn appId of scale-out commits; its version is the run's pinned snapshot version.
// A run pinned at V commits at a version above V, so the next run pins a later one: the txn version only
// grows, and one entry serves every run of the table.
const ScaleOutAppID = "deltakeeper.scaleout"

// maxCommitRounds bounds the commit attempts after conflicting winners.
const maxCommitRounds = 10

// CommitReport is what the commit step did.
type CommitReport struct {
	Op    result.Op
	Share result.Share
}

// Commit validates the manifests of a run (nil for a share that wrote none) against the latest snapshot
// and commits every unit whose inputs are all still live in one OPTIMIZE transaction; the outputs of the
// other units are deleted (they are referenced nowhere) and named. After a conflicting winner it retries
// on the new snapshot with the units still valid there. A commit whose outcome is unknown keeps every
// output, since the log may reference them. A run the table already holds (txn ScaleOutAppID at the run's
// version or later) is not committed again and nothing is deleted.
func Commit(ctx context.Context, tbl *delta.Table, s Share, manifests []*Manifest) (*CommitReport, error) {
	start := time.Now()
	c := &committer{tbl: tbl, s: s, rep: &CommitReport{Share: result.Share{Run: s.RunID, Index: s.Index, Count: s.Count, Version: s.Version}}}
	c.rep.Op.Name = "optimize"
	for i, m := range manifests {
		if m == nil {
			c.rep.Share.Missing = append(c.rep.Share.Missing, i)
			continue
		}
		c.rep.Op.Name = m.Operation
		for u := range m.Units {
			c.units = append(c.units, &pending{share: i, unit: &m.Units[u]})
		}
	}
	err := c.run(ctx, manifests)
	c.finish(err)
	c.rep.Op.DurationMs = time.Since(start).Milliseconds()
	return c.rep, err
}

type pending struct {
	share   int
	unit    *Unit
	dropped string // why the unit was dropped, or ""
}

type committer struct {
	tbl   *delta.Table
	s     Share
	units []*pending
	rep   *CommitReport
}

func (c *committer) run(ctx context.Context, manifests []*Manifest) error {
	latest, err := c.tbl.Latest(ctx)
	if err != nil {
		return err
	}
	if c.committedIn(latest) {
		return nil
	}
	if len(c.units) == 0 {
		return nil
	}
	base, err := c.tbl.At(ctx, delta.Version(c.s.Version))
	if err != nil {
		return fmt.Errorf("read the run's pinned version %d to check the table did not change shape: %w", c.s.Version, err)
	}
	params := map[string]string{}
	preserved := true
	for _, m := range manifests {
		// A share with no units rewrote nothing: it says nothing about row tracking.
		if m != nil && len(m.Units) > 0 {
			maps.Copy(params, m.Params)
			preserved = preserved && m.RowTrackingPreserved
		}
	}
	c.dropOverlaps(ctx, latest)
	params["scaleOutRun"] = c.s.RunID
	params["scaleOutShares"] = strconv.Itoa(c.s.Count)
	cause := "a concurrent commit"
	for round := 0; ; round++ {
		if why := incompatible(base, latest); why != "" {
			c.dropAll(ctx, latest, "not committed: "+why)
			return result.Fail(result.ReasonConflict, fmt.Errorf("table %s: %s since version %d; the run's outputs were deleted, the next run plans again", c.tbl.Location(), why, c.s.Version))
		}
		live := c.keepLive(ctx, latest, cause)
		if len(live) == 0 {
			return nil
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("commit of run %s interrupted before it started: %w (the outputs stay for the next attempt)", c.s.RunID, context.Cause(ctx))
		}
		tx, err := latest.Begin(delta.OpRewrite, delta.TxnOptions{Operation: "OPTIMIZE", OperationParameters: params, RowTrackingPreserved: preserved})
		if err != nil {
			return result.Refuse(result.ReasonUnsupportedFeature, err)
		}
		if t, ok := tx.ReadTxn(ScaleOutAppID); ok && t.Version >= c.s.Version {
			c.markCommitted(t)
			return nil
		}
		c.build(tx, latest, live)
		tx.SetTxn(ScaleOutAppID, c.s.Version)
		res, err := tx.Commit(ctx)
		if err == nil {
			c.record(res, live)
			return nil
		}
		var unknown *delta.CommitOutcomeUnknownError
		var conflict *delta.ConflictError
		switch {
		case errors.As(err, &unknown):
			return result.Fail(result.ReasonUnreachable, fmt.Errorf("%w; the run's outputs were kept in case the commit landed (a repeated commit step finds out; VACUUM removes them if not)", err))
		case !errors.As(err, &conflict):
			c.dropAll(ctx, latest, "the commit failed: "+err.Error())
			return errclass.Of(err)
		case round+1 >= maxCommitRounds:
			c.dropAll(ctx, latest, "the commit lost to concurrent commits too often")
			return result.Fail(result.ReasonConflict, fmt.Errorf("giving up after %d conflicting commits: %w", round+1, err))
		}
		if latest, err = c.tbl.Latest(ctx); err != nil {
			return err
		}
		cause = fmt.Sprintf("version %d (%s)", conflict.WinnerVersion, conflict.WinnerOp)
	}
}

// dropOverlaps drops every unit with an input an earlier unit also consumes. The shares' plans are equal by
// construction; this is the guard that makes a mismatch (a planner that depended on something else than
// the version and the options) cost work, never rows: committing two rewrites of one file would duplicate
// its rows.
func (c *committer) dropOverlaps(ctx context.Context, latest *delta.Snapshot) {
	owner := map[delta.FileKey]int{}
	kept := map[string]bool{}
	for _, p := range c.units {
		clash := ""
		for _, f := range p.unit.Inputs {
			if s, ok := owner[f.Key()]; ok {
				clash = fmt.Sprintf("input %s is also in a unit of share %d: the shares' plans differ", f.Path, s)
				break
			}
		}
		if clash != "" {
			// Never delete a file a kept unit adds (two manifests naming the same outputs).
			for _, a := range p.unit.Adds {
				if kept[a.Path] {
					p.dropped = clash
				}
			}
			if p.dropped == "" {
				c.drop(ctx, latest, p, clash)
			}
			continue
		}
		for _, f := range p.unit.Inputs {
			owner[f.Key()] = p.share
		}
		for _, a := range p.unit.Adds {
			kept[a.Path] = true
		}
	}
}

// committedIn reports whether latest already holds this run's commit, and records it.
func (c *committer) committedIn(latest *delta.Snapshot) bool {
	t, ok := latest.Txn(ScaleOutAppID)
	if !ok || t.Version < c.s.Version {
		return false
	}
	c.markCommitted(t)
	return true
}

func (c *committer) markCommitted(t delta.SetTransaction) {
	c.rep.Share.AlreadyCommitted = true
	c.rep.Op.Message = fmt.Sprintf("the table already holds the commit of this run or a later one (txn %s version %d ≥ %d); nothing committed, nothing deleted",
		ScaleOutAppID, t.Version, c.s.Version)
}

// keepLive marks the units with an input that latest no longer holds (same path, deletion vector and
// size) as dropped, deleting their outputs, and returns the others.
func (c *committer) keepLive(ctx context.Context, latest *delta.Snapshot, cause string) []*pending {
	var live []*pending
	for _, p := range c.units {
		if p.dropped != "" {
			continue
		}
		if gone := missingInput(latest, p.unit); gone != "" {
			c.drop(ctx, latest, p, fmt.Sprintf("input %s was removed by %s", gone, cause))
			continue
		}
		live = append(live, p)
	}
	return live
}

func missingInput(snap *delta.Snapshot, u *Unit) string {
	for _, f := range u.Inputs {
		if cur, ok := snap.File(f.Key()); !ok || cur.Size != f.Size {
			return f.Path
		}
	}
	return ""
}

// build adds the removes and adds of the live units: removes carry latest's own actions, with the
// footer row count the share read where the add has no numRecords.
func (c *committer) build(tx *delta.Transaction, latest *delta.Snapshot, live []*pending) {
	var removed, added, removedBytes, addedBytes int64
	for _, p := range live {
		for _, f := range p.unit.Inputs {
			cur, _ := latest.File(f.Key())
			if _, ok := delta.NumRecords(cur.Stats); !ok {
				if n, ok := delta.NumRecords(f.Stats); ok {
					cur = cur.WithNumRecords(n)
				}
			}
			tx.RemoveKeepingRowCounts(false, cur)
			removed++
			removedBytes += cur.Size
		}
		tx.Add(p.unit.Adds...)
		added += int64(len(p.unit.Adds))
		addedBytes += p.unit.OutputBytes()
	}
	tx.SetMetric("numRemovedFiles", removed)
	tx.SetMetric("numAddedFiles", added)
	tx.SetMetric("numRemovedBytes", removedBytes)
	tx.SetMetric("numAddedBytes", addedBytes)
	tx.SetMetric("numBins", int64(len(live)))
}

func (c *committer) record(res *delta.CommitResult, live []*pending) {
	op := &c.rep.Op
	v := int64(res.Version)
	op.Version = &v
	for _, p := range live {
		op.FilesRemoved += int64(len(p.unit.Inputs))
		op.BytesRemoved += p.unit.InputBytes()
		op.FilesAdded += int64(len(p.unit.Adds))
		op.BytesAdded += p.unit.OutputBytes()
		op.RowsPurged += p.unit.Purged
	}
}

// drop marks a unit dropped and deletes its outputs unless latest references one (then the run is
// committed already and nothing may be deleted; committedIn catches that case first).
func (c *committer) drop(ctx context.Context, latest *delta.Snapshot, p *pending, why string) {
	p.dropped = why
	sh := &c.rep.Share
	referenced := false
	for _, a := range p.unit.Adds {
		if _, ok := latest.File(a.Key()); ok {
			referenced = true
		}
	}
	for _, a := range p.unit.Adds {
		sh.SupersededFiles++
		if len(sh.Superseded) < result.MaxSupersededNamed {
			sh.Superseded = append(sh.Superseded, a.Path)
		}
		if referenced {
			continue
		}
		key, err := delta.ObjectKey(c.tbl.Location(), a.Path)
		if err != nil {
			continue
		}
		dctx, cancel := context.WithTimeout(context.WithoutCancel(ctx), time.Minute)
		// A failed delete leaves an unreferenced file for VACUUM.
		_ = c.tbl.Store().Delete(dctx, key)
		cancel()
	}
}

func (c *committer) dropAll(ctx context.Context, latest *delta.Snapshot, why string) {
	for _, p := range c.units {
		if p.dropped == "" {
			c.drop(ctx, latest, p, why)
		}
	}
}

// finish fills the step's outcome and the shares' states.
func (c *committer) finish(err error) {
	op, sh := &c.rep.Op, &c.rep.Share
	dropped := map[int]bool{}
	committed := map[int]bool{}
	var firstDrop string
	for _, p := range c.units {
		if p.dropped != "" {
			dropped[p.share] = true
			sh.UnitsDropped++
			if firstDrop == "" {
				firstDrop = p.dropped
			}
		} else if op.Version != nil {
			sh.UnitsCommitted++
		}
	}
	if op.Version != nil {
		// Every share that reported and lost nothing is in the commit, also one whose part of the plan
		// was empty.
		for i := range c.s.Count {
			committed[i] = !slices.Contains(sh.Missing, i)
		}
	}
	for i := range c.s.Count {
		switch {
		case dropped[i]:
			sh.Dropped = append(sh.Dropped, i)
		case committed[i]:
			sh.Committed = append(sh.Committed, i)
		}
	}
	var msgs []string
	if err != nil {
		msgs = append(msgs, err.Error())
	}
	if op.Message != "" {
		msgs = append(msgs, op.Message)
	}
	if op.Version != nil {
		msgs = append(msgs, fmt.Sprintf("one commit of %d units from %d shares", sh.UnitsCommitted, len(sh.Committed)+len(sh.Dropped)))
	}
	if sh.UnitsDropped > 0 {
		msgs = append(msgs, fmt.Sprintf("%d units dropped (%s); their %d outputs are superseded", sh.UnitsDropped, firstDrop, sh.SupersededFiles))
	}
	if len(sh.Missing) > 0 {
		msgs = append(msgs, fmt.Sprintf("shares %v wrote no manifest in time: their work is left for the next run (any files they wrote are unreferenced; VACUUM removes them)", sh.Missing))
	}
	switch {
	case err != nil:
		op.Outcome, op.Reason = result.Classify(errclass.Of(err))
		var re *result.Error
		if errors.As(err, &re) {
			op.Outcome, op.Reason = re.Outcome, re.Reason
		}
	case op.Version != nil || sh.AlreadyCommitted:
		op.Outcome = result.Succeeded
	case len(sh.Missing) > 0 && len(sh.Missing) == c.s.Count:
		op.Outcome, op.Reason = result.Failed, result.ReasonInternal
		msgs = append(msgs, "no share finished")
	default:
		op.Outcome = result.NothingToDo
		if len(c.units) == 0 {
			msgs = append(msgs, "the plan had nothing to rewrite")
		}
	}
	slices.Sort(sh.Missing)
	op.Message = strings.Join(msgs, "; ")
}

// incompatible says why outputs written for base cannot be committed on latest: compaction's and
// clustering's rule (delta.RewriteIncompatibility), and the clustering columns, which a share's ZCubes
// were cut by.
func incompatible(base, latest *delta.Snapshot) string {
	if why := delta.RewriteIncompatibility(base, latest); why != "" {
		return why
	}
	ca, _, erra := base.ClusteringColumnsLogical()
	cb, _, errb := latest.ClusteringColumnsLogical()
	if erra != nil || errb != nil || !slices.EqualFunc(ca, cb, slices.Equal[[]string]) {
		return "the clustering columns changed"
	}
	return ""
}

// Committed reports whether snap already holds the commit of s's run (or of a later run): a share started
// after it (a retried pod) has nothing left to do, and must not rewrite its share again.
func Committed(snap *delta.Snapshot, s Share) bool {
	t, ok := snap.Txn(ScaleOutAppID)
	return ok && t.Version >= s.Version
}
