package ingest

import (
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/state"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// BatchReport describes one committed batch.
type BatchReport struct {
	BatchID int64
	Files   int
	Bytes   int64
	Rows    int64
	// Version is the table version holding the batch's txn.
	Version int64
	// Replayed is set when the batch's plan was stored by an earlier run (or another process);
	// AlreadyCommitted when its commit was found in the table and only the marker was missing.
	Replayed, AlreadyCommitted bool
	// FilesWritten counts the data files written per partition directory ("" unpartitioned).
	FilesWritten map[string]int
	BytesWritten int64
	// SchemaChange lists the columns the batch added to the table ("a", "s.b").
	SchemaChange []string
	Rescued      int64
	Skipped      []state.SkippedFile
	// Created is set when the batch created the table.
	Created bool
	// AutoCompaction is auto compaction's report after the commit (nil when it did not apply);
	// AutoCompactionErr an error it met, which never fails the batch.
	AutoCompaction    *optimize.Report
	AutoCompactionErr error
	// Merge is the batch's merge report when the stream has an update method other than append.
	Merge *result.Merge

	adds   []*delta.AddFile
	commit *delta.CommitResult
}

// MeanFileSize is the mean size of the data files the batch wrote.
func (b *BatchReport) MeanFileSize() int64 {
	n := 0
	for _, c := range b.FilesWritten {
		n += c
	}
	if n == 0 {
		return 0
	}
	return b.BytesWritten / int64(n)
}

// Report describes a run.
type Report struct {
	StreamID   string
	Checkpoint string
	Batches    []BatchReport
	Backlog    Backlog
	// LastBatchID is the stream's last committed batch (-1 before the first).
	LastBatchID int64
	// Version is the table version after the run (-1 when there is no table).
	Version int64
}
