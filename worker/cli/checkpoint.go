package cli

import (
	"context"
	"fmt"
	"io"
	"time"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	wprogress "github.com/deltakeeper/deltakeeper/worker/progress"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

func init() { register(newCheckpointCmd) }

func newCheckpointCmd(mode Mode) *cobra.Command {
	var (
		out     outputFlags
		cleanup bool
	)
	cmd := &cobra.Command{
		Use:   "checkpoint <table>",
		Short: "Write a checkpoint of the latest version; optionally delete expired log files",
		Long: `checkpoint writes a checkpoint for the table's latest version (so readers replay the log from there)
and updates _delta_log/_last_checkpoint. A version that already has a checkpoint is left alone.

--log-cleanup then deletes commits, checkpoints, checksums and sidecars older than the table's
delta.logRetentionDuration (30 days by default), the protocol's safe way: everything from the newest
checkpoint before the cutoff on is kept, so every version inside the retention stays readable and
time travel to it keeps working. It also removes the temp files (and, on S3, incomplete checkpoint
uploads) that interrupted deltakeeper writes left in _delta_log, once older than the cutoff.`,
		Example: `  deltakeeper checkpoint ./orders
  deltakeeper checkpoint s3://lake/events --log-cleanup -o json`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, "checkpoint", mode, &out, false, func(e *env) (*result.Result, error) {
				tbl, err := openTable(e.ctx, args[0])
				if err != nil {
					return nil, err
				}
				res := &result.Result{}
				ops, err := checkpointSteps(e.ctx, tbl, cleanup, e.text)
				res.Ops = ops
				if err == nil && allNothingToDo(ops) {
					res.Outcome = result.NothingToDo
				}
				describeTable(e.ctx, tbl, res)
				return res, err
			})
		},
	}
	out.bind(cmd)
	cmd.Flags().BoolVar(&cleanup, "log-cleanup", false, "also delete log files older than delta.logRetentionDuration")
	return cmd
}

// checkpointSteps runs the checkpoint step and, when asked, the log cleanup step. The returned error
// is the first failure, classified.
func checkpointSteps(ctx context.Context, tbl *delta.Table, cleanup bool, text io.Writer) ([]result.Op, error) {
	cp, err := checkpointOp(ctx, tbl, text)
	ops := []result.Op{cp}
	if err != nil || !cleanup {
		return ops, err
	}
	lc, err := logCleanupOp(ctx, tbl, text)
	return append(ops, lc), err
}

func checkpointOp(ctx context.Context, tbl *delta.Table, text io.Writer) (op result.Op, err error) {
	start := time.Now()
	op = result.Op{Name: "checkpoint"}
	defer func() { op.DurationMs = time.Since(start).Milliseconds() }()
	snap, err := tbl.Latest(ctx)
	if err == nil {
		err = snap.CheckOperation(delta.OpCheckpoint)
	}
	if err != nil {
		return failedOp(op, err)
	}
	v := int64(snap.Version())
	op.Version = &v
	if snap.CheckpointVersion() == snap.Version() {
		op.Outcome = result.NothingToDo
		op.Message = fmt.Sprintf("version %d already has a checkpoint", v)
		fmt.Fprintf(text, "checkpoint %s: %s\n", tbl.Location(), op.Message)
		return op, nil
	}
	wprogress.Start(ctx, "checkpoint", -1, -1)
	if err := tbl.Checkpoint(ctx, snap); err != nil {
		return failedOp(op, fmt.Errorf("write checkpoint of version %d: %w", v, err))
	}
	op.Outcome = result.Succeeded
	op.Message = fmt.Sprintf("checkpoint of version %d (%d live files) written", v, snap.NumFiles())
	fmt.Fprintf(text, "checkpoint %s: %s\n", tbl.Location(), op.Message)
	return op, nil
}

func logCleanupOp(ctx context.Context, tbl *delta.Table, text io.Writer) (op result.Op, err error) {
	start := time.Now()
	op = result.Op{Name: "logCleanup"}
	defer func() { op.DurationMs = time.Since(start).Milliseconds() }()
	res, err := tbl.CleanupLog(ctx)
	if res != nil {
		op.FilesRemoved = int64(len(res.Deleted))
		op.TempFilesRemoved, op.TempBytesRemoved = int64(len(res.Leftovers)), res.LeftoverBytes
	}
	if err != nil {
		return failedOp(op, fmt.Errorf("log cleanup (%d files deleted before the error): %w", op.FilesRemoved, err))
	}
	switch {
	case len(res.Deleted) == 0 && len(res.Leftovers) == 0:
		op.Outcome = result.NothingToDo
		op.Message = "nothing to delete: " + res.Skipped
	case len(res.Deleted) == 0:
		op.Outcome = result.Succeeded
		op.Message = "no expired log files: " + res.Skipped
	default:
		op.Outcome = result.Succeeded
		v := int64(res.OldestKept)
		op.Version = &v
		op.Message = fmt.Sprintf("deleted %d log files before checkpoint %d (retention cutoff %s)", len(res.Deleted), res.OldestKept, res.Cutoff.Format(time.DateOnly))
	}
	if n := len(res.Leftovers); n > 0 {
		op.Message += fmt.Sprintf("; removed %d temp files and uploads of interrupted writes (%s)", n, humanBytes(res.LeftoverBytes))
	}
	fmt.Fprintf(text, "log cleanup %s: %s\n", tbl.Location(), op.Message)
	return op, nil
}

// failedOp records a step's error in its op and returns the classified error.
func failedOp(op result.Op, err error) (result.Op, error) {
	err = tableError(err)
	op.Outcome, op.Reason = result.Classify(err)
	op.Message = err.Error()
	return op, err
}

func allNothingToDo(ops []result.Op) bool {
	for _, op := range ops {
		if op.Outcome != result.NothingToDo {
			return false
		}
	}
	return len(ops) > 0
}
