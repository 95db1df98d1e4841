package optimize

import (
	"context"
	"errors"
	"fmt"
	"log/slog"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// Auto compaction defaults (DeltaSQLConf autoCompact.*).
const (
	DefaultAutoMinNumFiles    = 50
	DefaultAutoMaxFileSize    = 128 << 20
	DefaultAutoMaxPartitions  = 128
	PropAutoCompact           = "delta.autoOptimize.autoCompact"
	propLegacyAutoOptimize    = "delta.autoOptimize"
	defaultAutoMinFileSizeDiv = 2 // minFileSize = maxFileSize / 2 = 64 MiB
)

// AutoCompactOptions are auto compaction's settings; zero values mean Spark's defaults.
type AutoCompactOptions struct {
	// MinNumFiles is the number of small files a partition needs before it is compacted (50).
	MinNumFiles int
	// MaxFileSize is the target size (128 MiB); MinFileSize the small-file size (MaxFileSize/2).
	MaxFileSize, MinFileSize int64
	// MaxPartitions bounds the touched partitions compacted at once (128).
	MaxPartitions int
	Parallelism   int
	// Force compacts even when the table does not enable delta.autoOptimize.autoCompact.
	Force bool
	// Logger receives the skip and conflict messages; slog.Default when nil.
	Logger *slog.Logger
}

// AutoCompact is the post-commit hook of the ingest path (Spark's AutoCompact): after the commit
// that added files, it compacts the partitions those files touched that now hold at least MinNumFiles
// files under MinFileSize (or files whose deletion vectors hide too many rows), into files of
// MaxFileSize, in one OPTIMIZE commit marked auto=true. It runs only when the table enables
// delta.autoOptimize.autoCompact (or the legacy delta.autoOptimize) unless Force is set, and never on
// clustered tables (clustering owns their layout).
//
// The write it follows has already committed, so nothing here may fail it: a lost race with another
// writer is logged and reported as skipped (nil error), and the caller should log any other error
// rather than fail the ingest. A nil report means auto compaction did not apply.
func AutoCompact(ctx context.Context, tbl *delta.Table, committed *delta.CommitResult, added []*delta.AddFile, opts AutoCompactOptions) (*Report, error) {
	log := opts.Logger
	if log == nil {
		log = slog.Default()
	}
	log = log.With("table", tbl.Location())
	if committed == nil || len(added) == 0 {
		return nil, nil
	}
	snap, err := tbl.LatestWith(ctx, LoadOptions)
	if err != nil {
		return nil, err
	}
	if snap.Version() < committed.Version {
		return nil, fmt.Errorf("table %s: latest version %d is older than the commit %d auto compaction follows", tbl.Location(), snap.Version(), committed.Version)
	}
	if !opts.Force {
		on, err := autoCompactEnabled(snap.Properties())
		if err != nil || !on {
			return nil, err
		}
	}
	if cols, ok, _ := snap.ClusteringColumnsLogical(); ok && len(cols) > 0 {
		log.Debug("auto compaction skipped: the table is clustered")
		return nil, nil
	}
	o := opts.withDefaults()
	parts, err := qualifyingPartitions(snap, committed.Version, added, o)
	if err != nil || len(parts) == 0 {
		return nil, err
	}
	run := Options{
		TargetFileSize: o.MaxFileSize, MinFileSize: o.MinFileSize, MaxDeletedRowsRatio: DefaultMaxDeletedRowsRatio,
		Parallelism: o.Parallelism, Auto: true, MaxConflictRounds: 1,
		include: func(f *delta.AddFile) bool {
			k, err := snap.PartitionKey(f)
			return err == nil && parts[k]
		},
	}
	rep, err := RunSnapshot(ctx, snap, run, nil)
	switch {
	case err == nil:
		return rep, nil
	case errors.Is(err, delta.ErrConcurrentModification) || errors.Is(err, delta.ErrCommitRetriesExhausted) || errors.Is(err, delta.ErrUnsupportedTable):
		log.Info("auto compaction skipped", "afterVersion", committed.Version, "reason", err)
		if rep == nil {
			rep = &Report{Op: result.Op{Name: "optimize"}}
		}
		rep.Op.Outcome = result.NothingToDo
		rep.Op.Message = "auto compaction skipped: " + err.Error()
		return rep, nil
	}
	return rep, err
}

func (o AutoCompactOptions) withDefaults() AutoCompactOptions {
	if o.MinNumFiles <= 0 {
		o.MinNumFiles = DefaultAutoMinNumFiles
	}
	if o.MaxFileSize <= 0 {
		o.MaxFileSize = DefaultAutoMaxFileSize
	}
	if o.MinFileSize <= 0 {
		o.MinFileSize = o.MaxFileSize / defaultAutoMinFileSizeDiv
	}
	if o.MaxPartitions <= 0 {
		o.MaxPartitions = DefaultAutoMaxPartitions
	}
	return o
}

// autoCompactEnabled applies Spark's precedence: delta.autoOptimize.autoCompact, else the legacy
// delta.autoOptimize. Databricks also writes "auto" and "legacy", which enable it.
func autoCompactEnabled(props delta.TableProperties) (bool, error) {
	for _, key := range []string{PropAutoCompact, propLegacyAutoOptimize} {
		v, ok := props[key]
		if !ok {
			continue
		}
		switch strings.ToLower(strings.TrimSpace(v)) {
		case "true", "auto", "legacy":
			return true, nil
		case "false":
			return false, nil
		}
		return false, fmt.Errorf("table property %s=%q: want true, false, auto or legacy", key, v)
	}
	return false, nil
}

// qualifyingPartitions returns the partitions the commit touched that hold enough small files (or a
// file with too many deleted rows), at most MaxPartitions of them, in key order.
func qualifyingPartitions(snap *delta.Snapshot, v delta.Version, added []*delta.AddFile, o AutoCompactOptions) (map[string]bool, error) {
	touched := map[string]bool{}
	for _, f := range added {
		k, err := snap.PartitionKey(f)
		if err != nil {
			return nil, fmt.Errorf("table %s: file %s added by version %d: %w", snap.Table().Location(), f.Path, v, err)
		}
		touched[k] = true
	}
	small := map[string]int{}
	dirty := map[string]bool{}
	cfg := planConfig{minFileSize: 0, maxDeletedRowsRatio: DefaultMaxDeletedRowsRatio}
	for _, f := range snap.Files() {
		k, err := snap.PartitionKey(f)
		if err != nil || !touched[k] {
			continue
		}
		if f.Size < o.MinFileSize {
			small[k]++
		}
		if isCandidate(f, cfg) {
			dirty[k] = true
		}
	}
	var keys []string
	for k := range touched {
		if small[k] >= o.MinNumFiles || dirty[k] {
			keys = append(keys, k)
		}
	}
	slices.Sort(keys)
	parts := map[string]bool{}
	for _, k := range keys[:min(len(keys), o.MaxPartitions)] {
		parts[k] = true
	}
	return parts, nil
}
