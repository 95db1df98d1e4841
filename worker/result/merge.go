package result

// Merge is the report of one MERGE (command "merge", and each update-method batch of "ingest"):
// what dynamic file pruning kept and skipped, and what happened to rows. dv's result.Delete mirrors
// the file and row field names.
type Merge struct {
	Mode string `json:"mode"`
	// Files: FilesTotal live files in the snapshot read; FilesPrunedByPartition were skipped by the
	// batch's partition values (and --partition-pruning), FilesPrunedByStats by min/max of the keys
	// against the batch's sorted distinct keys; FilesScanned had their key columns read;
	// FilesTouched hold a matched row; FilesRewritten were copied without the matched rows
	// (copy-on-write), DVsWritten got a new deletion vector instead.
	FilesTotal             int `json:"filesTotal"`
	FilesPrunedByPartition int `json:"filesPrunedByPartition"`
	FilesPrunedByStats     int `json:"filesPrunedByStats"`
	FilesScanned           int `json:"filesScanned"`
	FilesTouched           int `json:"filesTouched"`
	FilesRewritten         int `json:"filesRewritten"`
	FilesRemoved           int `json:"filesRemoved"`
	FilesAdded             int `json:"filesAdded"`
	DVsWritten             int `json:"dvsWritten"`
	// FilesCopied of the FilesAdded are batch files whose stored pages were copied as they are,
	// not encoded again (an upsert writing every batch row unchanged).
	FilesCopied int `json:"filesCopied,omitempty"`
	// Rows: SourceRows read from the batch (after --order-by deduplication: SourceRowsDeduplicated
	// fewer); RowsMatched target rows matched a source row; of them RowsUpdated were replaced and
	// RowsDeleted removed; RowsInserted are new rows; RowsCopied are unmodified rows copy-on-write
	// carried over.
	SourceRows             int64 `json:"sourceRows"`
	SourceRowsDeduplicated int64 `json:"sourceRowsDeduplicated,omitempty"`
	RowsMatched            int64 `json:"rowsMatched"`
	RowsUpdated            int64 `json:"rowsUpdated"`
	RowsDeleted            int64 `json:"rowsDeleted"`
	RowsInserted           int64 `json:"rowsInserted"`
	BytesWritten           int64 `json:"bytesWritten"`
	// Version is the commit (-1 when nothing was committed).
	Version int64 `json:"version"`
	// Attempts counts plans: more than 1 when a concurrent commit made the merge re-plan.
	Attempts int `json:"attempts,omitempty"`
	// AlreadyCommitted: --app-id/--batch-id named a batch the table already holds; nothing was done.
	AlreadyCommitted bool `json:"alreadyCommitted,omitempty"`
	// SchemaChanges are columns added to the table (addNewColumns).
	SchemaChanges []string `json:"schemaChanges,omitempty"`
}
