package cli

import (
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/vacuum"
)

func init() { register(newMaintainCmd) }

// maintainFlags select the steps of a maintain run and carry each step's flags.
type maintainFlags struct {
	optimize, cluster, vacuum, checkpoint, logCleanup bool
	opt                                               optimizeFlags
	clu                                               clusterFlags
	vac                                               vacuumFlags
	share                                             shareFlags
	parallelism                                       int
}

func newMaintainCmd(mode Mode) *cobra.Command {
	var (
		out outputFlags
		f   = maintainFlags{clu: defaultClusterFlags()}
	)
	cmd := &cobra.Command{
		Use:   "maintain <table>",
		Short: "Run the selected maintenance steps in order: optimize, cluster, vacuum, checkpoint",
		Long: `maintain runs the maintenance steps selected by --optimize, --cluster, --vacuum and --checkpoint, in
that order, and reports one step each (this is the command the operator's Jobs run). Each step's
flags follow it; see optimize, vacuum and checkpoint for their meaning. On a clustered table
--optimize and --cluster both mean incremental clustering, run once. A step that fails does not stop
the later ones (a failed compaction is no reason to skip vacuum), but a step that finds the table
corrupt does: deleting or checkpointing a broken table can only make it worse. The run's outcome is
the worst of its steps, and the table facts in the result describe the table after the run.`,
		Example: `  deltakeeper maintain ./orders --optimize --vacuum --checkpoint --log-cleanup
  deltakeeper worker maintain s3://lake/events --optimize --target-file-size 268435456 --vacuum --retention 168h0m0s -o json --result-file /dev/termination-log`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, "maintain", mode, &out, false, func(e *env) (*result.Result, error) {
				if err := f.validate(cmd.Flags()); err != nil {
					return nil, err
				}
				return maintain(e, args[0], &f)
			})
		},
	}
	out.bind(cmd)
	fs := cmd.Flags()
	fs.BoolVar(&f.optimize, "optimize", false, "compact small files (incremental clustering on a clustered table; Z-order with --zorder-by)")
	f.opt.bind(fs)
	fs.BoolVar(&f.cluster, "cluster", false, "incrementally cluster a clustered table by its clustering columns")
	f.clu.bind(fs)
	fs.BoolVar(&f.vacuum, "vacuum", false, "delete unreferenced files older than the retention")
	f.vac.bind(fs, "vacuum-mode")
	fs.BoolVar(&f.checkpoint, "checkpoint", false, "write a checkpoint of the latest version")
	fs.BoolVar(&f.logCleanup, "log-cleanup", false, "after the checkpoint, delete log files older than delta.logRetentionDuration")
	fs.IntVar(&f.parallelism, "parallelism", 0, "goroutines rewriting, or deleting, at once (default: CPUs for rewrites, 32 deletes)")
	f.share.bind(fs)
	return cmd
}

// validate refuses flags given without their step, so that a misspelt Job spec fails loudly
// instead of silently running with defaults.
func (f *maintainFlags) validate(fs *pflag.FlagSet) error {
	orphan := func(on bool, step, flag string) error {
		if !on && flag != "" {
			return badArg("--%s belongs to %s; add %s or drop it", flag, step, step)
		}
		return nil
	}
	vacFlag := ""
	for _, n := range []string{"retention", "allow-short-retention", "vacuum-mode", "dry-run"} {
		if fs.Changed(n) {
			vacFlag = n
		}
	}
	logFlag := ""
	if f.logCleanup {
		logFlag = "log-cleanup"
	}
	if err := errors.Join(
		orphan(f.optimize, "--optimize", f.opt.changed(fs)),
		orphan(f.cluster || f.optimize, "--cluster", f.clu.changed(fs)),
		orphan(f.vacuum, "--vacuum", vacFlag),
		orphan(f.checkpoint, "--checkpoint", logFlag)); err != nil {
		return err
	}
	if !f.optimize && !f.cluster && !f.vacuum && !f.checkpoint {
		return badArg("nothing to run: select at least one of --optimize, --cluster, --vacuum, --checkpoint")
	}
	if _, err := f.share.check(fs); err != nil {
		return err
	}
	if f.share.enabled() && !f.optimize && !f.cluster {
		return badArg("--share splits the optimize or cluster step: add --optimize or --cluster")
	}
	return nil
}

func maintain(e *env, location string, f *maintainFlags) (*result.Result, error) {
	started := time.Now()
	f.opt.parallelism, f.vac.parallelism = f.parallelism, f.parallelism
	opts, zorder, err := f.opt.options(false)
	if err != nil {
		return nil, err
	}
	vopts, err := f.vac.options()
	if err != nil {
		return nil, err
	}
	tbl, err := openTable(e.ctx, location)
	if err != nil {
		return nil, err
	}
	if _, err := tbl.Latest(e.ctx); err != nil {
		return nil, tableError(err)
	}
	res := &result.Result{}
	var errs []error
	corrupt := false // a step found the table corrupt: the later steps must not touch it
	vacuumed := false
	step := func(op *result.Op, err error) {
		if err != nil {
			err = tableError(err)
			errs = append(errs, err)
			if op == nil {
				op = &result.Op{}
			}
			op.Outcome, op.Reason = result.Classify(err)
			op.Message = err.Error()
			corrupt = corrupt || op.Reason == result.ReasonCorruptTable
		}
		res.Ops = append(res.Ops, *op)
	}
	switch {
	case f.share.enabled():
		share, err := f.share.check(nil) // validated already; enabled, so fs is not read
		if err != nil {
			return nil, err
		}
		if len(zorder) > 0 || opts.BatchSize > 0 {
			return nil, badArg("--share runs a plan's share and commits once: --zorder-by and --batch-size do not apply")
		}
		op, sh, err := shareLayout(e, tbl, share, f.share.wait, opts, f.clu)
		step(op, err)
		if sh == nil {
			sh = &result.Share{Run: share.RunID, Index: share.Index, Count: share.Count, Version: share.Version}
		}
		res.Share = sh
		if f.vacuum && e.ctx.Err() == nil && !corrupt {
			// Every index vacuums its part of the table once the run is settled.
			shareVacuum(e, tbl, share, shareWaits{settle: f.share.wait, reports: started.Add(f.share.wait)}, vopts, err == nil, sh, step)
		}
		vacuumed = true
		if share.Index != 0 {
			// The other steps run once, after the commit, in share 0.
			describeTable(e.ctx, tbl, res)
			return res, maintainError(res, errs)
		}
	case f.optimize || f.cluster:
		maintainLayout(e, tbl, f, opts, zorder, step)
	}
	if f.vacuum && !vacuumed && e.ctx.Err() == nil && !corrupt {
		rep, err := vacuum.Run(e.ctx, tbl, vopts, func(s string) { e.progress.update("vacuum: %s", s) })
		var op *result.Op
		if rep != nil {
			op = &rep.Op
			fmt.Fprint(e.text, vacuumText(location, rep, vopts.DryRun))
		} else {
			op = &result.Op{Name: "vacuum"}
		}
		step(op, err)
	}
	if f.checkpoint && e.ctx.Err() == nil && !corrupt {
		ops, err := checkpointSteps(e.ctx, tbl, f.logCleanup, e.text)
		// checkpointSteps already classified its error into the op; count it once.
		res.Ops = append(res.Ops, ops...)
		if err != nil {
			errs = append(errs, err)
		}
	}
	describeTable(e.ctx, tbl, res)
	fmt.Fprint(e.text, maintainText(res))
	return res, maintainError(res, errs)
}

// maintainError is the run's error from its steps' errors, and marks a run of nothing-to-do steps.
func maintainError(res *result.Result, errs []error) error {
	if len(errs) > 0 {
		return worstError(res.Ops, errs)
	}
	if allNothingToDo(res.Ops) {
		res.Outcome = result.NothingToDo
	}
	return nil
}

// maintainLayout runs the optimize/cluster steps: one clustering run on a clustered table (whichever
// of the two flags asked for it), compaction or Z-order on an unclustered one, where --cluster has
// nothing to do. step records each op.
func maintainLayout(e *env, tbl *delta.Table, f *maintainFlags, opts optimize.Options, zorder []string, step func(*result.Op, error)) {
	notClustered := &result.Op{Name: "cluster", Outcome: result.NothingToDo,
		Message: "the table has no clustering columns; nothing to cluster (declare them with inspect --cluster-by)"}
	snap, err := loadForLayout(e.ctx, tbl, zorder)
	if err != nil {
		step(&result.Op{Name: "optimize"}, err)
		return
	}
	clustered, err := isClustered(snap)
	switch {
	case err != nil:
		step(&result.Op{Name: "optimize"}, err)
		return
	case !clustered && !f.optimize:
		step(notClustered, nil)
		return
	}
	op, rep, err := optimizeStep(e, snap, opts, zorder, f.clu)
	if op == nil {
		op = &result.Op{Name: "optimize"}
		if clustered {
			op.Name = "cluster"
		}
	}
	switch {
	case rep != nil:
		fmt.Fprint(e.text, optimizeText(tbl.Location(), rep))
	case err == nil:
		fmt.Fprint(e.text, stepText(tbl.Location(), op))
	}
	step(op, err)
	if !clustered && f.cluster {
		step(notClustered, nil)
	}
}

// worstError is the run's error: a failure if any step failed, else a refusal, carrying every step's
// message.
func worstError(ops []result.Op, errs []error) error {
	outcome, reason := result.Refused, ""
	for _, op := range ops {
		if op.Outcome == result.Failed && outcome != result.Failed {
			outcome, reason = result.Failed, op.Reason
		}
		if op.Outcome == outcome && reason == "" {
			reason = op.Reason
		}
	}
	var msgs []string
	for _, err := range errs {
		msgs = append(msgs, err.Error())
	}
	return &result.Error{Outcome: outcome, Reason: reason, Err: errors.New(strings.Join(msgs, "; "))}
}

func maintainText(res *result.Result) string {
	var b strings.Builder
	b.WriteString("steps:")
	for _, op := range res.Ops {
		fmt.Fprintf(&b, " %s %s;", op.Name, op.Outcome)
	}
	if t := res.Table; t != nil {
		fmt.Fprintf(&b, " table now at version %d: %d files (%d small), %s", t.Version, t.NumFiles, t.NumSmallFiles, humanBytes(t.SizeBytes))
	}
	return b.String() + "\n"
}
