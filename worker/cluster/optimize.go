package cluster

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime/debug"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/errclass"
	wprogress "github.com/deltakeeper/deltakeeper/worker/progress"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// Optimize clusters a table with liquid clustering, incrementally by default (selectFiles): the
// selected files' rows are rewritten sorted along the Hilbert curve (Z-order for one column) over the
// clustering columns into files of the target size, tagged as Spark's liquid clustering tags its
// ZCubes, and committed with dataChange=false. The returned Op reports the step; on error it carries
// the outcome and reason too (the error is a *result.Error).
func Optimize(ctx context.Context, tbl *delta.Table, snap *delta.Snapshot, opts Options, progress func(string)) (*result.Op, error) {
	st := newStep("cluster")
	op, finish := st.op, st.finish
	loc := tbl.Location()
	opts, err := prepareRewrite(snap, opts)
	if err != nil {
		return finish(err)
	}
	keys, clustered, err := snap.ClusteringColumns()
	if err != nil {
		return finish(result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", loc, err)))
	}
	if !clustered || len(keys) == 0 {
		return finish(result.Refuse(result.ReasonBadArgument, fmt.Errorf(
			"table %s has no clustering columns; set them with `deltakeeper alter %s --cluster-by a,b`, or use --zorder-by", loc, loc)))
	}
	if len(snap.Metadata().PartitionColumns) > 0 {
		return finish(result.Refuse(result.ReasonCorruptTable, fmt.Errorf(
			"table %s is both partitioned and clustered, which the protocol forbids; refusing to cluster it", loc)))
	}
	logical, _, err := snap.ClusteringColumnsLogical()
	if err != nil {
		return finish(result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", loc, err)))
	}
	names := logicalNames(logical)
	target, err := targetFileSize(snap, opts)
	if err != nil {
		return finish(result.Refuse(result.ReasonBadArgument, err))
	}
	rs, err := baseRegions(snap, logical, names, opts)
	if err != nil {
		return finish(result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", loc, err)))
	}
	sel, err := selectFiles(snap, logical, names, opts, target, rs, nil)
	if err != nil {
		return finish(result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", loc, err)))
	}
	esc, err := escalate(snap, logical, names, opts, target, sel)
	if err != nil {
		return finish(result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: %w", loc, err)))
	}
	mode := "incremental"
	if opts.Full {
		mode = "full"
	}
	if len(sel.files) == 0 {
		op.Outcome = result.NothingToDo
		op.Message = fmt.Sprintf("%s clustering by %s: every file is clustered and no group overlaps", mode, strings.Join(names, ", "))
		if sel.foreign > 0 {
			op.Message += fmt.Sprintf(" (%d files of another clustering provider left alone)", sel.foreign)
		}
		return finish(nil)
	}
	run := &liquidRun{tbl: tbl, keys: keys, logical: logical, names: names, mode: mode, opts: opts, target: target, progress: progress, esc: esc}
	if opts.DryRun {
		op.Outcome = result.Succeeded
		op.Message = "dry run: would rewrite " + run.describe(sel)
		return finish(nil)
	}
	wprogress.Start(ctx, "cluster", int64(len(sel.files)), sel.bytes())
	return finish(run.cluster(ctx, snap, sel, op))
}

// rewritten is what one or more rewrite jobs produced for one commit: the files to add and remove,
// whether row ids were preserved, and the outputs, to delete when the commit definitely did not land.
type rewritten struct {
	adds, removes []*delta.AddFile
	preserved     bool
	outs          []*table.RewriteOutputs
}

func (r *rewritten) merge(o *rewritten) {
	r.adds, r.removes = append(r.adds, o.adds...), append(r.removes, o.removes...)
	r.preserved = o.preserved // the same table, the same answer
	r.outs = append(r.outs, o.outs...)
}

// abort deletes every output (table.RewriteOutputs.Abort), also when ctx is already cancelled.
func (r *rewritten) abort(ctx context.Context) error {
	var errs []error
	for _, o := range r.outs {
		errs = append(errs, o.Abort(context.WithoutCancel(ctx)))
	}
	return errors.Join(errs...)
}

// rewriteFiles runs one rewrite job and returns its outputs, deleting them on failure, and the files
// to remove: the inputs, with the row count of their footers where their adds carry none (so that the
// commit's row check covers them, and a rewrite of only empty files can commit).
func rewriteFiles(ctx context.Context, snap *delta.Snapshot, keys [][]string, files []*delta.AddFile, pv delta.PartitionValues,
	cube *zcube, zorder bool, opts Options, target int64, progress func(string), align *alignment) (*rewritten, error) {
	wo := table.WriteOptions{TargetFileSize: target, DataChange: false}
	if cube != nil {
		wo.ClusteringProvider, wo.Tags = Provider, cube.tags()
	}
	out, err := table.NewRewriteOutputs(ctx, snap, pv, wo)
	if err == nil {
		var l *layout
		if l, err = newLayout(snap, out, keys); err == nil {
			return runRewrite(ctx, l, out, files, zorder, opts, progress, align)
		}
	}
	if errors.Is(err, delta.ErrUnsupportedTable) {
		return nil, result.Refuse(result.ReasonUnsupportedFeature, err)
	}
	return nil, result.Refuse(result.ReasonCorruptTable, err)
}

// runRewrite reads the inputs, sorts and writes them through out, and deletes every output when the
// rewrite fails.
func runRewrite(ctx context.Context, l *layout, out *table.RewriteOutputs, files []*delta.AddFile, zorder bool, opts Options,
	progress func(string), align *alignment) (*rewritten, error) {
	ins, err := openInputs(ctx, l, files)
	if err != nil {
		return nil, classifyIO(err)
	}
	defer withMemoryLimit(opts.MemoryLimit)()
	j := &rewriteJob{l: l, ins: ins, out: out, zorder: zorder, opts: opts, progress: progress, align: align}
	st, err := j.run(ctx)
	if err != nil {
		return nil, errors.Join(classifyIO(err), out.Abort(context.WithoutCancel(ctx)))
	}
	rw := &rewritten{adds: st.adds, preserved: l.rtID >= 0, outs: []*table.RewriteOutputs{out}}
	var done int64
	for _, f := range files {
		done += f.Size
	}
	wprogress.Advance(ctx, int64(len(files)), done)
	for _, in := range ins {
		f := in.add
		if _, ok := delta.NumRecords(f.Stats); !ok {
			f = f.WithNumRecords(in.rows)
		}
		rw.removes = append(rw.removes, f)
	}
	return rw, nil
}

// commitAndReport commits a finished rewrite and fills the Op; outputs are deleted when the commit
// definitely did not land.
func commitAndReport(ctx context.Context, tbl *delta.Table, snap *delta.Snapshot, op *result.Op, operation string,
	params map[string]string, rw *rewritten, plan string) error {
	inputs, adds := rw.removes, rw.adds
	c := &rewriteCommit{operation: operation, params: params, inputs: inputs, adds: adds, preserved: rw.preserved}
	v, err := c.commit(ctx, tbl, snap)
	if err != nil {
		var unknown *outcomeUnknown
		if !errors.As(err, &unknown) {
			return errors.Join(err, rw.abort(ctx))
		}
		return result.Fail(result.ReasonUnreachable, fmt.Errorf("%w; the new files were kept because the commit may have landed", err))
	}
	version := int64(v)
	op.Version = &version
	op.Outcome = result.Succeeded
	op.FilesRemoved, op.FilesAdded = int64(len(inputs)), int64(len(adds))
	for _, f := range inputs {
		op.BytesRemoved += f.Size
		if f.DeletionVector != nil {
			op.RowsPurged += f.DeletionVector.Cardinality
		}
	}
	for _, f := range adds {
		op.BytesAdded += f.Size
	}
	op.Message = plan
	return nil
}

// targetFileSize is opts.TargetFileSize, else delta.targetFileSize, else Delta's default.
func targetFileSize(snap *delta.Snapshot, opts Options) (int64, error) {
	if opts.TargetFileSize > 0 {
		return opts.TargetFileSize, nil
	}
	size, ok, err := snap.Properties().TargetFileSize()
	if err != nil {
		return 0, fmt.Errorf("table %s: %w", snap.Table().Location(), err)
	}
	if ok {
		return size, nil
	}
	return delta.DefaultTargetFileSize, nil
}

// withMemoryLimit makes the garbage collector work to keep the heap under the limit while a rewrite
// runs (unless the process already has a limit, e.g. GOMEMLIMIT); it returns the restore function.
func withMemoryLimit(limit int64) func() {
	prev := debug.SetMemoryLimit(-1)
	if prev != math.MaxInt64 {
		return func() {}
	}
	debug.SetMemoryLimit(limit)
	return func() { debug.SetMemoryLimit(prev) }
}

// classifyIO gives rewrite errors an outcome (worker/errclass decides for every command).
func classifyIO(err error) error { return errclass.Of(err) }

func say(progress func(string), format string, args ...any) {
	if progress != nil {
		progress(fmt.Sprintf(format, args...))
	}
}
