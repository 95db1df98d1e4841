package cli

import (
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deltakeeper/deltakeeper/worker/bytesize"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

func init() { register(newOptimizeCmd) }

func newOptimizeCmd(mode Mode) *cobra.Command {
	var (
		out    outputFlags
		f      optimizeFlags
		cf     = defaultClusterFlags()
		sf     shareFlags
		dryRun bool
	)
	cmd := &cobra.Command{
		Use:   "optimize <table>",
		Short: "Compact small files (bin-packing), or Z-order / incrementally cluster the table",
		Long: `optimize rewrites small files into files of the target size, as Delta's OPTIMIZE does: files below
--min-file-size, files whose deletion vectors hide more than --max-deleted-rows-ratio of their rows,
and files with deletion vectors but no row count are grouped by partition and packed into bins of at
most --target-file-size; each bin becomes one new file without deletion vectors. The rows of the
table do not change (the commit says dataChange=false), so readers, streams and concurrent appends
are unaffected. --batch-size commits every N bins, so an interrupted run keeps its progress. With
row tracking enabled every row keeps its stable row id and row commit version: they are written into
the materialized columns the table names (delta.rowTracking.materialized*ColumnName), as Spark does.

On a clustered table optimize runs incremental liquid clustering instead: it rewrites only unclustered,
small and deletion-heavy files plus groups of clustered files stacked over a common region, sorted along a
Hilbert curve (Z-order for one column); --full (or --incremental=false) reclusters everything, and
--auto-recluster, --min-offending-files and --min-overlap-threshold tune the overlap rule. When the layout
a run would leave is forecast more than --max-quality-gap (default 0.05) below what --full reaches, the
drifted ZCubes are reclustered too (a partial FULL) and the step's message says which. Sorting beyond
--memory-limit spills to --tmp-dir. --zorder-by a,b Z-orders the selected partitions of an unclustered table.`,
		Example: `  deltakeeper optimize ./orders
  deltakeeper optimize ./orders --dry-run
  deltakeeper optimize s3://lake/events --where "day >= '2024-06-01'" --target-file-size 256mb --batch-size 20`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, "optimize", mode, &out, false, func(e *env) (*result.Result, error) {
				if sf.enabled() || cmd.Flags().Changed("run-id") || cmd.Flags().Changed("at-version") {
					return optimizeShareCommand(e, args[0], &f, cf, &sf, cmd.Flags(), dryRun)
				}
				return optimizeCommand(e, args[0], &f, cf, cmd.Flags(), dryRun)
			})
		},
	}
	out.bind(cmd)
	f.bind(cmd.Flags())
	cf.bind(cmd.Flags())
	sf.bind(cmd.Flags())
	cmd.Flags().IntVar(&f.parallelism, "parallelism", 0, "goroutines reading and writing at once (default: number of CPUs)")
	cmd.Flags().BoolVar(&dryRun, "dry-run", false, "print the plan (bins, files, bytes) and change nothing")
	return cmd
}

// optimizeFlags are the compaction flags shared by optimize and maintain --optimize.
type optimizeFlags struct {
	targetSize, minSize string
	ratio               float64
	where, zorderBy     string
	batchSize           int
	parallelism         int
}

func (f *optimizeFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.targetSize, "target-file-size", "", "size of the files written and of the bins: bytes, or 128m, 128mb, 128Mi, 128MiB, 1.5g (units are powers of 1024, as in Spark; default: delta.targetFileSize, else 1 GiB)")
	fs.StringVar(&f.minSize, "min-file-size", "", "files smaller than this are compacted, same units as --target-file-size (default: the target file size)")
	fs.Float64Var(&f.ratio, "max-deleted-rows-ratio", optimize.DefaultMaxDeletedRowsRatio, "also rewrite files whose deletion vectors hide more than this share of their rows")
	fs.StringVar(&f.where, "where", "", "compact only the partitions matching this predicate on partition columns, e.g. \"day >= '2024-06-01'\"")
	fs.StringVar(&f.zorderBy, "zorder-by", "", "Z-order the selected partitions by these columns (a,b; unclustered tables only)")
	fs.IntVar(&f.batchSize, "batch-size", 0, "commit every N bins (partial progress); 0 commits all bins at once")
}

// changed reports whether any compaction flag was given (maintain requires --optimize with them).
func (f *optimizeFlags) changed(fs *pflag.FlagSet) string {
	for _, n := range []string{"target-file-size", "min-file-size", "max-deleted-rows-ratio", "where", "zorder-by", "batch-size"} {
		if fs.Changed(n) {
			return n
		}
	}
	return ""
}

// options turns the flags into compaction options and the Z-order columns.
func (f *optimizeFlags) options(dryRun bool) (optimize.Options, []string, error) {
	o := optimize.Options{MaxDeletedRowsRatio: f.ratio, BatchSize: f.batchSize, Parallelism: f.parallelism, DryRun: dryRun}
	var err error
	if o.TargetFileSize, err = parseSize("--target-file-size", f.targetSize); err != nil {
		return o, nil, err
	}
	if o.MinFileSize, err = parseSize("--min-file-size", f.minSize); err != nil {
		return o, nil, err
	}
	if f.where != "" {
		if o.Where, err = expr.Parse(f.where); err != nil {
			return o, nil, tableError(err)
		}
	}
	return o, splitList(f.zorderBy), nil
}

// parseSize reads a size flag: bytes or a number with a binary unit, as the tool prints sizes and as Spark
// and Kubernetes write them (256m, 256mb, 256Mi, 256MiB, "64.0 MiB", 1.5g); "" is 0 (the default).
func parseSize(flag, s string) (int64, error) {
	if s == "" {
		return 0, nil
	}
	n, err := bytesize.Parse(s)
	if err != nil {
		return 0, badArg("%s: %v", flag, err)
	}
	if n <= 0 {
		return 0, badArg("%s %q: give a positive size; %s", flag, s, bytesize.Hint)
	}
	return n, nil
}

func optimizeCommand(e *env, location string, f *optimizeFlags, cf clusterFlags, fs *pflag.FlagSet, dryRun bool) (*result.Result, error) {
	opts, zorder, err := f.options(dryRun)
	if err != nil {
		return nil, err
	}
	tbl, err := openTable(e.ctx, location)
	if err != nil {
		return nil, err
	}
	snap, err := loadForLayout(e.ctx, tbl, zorder)
	if err != nil {
		return nil, tableError(err)
	}
	if clustered, cerr := isClustered(snap); cerr == nil && !clustered {
		for _, n := range clusteringOnly {
			if fs.Changed(n) {
				return nil, badArg("--%s applies to liquid-clustered tables; %s has no clustering columns (set them with deltakeeper alter --cluster-by)", n, location)
			}
		}
	}
	op, rep, err := optimizeStep(e, snap, opts, zorder, cf)
	res := &result.Result{}
	if op != nil {
		res.Ops = []result.Op{*op}
		if err == nil && op.Outcome == result.NothingToDo {
			res.Outcome = result.NothingToDo
		}
	}
	switch {
	case rep != nil:
		fmt.Fprint(e.text, optimizeText(location, rep))
	case op != nil:
		fmt.Fprint(e.text, stepText(location, op))
	}
	describeTable(e.ctx, tbl, res)
	return res, tableError(err)
}

// optimizeShareCommand runs one share of a scale-out compaction or clustering (scaleout.go).
func optimizeShareCommand(e *env, location string, f *optimizeFlags, cf clusterFlags, sf *shareFlags, fs *pflag.FlagSet, dryRun bool) (*result.Result, error) {
	s, err := sf.check(fs)
	if err != nil {
		return nil, err
	}
	opts, zorder, err := f.options(dryRun)
	switch {
	case err != nil:
		return nil, err
	case dryRun || len(zorder) > 0 || opts.BatchSize > 0:
		return nil, badArg("--share runs a plan's share and commits once: --dry-run, --zorder-by and --batch-size do not apply")
	}
	tbl, err := openTable(e.ctx, location)
	if err != nil {
		return nil, err
	}
	op, sh, err := shareLayout(e, tbl, s, sf.wait, opts, cf)
	res := &result.Result{Share: sh}
	if op != nil {
		res.Ops = []result.Op{*op}
		if err == nil && op.Outcome == result.NothingToDo {
			res.Outcome = result.NothingToDo
		}
	}
	describeTable(e.ctx, tbl, res)
	return res, tableError(err)
}

// optimizeStep is the optimize step of optimize and maintain: clustering on a clustered table,
// Z-order when columns are given, bin-packing compaction otherwise. The report is nil for the first two.
func optimizeStep(e *env, snap *delta.Snapshot, opts optimize.Options, zorder []string, cf clusterFlags) (*result.Op, *optimize.Report, error) {
	clustered, err := isClustered(snap)
	if err != nil {
		return nil, nil, err
	}
	progress := func(s string) { e.progress.update("optimize: %s", s) }
	switch {
	case clustered && len(zorder) > 0:
		return nil, nil, badArg("table %s is clustered; --zorder-by applies to unclustered tables only (clustered tables are optimized by their clustering columns)", snap.Table().Location())
	case clustered:
		op, err := runClustering(e.ctx, snap, cf, opts, progress)
		return renamed(op, "cluster"), nil, err
	case len(zorder) > 0:
		// Z-order is OPTIMIZE … ZORDER BY: reported as the optimize step, as the operator counts it.
		op, err := runZOrder(e.ctx, snap, zorder, cf, opts, progress)
		return renamed(op, "optimize"), nil, err
	}
	rep, err := optimize.RunSnapshot(e.ctx, snap, opts, progress)
	if rep == nil {
		return nil, nil, err
	}
	return &rep.Op, rep, err
}

// loadForLayout loads the snapshot optimizeStep works on: with row counts only when it will bin-pack
// (an unclustered table, no Z-order), which is a third of the memory of a million-file snapshot; in
// full for clustering and Z-order, which read the files' statistics. A table clustered between the state
// read and the load (a concurrent ALTER … CLUSTER BY) is loaded again in full, since the step clusters it.
func loadForLayout(ctx context.Context, tbl *delta.Table, zorder []string) (*delta.Snapshot, error) {
	if len(zorder) == 0 {
		st, err := tbl.State(ctx, delta.NoVersion)
		if err != nil {
			return nil, err
		}
		if !st.Clustered {
			snap, err := tbl.LatestWith(ctx, optimize.LoadOptions)
			if err != nil {
				return nil, err
			}
			if clustered, cerr := isClustered(snap); cerr != nil || !clustered {
				return snap, nil // a bad clustering declaration is reported by the step
			}
		}
	}
	return tbl.Latest(ctx)
}

func renamed(op *result.Op, name string) *result.Op {
	if op != nil {
		op.Name = name
	}
	return op
}

func isClustered(snap *delta.Snapshot) (bool, error) {
	cols, ok, err := snap.ClusteringColumnsLogical()
	if err != nil {
		return false, result.Refuse(result.ReasonCorruptTable, fmt.Errorf("table %s: clustering columns: %w", snap.Table().Location(), err))
	}
	return ok && len(cols) > 0, nil
}

// optimizeText is the human summary of a compaction.
func optimizeText(location string, r *optimize.Report) string {
	var b strings.Builder
	p := r.Plan
	files, bytes := p.Files()
	fmt.Fprintf(&b, "optimize %s at version %d: %d live files considered, %d candidates (below %s or with too many deleted rows)\n",
		location, p.Snapshot.Version(), p.ConsideredFiles, p.CandidateFiles, humanBytes(p.MinFileSize))
	if p.Unreadable > 0 {
		fmt.Fprintf(&b, "  %d candidates left alone: their paths lie outside the table's location\n", p.Unreadable)
	}
	switch {
	case len(p.Bins) == 0:
		b.WriteString("  nothing to compact\n")
		return b.String()
	case r.Op.Outcome == result.Succeeded && len(r.Commits) == 0:
		fmt.Fprintf(&b, "  dry run: would rewrite %d files (%s) into about %d files of up to %s, in %d bins across %d partitions\n",
			files, humanBytes(bytes), estimateOutputs(p), humanBytes(p.Target), len(p.Bins), p.Partitions)
		writeBins(&b, p)
		return b.String()
	}
	fmt.Fprintf(&b, "  removed %d files (%s), added %d files (%s)", r.FilesRemoved, humanBytes(r.BytesRemoved), r.FilesAdded, humanBytes(r.BytesAdded))
	switch n := len(r.Commits); n {
	case 0:
		b.WriteString(", nothing committed")
	case 1:
		fmt.Fprintf(&b, " in version %d", r.Commits[0])
	default:
		fmt.Fprintf(&b, " in %d commits, versions %d..%d", n, r.Commits[0], r.Commits[n-1])
	}
	if r.Rebased > 0 {
		fmt.Fprintf(&b, " (rebased over %d concurrent commits)", r.Rebased)
	}
	b.WriteString("\n")
	if r.RowsPurged > 0 {
		fmt.Fprintf(&b, "  purged %d rows hidden by %d deletion vectors\n", r.RowsPurged, r.DVsRemoved)
	}
	for _, d := range r.Dropped {
		fmt.Fprintf(&b, "  dropped bin of %d files (%s) in partition %s: %s\n", d.Files, humanBytes(d.Bytes), partitionLabel(d.Partition), d.Reason)
	}
	if r.Unknown {
		b.WriteString("  the outcome of the last commit is unknown: its new files were kept; VACUUM removes them if it did not land\n")
	}
	return b.String()
}

// stepText is the human summary of a clustering or Z-order step.
func stepText(location string, op *result.Op) string {
	s := fmt.Sprintf("%s %s: %s", op.Name, location, op.Outcome)
	if op.FilesAdded != 0 || op.FilesRemoved != 0 {
		s += fmt.Sprintf(", removed %d files (%s), added %d files (%s)", op.FilesRemoved, humanBytes(op.BytesRemoved), op.FilesAdded, humanBytes(op.BytesAdded))
	}
	if op.Version != nil {
		s += fmt.Sprintf(" in version %d", *op.Version)
	}
	if op.Message != "" {
		s += "; " + op.Message
	}
	return s + "\n"
}

func estimateOutputs(p *optimize.Plan) int64 {
	var n int64
	for _, bin := range p.Bins {
		n += max(1, (bin.Bytes+p.Target-1)/p.Target)
	}
	return n
}

// writeBins lists the first bins of a plan.
func writeBins(w io.Writer, p *optimize.Plan) {
	const shown = 20
	for i, bin := range p.Bins {
		if i == shown {
			fmt.Fprintf(w, "  … and %d more bins\n", len(p.Bins)-shown)
			break
		}
		dv := ""
		if bin.DVFiles > 0 {
			dv = fmt.Sprintf(", %d with deletion vectors (%d rows to purge)", bin.DVFiles, bin.DVRows)
		}
		fmt.Fprintf(w, "  bin %3d  partition %-30s %5d files %10s%s\n", i+1, partitionLabel(bin.Dir), len(bin.Files), humanBytes(bin.Bytes), dv)
	}
}

func partitionLabel(key string) string {
	if key == "" {
		return "(unpartitioned)"
	}
	return key
}

// describeTable adds the facts of the table's latest version to a result (the state after a run),
// with the clustering quality of a clustered table: a clustering run's effect shows in status at once,
// and policy triggers on quality do not fire again on the quality from before the run. A failure to
// read them is not the command's failure: the result just lacks them.
func describeTable(ctx context.Context, tbl *delta.Table, res *result.Result) {
	snap, err := tbl.Latest(ctx)
	if err != nil {
		return
	}
	facts, err := table.Inspect(snap)
	if err != nil {
		return
	}
	res.Table = facts.Result()
	if len(facts.ClusteringColumns) > 0 {
		if q, err := table.ClusteringQuality(snap, facts.ClusteringColumns); err == nil {
			res.Table.Quality = q
		}
	}
	v := int64(snap.Version())
	res.Version = &v
}
