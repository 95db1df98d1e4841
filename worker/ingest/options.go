package ingest

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"log/slog"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/merge"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Defaults.
const (
	DefaultMaxFilesPerTrigger = 1000
	// DefaultTargetFileSize is the optimized-write target when delta.targetFileSize is unset (the
	// 128 MB of Databricks and Synapse).
	DefaultTargetFileSize = 128 << 20
	// DefaultFullListingEvery: incremental listings (after the largest key seen) are followed by a
	// full one every this many listings, to catch late files with smaller keys (Auto Loader's 8).
	DefaultFullListingEvery = 8
)

// OnBadFile is what a bad input file does to its batch.
type OnBadFile string

// OnBadFile values.
const (
	BadFileFail OnBadFile = "fail"
	BadFileSkip OnBadFile = "skip"
)

// Options describe a stream and one run of it.
type Options struct {
	// Source is the prefix: s3://bucket/prefix or a local directory.
	Source string
	// Format holds the reader options (format.ParseOptions), including the schema evolution mode.
	Format format.Options
	// Checkpoint is where the stream's state lives; "" means inside the table, under
	// _deltakeeper/streams/<a name derived from the source and format>, so that running the same
	// command again resumes the same stream.
	Checkpoint string
	// MaxFilesPerTrigger caps a batch's files (DefaultMaxFilesPerTrigger when 0).
	MaxFilesPerTrigger int
	// MaxBytesPerTrigger is a soft cap on a batch's bytes: the batch stops once it reaches it but
	// always takes one file; 0 means none. With both limits, whichever is reached first ends the batch.
	MaxBytesPerTrigger int64
	// AvailableNow freezes the listing at start, finishes an uncommitted batch, drains everything
	// listed in bounded batches and stops.
	AvailableNow bool
	// MaxBatches bounds the batches of a run that is not AvailableNow (default 1); TimeBudget, when
	// set, stops starting new batches once spent.
	MaxBatches int
	TimeBudget time.Duration
	// ExcludeExistingFiles ignores the files present at the stream's first start
	// (includeExistingFiles=false).
	ExcludeExistingFiles bool
	// AllowOverwrites takes a file again when it was rewritten in place (new ETag or mtime).
	AllowOverwrites bool
	// OnBadFile is fail (default) or skip.
	OnBadFile OnBadFile
	// PartitionBy and ClusterBy shape a table the first batch creates.
	PartitionBy, ClusterBy []string
	// OptimizeWrite and AutoCompact override delta.autoOptimize.optimizeWrite / autoCompact.
	OptimizeWrite, AutoCompact *bool
	// AutoCompactTarget is auto compaction's target file size (optimize.DefaultAutoMaxFileSize, 128 MiB,
	// when 0); files under half of it are small.
	AutoCompactTarget int64
	// Update is the update method each batch runs as (worker/merge: mode, keys, delete marker,
	// order-by, overwrite scope, partition pruning). Mode "" or append keeps the append fast path;
	// any other mode runs each batch as one merge carrying the stream's txn. Its Format, AppID and
	// BatchID are the stream's.
	Update merge.Options
	// FullListingEvery is DefaultFullListingEvery when 0; 1 lists fully every time.
	FullListingEvery int
	// Storage configures S3 access for the source and the checkpoint.
	Storage storage.Config
	Logger  *slog.Logger
	// Progress is called after every batch.
	Progress func(BatchReport)
	// StateCompactEvery is how many committed batches pass between taken-files snapshots
	// (state.DefaultCompactEvery when 0).
	StateCompactEvery int
	// Now is the clock (time.Now when nil).
	Now func() time.Time
}

func (o *Options) withDefaults() (Options, error) {
	c := *o
	if c.Source == "" {
		return c, fmt.Errorf("ingest needs a source prefix")
	}
	if c.MaxFilesPerTrigger <= 0 {
		c.MaxFilesPerTrigger = DefaultMaxFilesPerTrigger
	}
	if c.MaxBytesPerTrigger < 0 {
		return c, fmt.Errorf("maxBytesPerTrigger must not be negative")
	}
	if c.MaxBatches <= 0 {
		c.MaxBatches = 1
	}
	if err := c.checkUpdate(); err != nil {
		return c, err
	}
	switch c.OnBadFile {
	case "":
		c.OnBadFile = BadFileFail
	case BadFileFail, BadFileSkip:
	default:
		return c, fmt.Errorf("onBadFile %q: use fail or skip", c.OnBadFile)
	}
	if c.FullListingEvery <= 0 {
		c.FullListingEvery = DefaultFullListingEvery
	}
	if c.Logger == nil {
		c.Logger = slog.Default()
	}
	if c.Now == nil {
		c.Now = time.Now
	}
	if c.Format.Format == "" {
		return c, fmt.Errorf("ingest needs a format: parquet, json or csv")
	}
	return c, nil
}

// DefaultCheckpointName is the state directory name of a stream without an explicit checkpoint: a
// hash of the source and format, so the same command resumes the same stream and another source
// into the same table gets its own.
func DefaultCheckpointName(source, formatName string) string {
	sum := sha256.Sum256([]byte(strings.TrimSuffix(source, "/") + "\x00" + formatName))
	return "src-" + hex.EncodeToString(sum[:8])
}

// CrashHook, when set (by tests), is called at the points where a crash matters: "planned",
// "file-written" (after each source file's rows went to data files), "before-commit",
// "after-commit" (before the batch is marked committed) and "marked".
var CrashHook func(point string)

func crashPoint(p string) {
	if CrashHook != nil {
		CrashHook(p)
	}
}
