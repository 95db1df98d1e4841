package merge

import (
	"fmt"
	"log/slog"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// Mode is the update method: what a batch does to the table (Azure Data Factory's Delta sink's
// insert / upsert / update / delete / overwrite / truncate, with Spark's MERGE semantics).
type Mode string

// The update methods.
const (
	// Append inserts every row; no keys, no target reads (the ingest fast path's semantics).
	Append Mode = "append"
	// Upsert updates the target rows a source row matches by key and inserts the rest; a true
	// delete-marker deletes the match instead and is never inserted.
	Upsert Mode = "upsert"
	// Update updates matched rows only (a true delete-marker deletes the match).
	Update Mode = "update"
	// Delete deletes the matched rows.
	Delete Mode = "delete"
	// Overwrite replaces every row (OverwriteScope table) or the rows of the partitions present in
	// the batch (OverwriteScope partitions: dynamic partition overwrite).
	Overwrite Mode = "overwrite"
	// TruncateInsert removes every file, then inserts the batch.
	TruncateInsert Mode = "truncateinsert"
)

// Modes lists the update methods in documentation order.
var Modes = []Mode{Append, Upsert, Update, Delete, Overwrite, TruncateInsert}

// ParseMode accepts a mode case-insensitively.
func ParseMode(s string) (Mode, error) {
	for _, m := range Modes {
		if strings.EqualFold(s, string(m)) {
			return m, nil
		}
	}
	return "", fmt.Errorf("mode %q: use append, upsert, update, delete, overwrite or truncateinsert", s)
}

// keyed reports whether the mode matches source rows to target rows by key.
func (m Mode) keyed() bool { return m == Upsert || m == Update || m == Delete }

// Overwrite scopes.
const (
	ScopeTable      = "table"
	ScopePartitions = "partitions"
)

// DefaultMaxReplans bounds how often a merge plans again after a concurrent commit invalidated its
// plan (an OPTIMIZE removing a touched file, an append of a matching key).
const DefaultMaxReplans = 8

// Options configure one merge.
type Options struct {
	Mode Mode
	// Snapshot, when set, is the table's latest snapshot as the caller just loaded it: the first
	// attempt plans on it instead of replaying the log again (later attempts load the newest).
	Snapshot *delta.Snapshot
	// Format reads the source files (format, reader options, schema evolution: addNewColumns adds
	// source columns to the table, failOnNewColumns refuses them, none drops them).
	Format format.Options
	// Keys are the join columns (upsert, update, delete; optional for overwrite, where they only
	// serve OrderBy deduplication).
	Keys []string
	// DeleteColumn names a boolean source column: true rows delete their match and are never
	// inserted (and are not written by overwrite or truncateinsert).
	DeleteColumn string
	// OrderBy deduplicates the batch by key: of the rows sharing a key, the one with the greatest
	// value wins (the later row on ties; nulls order first). Without it a target row matched by two
	// source rows is an error naming the key.
	OrderBy string
	// OverwriteScope is ScopeTable (default) or ScopePartitions.
	OverwriteScope string
	// PartitionPruning are partition columns whose values in the batch bound the target partitions
	// a merge reads: the caller asserts that no source row matches a target row of another value.
	PartitionPruning []string
	// AppID and BatchID make the merge exactly once: the commit carries txn (AppID, BatchID), and a
	// batch at or below the table's committed version for AppID is a no-op. AppID "" disables it.
	AppID   string
	BatchID int64
	// Write controls the new data files (target size).
	Write table.WriteOptions
	// MaxReplans bounds re-planning after conflicts (DefaultMaxReplans when 0).
	MaxReplans int
	// Operation and OperationParameters override commitInfo (ingest's "STREAMING UPDATE").
	Operation           string
	OperationParameters map[string]string
	// Storage opens data files outside the table root.
	Storage storage.Config
	Logger  *slog.Logger
	// beforeCommit is a test hook run just before the commit of each attempt, given the paths of
	// the attempt's insert files.
	beforeCommit func(attempt int, inserts []string)
	// rowsOnly is a test hook that reads every batch as rows, so that tests can run the same merges
	// through both paths and compare the tables (the route is otherwise the batch's schema).
	rowsOnly bool
	// batchRead is a test hook told whether each batch was read as columns.
	batchRead func(columnar bool)
}

func (o *Options) check() error {
	if o.Mode == "" {
		return fmt.Errorf("no mode: use append, upsert, update, delete, overwrite or truncateinsert")
	}
	if _, err := ParseMode(string(o.Mode)); err != nil {
		return err
	}
	if o.Mode.keyed() && len(o.Keys) == 0 {
		return fmt.Errorf("mode %s needs key columns (--keys)", o.Mode)
	}
	if o.OrderBy != "" && len(o.Keys) == 0 {
		return fmt.Errorf("--order-by %s deduplicates by key: give --keys too", o.OrderBy)
	}
	switch strings.ToLower(o.OverwriteScope) {
	case "", ScopeTable:
		o.OverwriteScope = ScopeTable
	case ScopePartitions:
		o.OverwriteScope = ScopePartitions
	default:
		return fmt.Errorf("overwrite scope %q: use table or partitions", o.OverwriteScope)
	}
	if o.OverwriteScope == ScopePartitions && o.Mode != Overwrite {
		return fmt.Errorf("overwrite scope partitions is for mode overwrite, not %s", o.Mode)
	}
	if o.Format.Evolution == format.Rescue {
		return fmt.Errorf("schema evolution rescue is for append ingest streams; merge takes addNewColumns, failOnNewColumns or none")
	}
	if o.MaxReplans <= 0 {
		o.MaxReplans = DefaultMaxReplans
	}
	if o.Logger == nil {
		o.Logger = slog.New(slog.DiscardHandler)
	}
	return nil
}
