package cli

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/scaleout"
)

// DefaultShareWait is how long the committing share (index 0) waits for the other shares' manifests.
const DefaultShareWait = time.Hour

// shareFlags make optimize and maintain run one share of a scale-out run (worker/scaleout): an Indexed
// Job passes --share $(JOB_COMPLETION_INDEX)/N, the run id and the pinned version to every index.
type shareFlags struct {
	share     string
	runID     string
	atVersion int64
	wait      time.Duration
}

func (f *shareFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.share, "share", "", "run share i of N of a scale-out run (i/N): rewrite that part of the plan and write its manifest; share 0 then waits for the others and makes the one commit")
	fs.StringVar(&f.runID, "run-id", "", "the scale-out run's id, the same for every share (a Job name); with --share")
	fs.Int64Var(&f.atVersion, "at-version", -1, "the table version every share plans from; with --share")
	fs.DurationVar(&f.wait, "share-wait", DefaultShareWait, "how long share 0 waits for the other shares' manifests before committing those present; with --share")
}

func (f *shareFlags) enabled() bool { return f.share != "" }

// check refuses the share flags without --share, and a share without its run id and version.
func (f *shareFlags) check(fs *pflag.FlagSet) (scaleout.Share, error) {
	if !f.enabled() {
		for _, n := range []string{"run-id", "at-version", "share-wait"} {
			if fs.Changed(n) {
				return scaleout.Share{}, badArg("--%s belongs to --share; add --share i/N or drop it", n)
			}
		}
		return scaleout.Share{}, nil
	}
	i, n, err := scaleout.ParseShare(f.share)
	if err != nil {
		return scaleout.Share{}, badArg("%v", err)
	}
	s := scaleout.Share{RunID: f.runID, Index: i, Count: n, Version: f.atVersion}
	if err := s.Validate(); err != nil {
		return s, badArg("%v", err)
	}
	if f.wait <= 0 {
		return s, badArg("--share-wait %s: give a positive duration", f.wait)
	}
	return s, nil
}

// shareLayout runs the optimize step as share s: compaction, or clustering on a clustered table, of
// the plan made from version s.Version. Share 0 then waits for every manifest and commits the run; its
// op is the commit's (version, files added and removed), the others' op is their own rewrite.
func shareLayout(e *env, tbl *delta.Table, s scaleout.Share, wait time.Duration, opts optimize.Options, cf clusterFlags) (*result.Op, *result.Share, error) {
	latest, err := tbl.Latest(e.ctx)
	if err != nil {
		return nil, nil, tableError(err)
	}
	settled, err := scaleout.Settled(e.ctx, tbl.Store(), s)
	if err != nil {
		return nil, nil, tableError(err)
	}
	if scaleout.Committed(latest, s) || settled {
		// A pod retried after the run committed (and removed its manifests), or after index 0 settled it
		// without a commit: redoing the share would only write files nobody commits, and a retried index 0
		// must not commit manifests whose outputs the shares' vacuum may have deleted since.
		name := "optimize"
		if clustered, cerr := isClustered(latest); cerr == nil && clustered {
			name = "cluster"
		}
		msg := fmt.Sprintf("run %s is already committed; nothing left for share %d", s.RunID, s.Index)
		if settled && !scaleout.Committed(latest, s) {
			msg = fmt.Sprintf("run %s ended without a commit; nothing left for share %d", s.RunID, s.Index)
		}
		op := &result.Op{Name: name, Outcome: result.Succeeded, Message: msg}
		fmt.Fprintf(e.text, "%s %s: %s\n", name, tbl.Location(), op.Message)
		return op, &result.Share{Run: s.RunID, Index: s.Index, Count: s.Count, Version: s.Version, AlreadyCommitted: true}, nil
	}
	snap, err := tbl.At(e.ctx, delta.Version(s.Version))
	if err != nil {
		return nil, nil, tableError(fmt.Errorf("read version %d, which every share of run %s plans from: %w", s.Version, s.RunID, err))
	}
	clustered, err := isClustered(snap)
	if err != nil {
		return nil, nil, err
	}
	progress := func(msg string) { e.progress.update("share %d/%d: %s", s.Index, s.Count, msg) }
	var op result.Op
	var sh result.Share
	if clustered {
		copts, cerr := clusterOptions(cf, opts)
		if cerr != nil {
			return nil, nil, cerr
		}
		rep, rerr := cluster.RunShare(e.ctx, snap, copts, s, progress)
		op, sh, err = rep.Op, rep.Share, rerr
	} else {
		rep, rerr := optimize.RunShare(e.ctx, snap, opts, s, progress)
		op, sh, err = rep.Op, rep.Share, rerr
	}
	fmt.Fprintf(e.text, "%s %s: %s; %s\n", op.Name, tbl.Location(), op.Outcome, op.Message)
	if err != nil || s.Index != 0 {
		return &op, &sh, err
	}
	manifests, err := scaleout.WaitManifests(e.ctx, tbl.Store(), s, scaleout.WaitOptions{Timeout: wait, Progress: progress})
	if err != nil {
		return &op, &sh, tableError(err)
	}
	crep, err := scaleout.Commit(e.ctx, tbl, s, manifests)
	if err == nil && crep.Op.Version == nil && !crep.Share.AlreadyCommitted {
		// The commit step is over without a commit: the marker tells the shares they may vacuum and every
		// later attempt of the run not to commit (a commit is its own mark: the log's txn).
		if merr := scaleout.MarkSettled(e.ctx, tbl.Store(), s); merr != nil {
			err = result.Fail(result.ReasonUnreachable, fmt.Errorf("run %s: %w; the shares skip their vacuum until it is written", s.RunID, merr))
		}
	}
	commit := crep.Share
	commit.Units, commit.Inputs, commit.Outputs, commit.BytesWritten, commit.Rows, commit.Reused =
		sh.Units, sh.Inputs, sh.Outputs, sh.BytesWritten, sh.Rows, sh.Reused
	if err == nil && (crep.Op.Version != nil || commit.AlreadyCommitted || len(commit.Missing) == 0) {
		// The manifests served their purpose; a run directory left behind is only clutter.
		_ = scaleout.RemoveRun(e.ctx, tbl.Store(), s.RunID, s.Count)
	}
	// Manifests of runs that never committed are nobody's; a failure to remove them changes nothing.
	_, _ = scaleout.RemoveStaleRuns(e.ctx, tbl.Store(), time.Now().Add(-scaleout.StaleRunAge))
	fmt.Fprint(e.text, stepText(tbl.Location(), &crep.Op))
	return &crep.Op, &commit, err
}
