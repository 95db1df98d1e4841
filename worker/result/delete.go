package result

// Delete is the report of one DELETE (command "delete"): what file pruning kept and skipped and what
// happened to rows, with result.Merge's field names.
type Delete struct {
	Predicate string `json:"predicate"`
	// Files: FilesTotal live files in the snapshot read; FilesPrunedByPartition were skipped by their
	// partition values, FilesPrunedByStats by their statistics; FilesScanned had the predicate's
	// columns read; FilesTouched hold a deleted row; of them FilesRewritten were copied without the
	// deleted rows (copy-on-write), FilesRemoved lost every row, and DVsWritten got a new deletion
	// vector instead.
	FilesTotal             int `json:"filesTotal"`
	FilesPrunedByPartition int `json:"filesPrunedByPartition"`
	FilesPrunedByStats     int `json:"filesPrunedByStats"`
	FilesScanned           int `json:"filesScanned"`
	FilesTouched           int `json:"filesTouched"`
	FilesRewritten         int `json:"filesRewritten"`
	FilesRemoved           int `json:"filesRemoved"`
	FilesAdded             int `json:"filesAdded"`
	DVsWritten             int `json:"dvsWritten"`
	// RowsDeleted matched the predicate and were deleted; RowsCopied are the other rows of rewritten
	// files, carried over.
	RowsDeleted  int64 `json:"rowsDeleted"`
	RowsCopied   int64 `json:"rowsCopied"`
	BytesWritten int64 `json:"bytesWritten"`
	// Version is the commit (-1 when no row matched and nothing was committed).
	Version int64 `json:"version"`
	// Attempts counts plans: more than 1 when a concurrent commit removed a file the delete read
	// (an OPTIMIZE) and it started again on the new snapshot.
	Attempts int `json:"attempts,omitempty"`
}
