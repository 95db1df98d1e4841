package cli

import (
	"errors"
	"fmt"
	"strings"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/merge"
	wprogress "github.com/deltakeeper/deltakeeper/worker/progress"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func init() { register(newMergeCmd) }

// updateFlags are the update-method flags merge and ingest share.
type updateFlags struct {
	mode, keys, deleteColumn, orderBy, overwriteScope, partitionPruning string
}

func (f *updateFlags) bind(cmd *cobra.Command, defaultMode string) {
	fs := cmd.Flags()
	fs.StringVar(&f.mode, "mode", defaultMode, "update method: append, upsert, update, delete, overwrite or truncateinsert")
	fs.StringVar(&f.keys, "keys", "", "key columns matching source rows to target rows (comma-separated; upsert, update, delete)")
	fs.StringVar(&f.deleteColumn, "delete-column", "", "boolean source column: true rows delete their match and are never inserted")
	fs.StringVar(&f.orderBy, "order-by", "", "deduplicate the batch by key: the row with the greatest value of this column wins")
	fs.StringVar(&f.overwriteScope, "overwrite-scope", merge.ScopeTable, "overwrite: table (every row) or partitions (only the partitions present in the batch)")
	fs.StringVar(&f.partitionPruning, "partition-pruning", "", "partition columns whose batch values bound the target partitions read (comma-separated)")
}

// options fills the update-method part of merge.Options.
func (f *updateFlags) options(o *merge.Options) error {
	m, err := merge.ParseMode(f.mode)
	if err != nil {
		return badArg("--mode: %v", err)
	}
	o.Mode, o.Keys, o.DeleteColumn, o.OrderBy = m, splitList(f.keys), strings.TrimSpace(f.deleteColumn), strings.TrimSpace(f.orderBy)
	o.OverwriteScope, o.PartitionPruning = strings.TrimSpace(f.overwriteScope), splitList(f.partitionPruning)
	return nil
}

type mergeFlags struct {
	source, format, schemaEvolution string
	readerOpts                      []string
	appID                           string
	batchID                         int64
	json                            bool
	update                          updateFlags
}

func newMergeCmd(mode Mode) *cobra.Command {
	var (
		out outputFlags
		f   mergeFlags
	)
	cmd := &cobra.Command{
		Use:   "merge <table> --source <file|prefix> --format parquet|json|csv --mode <method> [--keys a,b]",
		Short: "Apply a batch of keyed rows to a Delta table: upsert, update, delete, overwrite, truncateinsert, append",
		Long: `merge applies the rows of --source (one file, or every data file under a prefix) to the table in one
commit, with Spark's MERGE semantics:

  append          insert every row
  upsert          update the rows whose --keys match, insert the others
  update          update matched rows only
  delete          delete matched rows
  overwrite       replace every row (--overwrite-scope table), or only the partitions present in
                  the batch (--overwrite-scope partitions: dynamic partition overwrite)
  truncateinsert  remove every file, then insert the batch

Null keys never match. A target row matched by two source rows is an error naming the key, unless
--order-by deduplicates the batch (the row with the greatest value wins). --delete-column names a
boolean column (in the source only, or in the table too): true rows delete their match and are never
inserted. Target columns a source file lacks keep the target's values on update.

Dynamic file pruning: target files are skipped by the batch's partition values (key partition
columns, and --partition-pruning columns), then by each file's min/max of every key column against
the batch's sorted distinct keys; only the key columns of the remaining files are read. Matched rows
are removed with deletion vectors when the table enables them, by copy-on-write otherwise.

--app-id and --batch-id make the merge exactly once: the commit records the batch, and a batch at or
below the one committed for the application is a no-op that says so. A concurrent append of a file
that may hold a key, or an OPTIMIZE of a touched file, makes the merge plan again on the new version.`,
		Example: `  deltakeeper merge ./customers --source ./cdc/batch-0042.json --format json --mode upsert --keys id \
      --delete-column _deleted --order-by updated_at --app-id cdc --batch-id 42
  deltakeeper merge s3://lake/sales --source s3://drop/sales/2026-01-02/ --format parquet \
      --mode overwrite --overwrite-scope partitions`,
		Args: cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if f.json {
				out.format = "json"
			}
			return run(cmd, "merge", mode, &out, false, func(e *env) (*result.Result, error) {
				return mergeCommand(e, args[0], &f, cmd.Flags().Changed("batch-id"))
			})
		},
	}
	out.bind(cmd)
	fs := cmd.Flags()
	fs.StringVar(&f.source, "source", "", "the batch: one file, or a prefix whose data files are all read (required)")
	fs.StringVar(&f.format, "format", "", "parquet, json or csv (required)")
	fs.StringArrayVar(&f.readerOpts, "option", nil, "reader option key=value (repeatable), e.g. header=true")
	fs.StringVar(&f.schemaEvolution, "schema-evolution", string(format.FailOnNewColumns), "new source columns: failOnNewColumns, addNewColumns or none")
	fs.StringVar(&f.appID, "app-id", "", "application id of an exactly-once merge (with --batch-id)")
	fs.Int64Var(&f.batchID, "batch-id", 0, "batch number of an exactly-once merge (with --app-id); at or below the committed one is a no-op")
	fs.BoolVar(&f.json, "json", false, "print the JSON result (same as -o json)")
	f.update.bind(cmd, "")
	return cmd
}

func readerOptions(formatName string, opts []string, evolution string) (format.Options, error) {
	evo, err := format.ParseEvolution(evolution)
	if err != nil {
		return format.Options{}, badArg("--schema-evolution: %v", err)
	}
	kv := map[string]string{}
	for _, o := range opts {
		k, v, ok := strings.Cut(o, "=")
		if !ok || strings.TrimSpace(k) == "" {
			return format.Options{}, badArg("--option %q: give key=value", o)
		}
		kv[strings.TrimSpace(k)] = v
	}
	fo, err := format.ParseOptions(formatName, kv, evo)
	if err != nil {
		return format.Options{}, badArg("%v", err)
	}
	return fo, nil
}

func mergeCommand(e *env, location string, f *mergeFlags, batchSet bool) (*result.Result, error) {
	if f.source == "" || f.format == "" || f.update.mode == "" {
		return nil, badArg("merge needs --source, --format and --mode")
	}
	if (f.appID == "") != !batchSet {
		return nil, badArg("--app-id and --batch-id go together")
	}
	fo, err := readerOptions(f.format, f.readerOpts, f.schemaEvolution)
	if err != nil {
		return nil, err
	}
	o := merge.Options{Format: fo, AppID: f.appID, BatchID: f.batchID, Storage: storage.ConfigFromEnv()}
	if err := f.update.options(&o); err != nil {
		return nil, err
	}
	tbl, err := openTable(e.ctx, location)
	if err != nil {
		return nil, err
	}
	if o.Snapshot, err = tbl.Latest(e.ctx); err != nil {
		return nil, tableError(err)
	}
	batch, err := merge.ListBatch(e.ctx, f.source, o.Storage)
	if err != nil {
		return nil, result.Refuse(result.ReasonBadArgument, err)
	}
	var sourceBytes int64
	for _, f := range batch.Files {
		sourceBytes += f.Size
	}
	// The engine reports no counts yet: the source's size, and elapsed time while it runs.
	wprogress.Start(e.ctx, "merge", int64(len(batch.Files)), sourceBytes)
	rep, err := merge.Run(e.ctx, tbl, batch, o)
	if err == nil {
		e.progress.Advance(int64(len(batch.Files)), sourceBytes)
	}
	res := &result.Result{Merge: rep}
	if rep != nil {
		if rep.Version >= 0 {
			v := rep.Version
			res.Version = &v
		}
		switch {
		case rep.AlreadyCommitted:
			res.Outcome = result.NothingToDo
			fmt.Fprintf(e.text, "batch %d of %s is already committed (table version %d): nothing done\n", f.batchID, f.appID, rep.Version)
		case err == nil && rep.Version < 0:
			res.Outcome = result.NothingToDo
			fmt.Fprintf(e.text, "%s: %d source rows; nothing matched and nothing to insert: nothing committed\n", rep.Mode, rep.SourceRows)
		case err == nil:
			fmt.Fprintf(e.text, "%s: %d source rows; files %d, pruned %d by partition and %d by statistics, %d scanned, %d touched; rows %d matched, %d updated, %d deleted, %d inserted → version %d\n",
				rep.Mode, rep.SourceRows, rep.FilesTotal, rep.FilesPrunedByPartition, rep.FilesPrunedByStats, rep.FilesScanned, rep.FilesTouched,
				rep.RowsMatched, rep.RowsUpdated, rep.RowsDeleted, rep.RowsInserted, rep.Version)
		}
	}
	if err != nil {
		var re *result.Error
		if !errors.As(err, &re) {
			err = tableError(err)
		}
	}
	return res, err
}
