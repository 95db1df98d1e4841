package result

// Ingest is the report of an ingest run (command "ingest"), what StreamIngest status is filled from.
// Added to schema version 1 without a bump: every field is optional, so v1 readers that predate it
// still read the document, and documents without it still read here.
type Ingest struct {
	Stream string `json:"stream"` // the stream id (appId of its txn actions)
	// LastBatch is the stream's last committed batch (-1 before the first); NumBatches and Rows count
	// this run's batches and rows.
	LastBatch  int64         `json:"lastBatch"`
	NumBatches int           `json:"numBatches"`
	Rows       int64         `json:"rows"`
	Batches    []IngestBatch `json:"batches,omitempty"` // this run's, newest last, at most MaxIngestBatches
	Backlog    *Backlog      `json:"backlog,omitempty"`
	// SchemaChanges are columns added to the table by this run (addNewColumns).
	SchemaChanges []string `json:"schemaChanges,omitempty"`
	// NewColumns are columns the source has and the table lacks, when they stopped the stream
	// (failOnNewColumns).
	NewColumns []string `json:"newColumns,omitempty"`
	Rescued    int64    `json:"rescued,omitempty"`
	// Skipped are files onBadFile=skip left out (at most MaxIngestSkipped; SkippedCount counts all).
	Skipped      []SkippedFile `json:"skipped,omitempty"`
	SkippedCount int           `json:"skippedCount,omitempty"`
	// BadFile is the input that stopped the run, when one did.
	BadFile *BadFile `json:"badFile,omitempty"`
	// AutoCompaction holds auto compaction's runs after this run's commits.
	AutoCompaction []Op `json:"autoCompaction,omitempty"`
}

// Limits that keep an ingest result under MaxBytes.
const (
	MaxIngestBatches = 10
	MaxIngestSkipped = 5
)

// IngestBatch is one committed batch.
type IngestBatch struct {
	ID      int64 `json:"id"`
	Files   int   `json:"files"`
	Bytes   int64 `json:"bytes"`
	Rows    int64 `json:"rows"`
	Version int64 `json:"version"`
	// Written counts data files written per partition directory ("" unpartitioned); MeanFileBytes is
	// their mean size.
	Written       map[string]int `json:"written,omitempty"`
	MeanFileBytes int64          `json:"meanFileBytes,omitempty"`
	// Merge is the batch's merge report when the stream has an update method other than append.
	Merge *Merge `json:"merge,omitempty"`
}

// Backlog is what the source holds that no batch has taken.
type Backlog struct {
	Files        int64 `json:"files"`
	Bytes        int64 `json:"bytes"`
	OldestAgeSec int64 `json:"oldestAgeSec,omitempty"`
}

// SkippedFile is a file left out by onBadFile=skip.
type SkippedFile struct {
	File   string `json:"file"`
	Reason string `json:"reason,omitempty"`
}

// BadFile locates a bad input.
type BadFile struct {
	File   string `json:"file"`
	Row    int64  `json:"row,omitempty"`
	Column string `json:"column,omitempty"`
}
