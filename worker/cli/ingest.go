package cli

import (
	"errors"
	"fmt"
	"maps"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/deltakeeper/deltakeeper/worker/ingest"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/merge"
	wprogress "github.com/deltakeeper/deltakeeper/worker/progress"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func init() { register(newIngestCmd) }

type ingestFlags struct {
	source, format, checkpoint   string
	readerOpts                   []string
	availableNow                 bool
	maxFiles                     int
	maxBytes                     string
	maxBatches                   int
	timeBudget                   time.Duration
	schemaEvolution, onBadFile   string
	partitionBy, clusterBy       string
	includeExisting, allowOverwr bool
	optimizeWrite, autoCompact   string
	fullListingEvery             int
	update                       updateFlags
}

func newIngestCmd(mode Mode) *cobra.Command {
	var (
		out outputFlags
		f   ingestFlags
	)
	cmd := &cobra.Command{
		Use:   "ingest <table> --source <prefix> --format parquet|json|csv",
		Short: "Append new files under a prefix to a Delta table, each exactly once",
		Long: `ingest takes the files under --source that the stream has not taken yet, oldest first, in batches
bounded by --max-files-per-trigger (default 1000) and the soft --max-bytes-per-trigger, and appends each
batch to the table in one commit that also records the stream's progress (a Delta txn action), so that
no file is ever applied twice, whatever crashes or concurrent runs happen. The first batch creates a
missing table (schema from the source; --partition-by, --cluster-by).

The stream's state lives under --checkpoint, or inside the table (_deltakeeper/streams/…) under a
name derived from the source and format, so running the same command again resumes the stream.
Without --available-now one batch runs (--max-batches, --time-budget for more); with it, everything
present at start is drained in bounded batches. Hidden files (_…, .…) are skipped; .gz and .zst files
are decompressed.

Formats and --option keys: csv (header, delimiter, quote, escape, comment, nullValue, dateFormat,
timestampFormat, inferColumnTypes), json (multiLine, dateFormat, timestampFormat, inferColumnTypes),
parquet. New source columns: --schema-evolution failOnNewColumns (default), addNewColumns, rescue
(into _rescued_data) or none. Bad files (corrupt, unconvertible values, deleted after listing) stop
the batch and name the file, row and column; --on-bad-file skip records them as skipped instead.`,
		Example: `  deltakeeper ingest ./events --source ./landing --format json --available-now
  deltakeeper ingest s3://lake/orders --source s3://drop/orders/ --format csv --option header=true \
      --partition-by order_date --max-bytes-per-trigger 10g`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			return run(cmd, "ingest", mode, &out, false, func(e *env) (*result.Result, error) {
				return ingestCommand(e, args[0], &f, cmd.Flags())
			})
		},
	}
	out.bind(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.source, "source", "", "the prefix to ingest: s3://bucket/prefix or a local directory (required)")
	fs.StringVar(&f.format, "format", "", "parquet, json or csv (required)")
	fs.StringArrayVar(&f.readerOpts, "option", nil, "reader option key=value (repeatable), e.g. header=true")
	fs.StringVar(&f.checkpoint, "checkpoint", "", "where the stream's state lives (default: inside the table, named after the source)")
	fs.BoolVar(&f.availableNow, "available-now", false, "drain everything present at start in bounded batches, then stop")
	fs.IntVar(&f.maxFiles, "max-files-per-trigger", ingest.DefaultMaxFilesPerTrigger, "most files per batch")
	fs.StringVar(&f.maxBytes, "max-bytes-per-trigger", "", "soft cap on a batch's bytes: 10g, 512m, 512mb, 10Gi (units are powers of 1024, as in Spark); a batch always takes one file")
	fs.IntVar(&f.maxBatches, "max-batches", 1, "most batches a run without --available-now commits")
	fs.DurationVar(&f.timeBudget, "time-budget", 0, "stop starting batches after this long (with --max-batches)")
	fs.StringVar(&f.schemaEvolution, "schema-evolution", string(format.FailOnNewColumns), "new source columns: failOnNewColumns, addNewColumns, rescue or none")
	fs.StringVar(&f.onBadFile, "on-bad-file", string(ingest.BadFileFail), "a bad input file: fail the batch, or skip it (recorded)")
	fs.StringVar(&f.partitionBy, "partition-by", "", "partition columns of a table the first batch creates (comma-separated)")
	fs.StringVar(&f.clusterBy, "cluster-by", "", "liquid clustering columns of a table the first batch creates")
	fs.BoolVar(&f.includeExisting, "include-existing-files", true, "at the stream's first start, also ingest the files already present")
	fs.BoolVar(&f.allowOverwr, "allow-overwrites", false, "take a file again when it is rewritten in place")
	fs.StringVar(&f.optimizeWrite, "optimize-write", "", "true/false: override delta.autoOptimize.optimizeWrite")
	fs.StringVar(&f.autoCompact, "auto-compact", "", "true/false: override delta.autoOptimize.autoCompact")
	fs.IntVar(&f.fullListingEvery, "full-listing-every", ingest.DefaultFullListingEvery, "list the whole prefix every N listings (the others start after the last key seen)")
	f.update.bind(cmd, string(merge.Append))
	return cmd
}

func optionalBool(flag, s string) (*bool, error) {
	switch strings.ToLower(strings.TrimSpace(s)) {
	case "":
		return nil, nil
	case "true":
		b := true
		return &b, nil
	case "false":
		b := false
		return &b, nil
	}
	return nil, badArg("--%s %q: use true or false", flag, s)
}

func (f *ingestFlags) options(fs *pflag.FlagSet) (ingest.Options, error) {
	if f.source == "" || f.format == "" {
		return ingest.Options{}, badArg("ingest needs --source and --format")
	}
	evo, err := format.ParseEvolution(f.schemaEvolution)
	if err != nil {
		return ingest.Options{}, badArg("--schema-evolution: %v", err)
	}
	kv := map[string]string{}
	for _, o := range f.readerOpts {
		k, v, ok := strings.Cut(o, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return ingest.Options{}, badArg("--option %q: give key=value", o)
		}
		kv[strings.TrimSpace(k)] = v
	}
	fo, err := format.ParseOptions(f.format, kv, evo)
	if err != nil {
		return ingest.Options{}, badArg("%v", err)
	}
	maxBytes, err := parseSize("--max-bytes-per-trigger", f.maxBytes)
	if err != nil {
		return ingest.Options{}, err
	}
	if f.maxFiles < 1 {
		return ingest.Options{}, badArg("--max-files-per-trigger %d: give at least 1", f.maxFiles)
	}
	o := ingest.Options{
		Source: f.source, Format: fo, Checkpoint: f.checkpoint, MaxFilesPerTrigger: f.maxFiles, MaxBytesPerTrigger: maxBytes,
		AvailableNow: f.availableNow, MaxBatches: f.maxBatches, TimeBudget: f.timeBudget,
		ExcludeExistingFiles: !f.includeExisting, AllowOverwrites: f.allowOverwr, OnBadFile: ingest.OnBadFile(strings.ToLower(f.onBadFile)),
		PartitionBy: splitList(f.partitionBy), ClusterBy: splitList(f.clusterBy), FullListingEvery: f.fullListingEvery,
		Storage: storage.ConfigFromEnv(),
	}
	if err := f.update.options(&o.Update); err != nil {
		return o, err
	}
	if o.OnBadFile != ingest.BadFileFail && o.OnBadFile != ingest.BadFileSkip {
		return o, badArg("--on-bad-file %q: use fail or skip", f.onBadFile)
	}
	if o.OptimizeWrite, err = optionalBool("optimize-write", f.optimizeWrite); err != nil {
		return o, err
	}
	if o.AutoCompact, err = optionalBool("auto-compact", f.autoCompact); err != nil {
		return o, err
	}
	return o, nil
}

func ingestCommand(e *env, location string, f *ingestFlags, fs *pflag.FlagSet) (*result.Result, error) {
	opts, err := f.options(fs)
	if err != nil {
		return nil, err
	}
	tbl, err := openTable(e.ctx, location)
	if err != nil {
		return nil, err
	}
	wprogress.Start(e.ctx, "ingest", -1, -1)
	opts.Progress = func(b ingest.BatchReport) {
		e.progress.Advance(int64(b.Files), b.Bytes)
		// One line per batch, for people and for Job logs alike.
		fmt.Fprintf(e.text, "batch %d: %d files, %s, %d rows → version %d; %d data files (mean %s)%s\n",
			b.BatchID, b.Files, humanBytes(b.Bytes), b.Rows, b.Version, filesWritten(b), humanBytes(b.MeanFileSize()), batchNotes(b))
	}
	rep, err := ingest.Run(e.ctx, tbl, opts)
	res := &result.Result{Ingest: ingestResult(rep, err)}
	if rep != nil {
		if rep.Version >= 0 {
			v := rep.Version
			res.Version = &v
		}
		if len(rep.Batches) == 0 && err == nil {
			res.Outcome = result.NothingToDo
		}
		fmt.Fprintf(e.text, "stream %s: %d batches, last batch %d, backlog %d files (%s)\n", rep.StreamID, len(rep.Batches),
			rep.LastBatchID, rep.Backlog.Files, humanBytes(rep.Backlog.Bytes))
	}
	if err != nil {
		var re *result.Error
		if !errors.As(err, &re) {
			err = tableError(err)
		}
	}
	return res, err
}

func filesWritten(b ingest.BatchReport) int {
	n := 0
	for _, c := range b.FilesWritten {
		n += c
	}
	return n
}

func batchNotes(b ingest.BatchReport) string {
	var notes []string
	if b.Created {
		notes = append(notes, "created the table")
	}
	if b.AlreadyCommitted {
		notes = append(notes, "found committed")
	} else if b.Replayed {
		notes = append(notes, "replayed")
	}
	if len(b.SchemaChange) > 0 {
		notes = append(notes, "added columns "+strings.Join(b.SchemaChange, ", "))
	}
	if b.Rescued > 0 {
		notes = append(notes, fmt.Sprintf("%d rows rescued", b.Rescued))
	}
	if m := b.Merge; m != nil {
		notes = append(notes, fmt.Sprintf("%s: %d of %d files scanned, %d touched; %d updated, %d deleted, %d inserted",
			m.Mode, m.FilesScanned, m.FilesTotal, m.FilesTouched, m.RowsUpdated, m.RowsDeleted, m.RowsInserted))
	}
	if len(b.Skipped) > 0 {
		notes = append(notes, fmt.Sprintf("%d files skipped", len(b.Skipped)))
	}
	if b.AutoCompaction != nil && b.AutoCompaction.Op.Outcome == result.Succeeded {
		notes = append(notes, fmt.Sprintf("auto compaction: %d → %d files", b.AutoCompaction.FilesRemoved, b.AutoCompaction.FilesAdded))
	}
	if len(notes) == 0 {
		return ""
	}
	return "; " + strings.Join(notes, "; ")
}

// ingestResult fills the result document from the run's report and error.
func ingestResult(rep *ingest.Report, err error) *result.Ingest {
	in := &result.Ingest{LastBatch: -1}
	if rep != nil {
		in.Stream, in.LastBatch, in.NumBatches = rep.StreamID, rep.LastBatchID, len(rep.Batches)
		in.Backlog = &result.Backlog{Files: rep.Backlog.Files, Bytes: rep.Backlog.Bytes, OldestAgeSec: int64(rep.Backlog.OldestAge / time.Second)}
		for i, b := range rep.Batches {
			in.Rows += b.Rows
			in.Rescued += b.Rescued
			in.SchemaChanges = append(in.SchemaChanges, b.SchemaChange...)
			for _, s := range b.Skipped {
				in.SkippedCount++
				if len(in.Skipped) < result.MaxIngestSkipped {
					in.Skipped = append(in.Skipped, result.SkippedFile{File: s.Key, Reason: s.Reason})
				}
			}
			if b.AutoCompaction != nil {
				in.AutoCompaction = append(in.AutoCompaction, b.AutoCompaction.Op)
			}
			if i >= len(rep.Batches)-result.MaxIngestBatches {
				ib := result.IngestBatch{ID: b.BatchID, Files: b.Files, Bytes: b.Bytes, Rows: b.Rows, Version: b.Version, MeanFileBytes: b.MeanFileSize(), Merge: b.Merge}
				if len(b.FilesWritten) <= 16 {
					ib.Written = maps.Clone(b.FilesWritten)
				}
				in.Batches = append(in.Batches, ib)
			}
		}
		if len(in.AutoCompaction) > 3 {
			in.AutoCompaction = in.AutoCompaction[len(in.AutoCompaction)-3:]
		}
	}
	var bad *format.Error
	if errors.As(err, &bad) {
		in.BadFile = &result.BadFile{File: bad.File, Row: bad.Row, Column: bad.Column}
	}
	var nce *format.NewColumnsError
	if errors.As(err, &nce) {
		for _, c := range nce.Columns {
			in.NewColumns = append(in.NewColumns, strings.Join(c.Path, "."))
		}
		slices.Sort(in.NewColumns)
	}
	return in
}
