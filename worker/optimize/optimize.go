package optimize

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"runtime"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/errclass"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// Defaults of Spark's OPTIMIZE (DeltaSQLConf optimize.*).
const (
	DefaultTargetFileSize      = 1 << 30 // optimize.maxFileSize, when delta.targetFileSize is unset
	DefaultMaxDeletedRowsRatio = 0.05    // optimize.maxDeletedRowsRatio
	defaultMaxConflictRounds   = 10
)

// Options control a compaction. The zero value compacts every partition with the table's target size,
// rewriting any file with deleted rows; callers normally set MaxDeletedRowsRatio to
// DefaultMaxDeletedRowsRatio.
type Options struct {
	// TargetFileSize is the bin size and the size at which outputs roll over; 0 means the table's
	// delta.targetFileSize, else DefaultTargetFileSize.
	TargetFileSize int64
	// MinFileSize: files below it are rewritten; 0 means TargetFileSize.
	MinFileSize int64
	// MaxDeletedRowsRatio: files whose deletion vector hides a larger share of their rows are
	// rewritten whatever their size. In [0, 1].
	MaxDeletedRowsRatio float64
	// Where selects partitions; it may only reference partition columns.
	Where *expr.Expr
	// Parallelism bounds the goroutines decoding and encoding, across the bins rewritten at once;
	// 0 means GOMAXPROCS.
	Parallelism int
	// BatchSize is the number of bins per commit, so that a long run makes progress that survives an
	// interruption; 0 commits all bins at once.
	BatchSize int
	// DryRun plans and reports without writing anything.
	DryRun bool
	// Auto marks the commits as auto compaction (operationParameters.auto).
	Auto bool
	// MaxConflictRounds bounds the retries after conflicting winners (each drops the bins whose inputs
	// are gone); 0 means 10.
	MaxConflictRounds int
	// MaxReplans bounds the rounds that re-plan the still live files of dropped bins on a newer
	// snapshot and rewrite them again; 0 means 3, negative disables re-planning.
	MaxReplans int

	// include further restricts the files considered (auto compaction's touched partitions).
	include func(*delta.AddFile) bool
}

// Report describes a compaction run.
type Report struct {
	Plan *Plan
	// Op is the step as the result document reports it.
	Op result.Op
	// Commits are the versions committed, in order; Batches the number of commits planned.
	Commits []delta.Version
	Batches int
	// The files and bytes committed, and the rows deletion vectors hid that the rewrite dropped.
	FilesRemoved, FilesAdded, DVsRemoved int
	BytesRemoved, BytesAdded             int64
	RowsPurged                           int64
	// Dropped are bins left out after concurrent commits removed some of their inputs.
	Dropped []DroppedBin
	// Rebased counts the concurrent commits the run's commits were rebased onto (blind appends, mostly).
	Rebased int
	// Unknown is set when a commit's outcome could not be determined: its outputs were kept.
	Unknown bool
	// Replans counts the rounds that re-planned dropped bins' files on a newer snapshot;
	// ReplannedFiles the files those rounds planned again.
	Replans, ReplannedFiles int

	replan     map[delta.FileKey]bool // files of bins dropped since the last re-plan
	replanStop string                 // why re-planning stopped with files left, or ""
}

// DroppedBin is a bin that was rewritten but not committed.
type DroppedBin struct {
	Partition string // the partition directory ("" when unpartitioned)
	Files     int
	Bytes     int64
	Reason    string
}

// LoadOptions are what compaction needs of a snapshot: sizes, partition values, deletion vectors,
// tags and row counts, not the files' column statistics. Callers that load the snapshot they pass to
// RunSnapshot load it with these; a snapshot loaded in full gives the same commit.
var LoadOptions = delta.LoadOptions{RowCountsOnly: true}

// Run compacts the latest snapshot of tbl.
func Run(ctx context.Context, tbl *delta.Table, opts Options, progress func(string)) (*Report, error) {
	snap, err := tbl.LatestWith(ctx, LoadOptions)
	if err != nil {
		return nil, err
	}
	return RunSnapshot(ctx, snap, opts, progress)
}

// RunSnapshot compacts snap's table, planning from snap. Clustered tables are refused: bin-packing
// would undo their clustering (use worker/cluster).
func RunSnapshot(ctx context.Context, snap *delta.Snapshot, opts Options, progress func(string)) (*Report, error) {
	start := time.Now()
	if progress == nil {
		progress = func(string) {}
	}
	cfg, err := configure(snap, opts)
	if err != nil {
		return nil, err
	}
	if cfg.footerRows, err = footerRowCounts(ctx, snap, cfg); err != nil {
		return nil, err
	}
	p, err := plan(snap, cfg)
	if err != nil {
		return nil, fmt.Errorf("table %s: plan compaction: %w", snap.Table().Location(), err)
	}
	rep := &Report{Plan: p, Op: result.Op{Name: "optimize"}}
	defer func() { rep.Op.DurationMs = time.Since(start).Milliseconds() }()
	if len(p.Bins) == 0 {
		rep.Op.Outcome = result.NothingToDo
		rep.Op.Message = nothingToCompact(p)
		return rep, nil
	}
	rep.Batches = 1
	if opts.BatchSize > 0 {
		rep.Batches = (len(p.Bins) + opts.BatchSize - 1) / opts.BatchSize
	}
	if opts.DryRun {
		n, bytes := p.Files()
		rep.Op.Outcome = result.Succeeded
		rep.Op.Message = fmt.Sprintf("dry run: would rewrite %d files (%d bytes) in %d bins", n, bytes, len(p.Bins))
		return rep, nil
	}
	params := operationParameters(snap, opts)
	first := time.Now()
	err = execute(ctx, p, opts, params, rep, progress)
	if err == nil && opts.MaxReplans >= 0 {
		err = replanDropped(ctx, snap.Table(), cfg, opts, params, rep, progress, time.Since(first))
	}
	rep.finish(err)
	return rep, err
}

// configure checks that the table may be compacted and resolves the options against its properties.
func configure(snap *delta.Snapshot, opts Options) (planConfig, error) {
	loc := snap.Table().Location()
	if err := snap.CheckOperation(delta.OpRewrite); err != nil {
		return planConfig{}, err
	}
	if cols, ok, err := snap.ClusteringColumnsLogical(); err != nil {
		return planConfig{}, fmt.Errorf("table %s: %w", loc, err)
	} else if ok && len(cols) > 0 {
		return planConfig{}, result.Refuse(result.ReasonBadArgument, fmt.Errorf(
			"table %s is clustered; bin-packing would undo its clustering: cluster it instead (deltakeeper optimize dispatches to clustering)", loc))
	}
	cfg := planConfig{target: opts.TargetFileSize, minFileSize: opts.MinFileSize, maxDeletedRowsRatio: opts.MaxDeletedRowsRatio}
	if cfg.target == 0 {
		size, ok, err := snap.Properties().TargetFileSize()
		if err != nil {
			return cfg, result.Refuse(result.ReasonBadArgument, fmt.Errorf("table %s: %w; fix the property or pass --target-file-size", loc, err))
		}
		cfg.target = DefaultTargetFileSize
		if ok {
			cfg.target = size
		}
	}
	if cfg.minFileSize == 0 {
		cfg.minFileSize = cfg.target
	}
	switch {
	case cfg.target <= 0 || cfg.minFileSize < 0:
		return cfg, badArg("target file size %d and minimum file size %d must be positive", cfg.target, cfg.minFileSize)
	case opts.MaxDeletedRowsRatio < 0 || opts.MaxDeletedRowsRatio > 1:
		return cfg, badArg("max deleted rows ratio %g must be between 0 and 1", opts.MaxDeletedRowsRatio)
	case opts.BatchSize < 0 || opts.Parallelism < 0:
		return cfg, badArg("batch size and parallelism must not be negative")
	}
	cfg.include = opts.include
	if opts.Where != nil {
		where, err := partitionFilter(snap, opts.Where)
		if err != nil {
			return cfg, err
		}
		cfg.include = where
		if opts.include != nil {
			cfg.include = func(f *delta.AddFile) bool { return opts.include(f) && where(f) }
		}
	}
	return cfg, nil
}

// partitionFilter binds a --where that may only name partition columns: compaction works on whole
// files, and a data predicate would have to split them.
func partitionFilter(snap *delta.Snapshot, where *expr.Expr) (func(*delta.AddFile) bool, error) {
	var names []string
	for _, f := range snap.PartitionColumns() {
		names = append(names, f.Name)
	}
	if err := where.PartitionOnly(names); err != nil {
		return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("--where: %w", err))
	}
	pred, err := where.Bind(snap.Schema())
	if err != nil {
		return nil, result.Refuse(result.ReasonBadArgument, fmt.Errorf("--where: %w", err))
	}
	// MightMatch is exact on partition values; a value that does not parse keeps the file, which
	// only widens the compaction. The predicate names partition columns only, so its answer is the
	// partition's: evaluated once per partition.
	memo := newPartitionMemo(func(f *delta.AddFile) (bool, error) { return pred.MightMatch(table.FileFacts(snap, f)), nil })
	return func(f *delta.AddFile) bool { ok, _ := memo.get(f); return ok }, nil
}

// operationParameters are Spark's OPTIMIZE parameters: the predicate as a JSON list, zOrderBy, auto.
func operationParameters(snap *delta.Snapshot, opts Options) map[string]string {
	preds := []string{}
	if opts.Where != nil {
		preds = append(preds, opts.Where.String())
	}
	// Spark's JsonUtils does not escape <, > and & as HTML.
	var buf bytes.Buffer
	enc := json.NewEncoder(&buf)
	enc.SetEscapeHTML(false)
	_ = enc.Encode(preds)
	return map[string]string{"predicate": strings.TrimSpace(buf.String()), "zOrderBy": "[]", "auto": fmt.Sprint(opts.Auto)}
}

func nothingToCompact(p *Plan) string {
	if p.CandidateFiles == 0 {
		return fmt.Sprintf("nothing to compact: none of %d files is below %d bytes or has deleted rows to purge", p.ConsideredFiles, p.MinFileSize)
	}
	return fmt.Sprintf("nothing to compact: %d of %d files are below %d bytes, but no partition holds two of them to merge", p.CandidateFiles, p.ConsideredFiles, p.MinFileSize)
}

func badArg(format string, args ...any) error {
	return result.Refuse(result.ReasonBadArgument, fmt.Errorf(format, args...))
}

func parallelism(p int) int {
	if p <= 0 {
		return runtime.GOMAXPROCS(0)
	}
	return p
}

// finish fills the result step from the report.
func (r *Report) finish(err error) {
	op := &r.Op
	op.FilesAdded, op.FilesRemoved = int64(r.FilesAdded), int64(r.FilesRemoved)
	op.BytesAdded, op.BytesRemoved = r.BytesAdded, r.BytesRemoved
	op.RowsPurged = r.RowsPurged
	if n := len(r.Commits); n > 0 {
		v := int64(r.Commits[n-1])
		op.Version = &v
	}
	var msgs []string
	if len(r.Dropped) > 0 {
		var files int
		for _, d := range r.Dropped {
			files += d.Files
		}
		op.ConflictFiles = int64(files)
		msgs = append(msgs, fmt.Sprintf("%d bins (%d files) dropped: %s", len(r.Dropped), files, r.Dropped[0].Reason))
	}
	if note := r.replanNote(); note != "" {
		msgs = append(msgs, note)
	}
	switch {
	case err != nil:
		op.Outcome, op.Reason = classify(err)
		msgs = append([]string{err.Error()}, msgs...)
		if len(r.Commits) > 0 {
			msgs = append(msgs, fmt.Sprintf("%d of %d commits landed before the failure", len(r.Commits), r.Batches))
		}
	case len(r.Commits) == 0:
		op.Outcome = result.NothingToDo
	default:
		op.Outcome = result.Succeeded
	}
	op.Message = strings.Join(msgs, "; ")
}

// classify maps the errors of a run to an outcome and reason.
func classify(err error) (result.Outcome, string) {
	var re *result.Error
	switch {
	case errors.As(err, &re):
		return re.Outcome, re.Reason
	case err == nil:
		return result.Succeeded, ""
	}
	return result.Classify(errclass.Of(err))
}
