package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StreamIngestSpec describes continuous ingestion of new data into a DeltaTable. Every batch commits
// exactly once: the batch id is recorded in the table with a Delta txn action, so a retried batch is
// recognised and never applied twice.
// +kubebuilder:validation:XValidation:rule="!(self.mode in ['Upsert', 'Update', 'Delete']) || (has(self.keys) && size(self.keys) > 0)",message="modes Upsert, Update and Delete need keys: the columns that identify a row, e.g. keys: [order_id]"
// +kubebuilder:validation:XValidation:rule="!has(self.keys) || self.mode in ['Upsert', 'Update', 'Delete']",message="keys apply only to modes Upsert, Update and Delete; Append, Overwrite and TruncateInsert write rows without matching them, so remove keys or set mode"
// +kubebuilder:validation:XValidation:rule="!has(self.deleteConditionColumn) || self.mode == 'Upsert'",message="deleteConditionColumn applies only to mode Upsert (mode Delete deletes every row whose keys match); remove it or set mode: Upsert"
// +kubebuilder:validation:XValidation:rule="!has(self.orderBy) || self.mode in ['Upsert', 'Update', 'Delete']",message="orderBy applies only to modes Upsert, Update and Delete, where it picks the latest of a batch's rows with equal keys"
// +kubebuilder:validation:XValidation:rule="!has(self.overwriteScope) || self.mode == 'Overwrite'",message="overwriteScope applies only to mode Overwrite; remove it or set mode: Overwrite"
// +kubebuilder:validation:XValidation:rule="!has(self.partitionPruning) || self.mode in ['Upsert', 'Update', 'Delete']",message="partitionPruning applies only to modes Upsert, Update and Delete, which read target files to match keys"
// +kubebuilder:validation:XValidation:rule="!has(self.mergeSchema) || !self.mergeSchema || !has(self.schemaEvolution) || self.schemaEvolution == 'addNewColumns'",message="mergeSchema: true means schemaEvolution addNewColumns; set only one of them"
// +kubebuilder:validation:XValidation:rule="!has(self.schemaEvolution) || self.schemaEvolution != 'rescue' || self.mode == 'Append'",message="schemaEvolution rescue is for mode Append; with an update method use addNewColumns, failOnNewColumns or none"
// +kubebuilder:validation:XValidation:rule="has(self.checkpointLocation) == has(oldSelf.checkpointLocation) && (!has(self.checkpointLocation) || self.checkpointLocation == oldSelf.checkpointLocation)",message="checkpointLocation is immutable: it holds the stream's progress; create a new StreamIngest to start over elsewhere"
type StreamIngestSpec struct {
	// Source of new data.
	Source IngestSource `json:"source"`

	// Target is the name of the DeltaTable (same namespace) to write to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",messageExpression=`'target "' + self + '" is not a DeltaTable name: lower-case letters, digits, - and ., starting and ending with a letter or digit, e.g. orders-2024'`
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="target is immutable: the stream's progress belongs to one table; create a new StreamIngest for another"
	Target string `json:"target"`

	// Trigger says when batches run.
	// +optional
	// +kubebuilder:default={}
	Trigger *IngestTrigger `json:"trigger,omitempty"`

	// MaxFilesPerTrigger caps the number of new source files per batch.
	// +optional
	// +kubebuilder:default=1000
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000000
	MaxFilesPerTrigger *int32 `json:"maxFilesPerTrigger,omitempty"`

	// MaxBytesPerTrigger is a soft cap on the bytes per batch: a batch stops taking files once it reaches it,
	// but always takes at least one file.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self))",messageExpression=`'maxBytesPerTrigger "' + string(self) + '" is not a size: use 256Mi or 1Gi (Ki, Mi, Gi, Ti; no space, no B)'`
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).isGreaterThan(quantity('0')))",message="maxBytesPerTrigger must be positive, e.g. 10Gi"
	MaxBytesPerTrigger *resource.Quantity `json:"maxBytesPerTrigger,omitempty"`

	// Mode is how each batch is written: Append (blind appends, the default), Upsert (update the rows whose
	// keys match, insert the others; rows with deleteConditionColumn true delete), Update (update matching
	// rows only), Delete (delete the rows whose keys match), Overwrite (the batch replaces the table, or the
	// partitions it holds with overwriteScope: Partitions), TruncateInsert (the batch replaces every row).
	// +optional
	// +kubebuilder:default=Append
	// +kubebuilder:validation:Enum=Append;Upsert;Update;Delete;Overwrite;TruncateInsert
	Mode IngestMode `json:"mode,omitempty"`

	// Keys identify a row for modes Upsert, Update and Delete (required there).
	// +optional
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() > 0)",message="keys must not be empty strings: name the columns that identify a row, e.g. keys: [order_id]"
	// +kubebuilder:validation:XValidation:rule="self.all(k, self.exists_one(d, d.lowerAscii() == k.lowerAscii()))",message="keys must be distinct ignoring case (Delta column names are case-insensitive)"
	// +listType=atomic
	Keys []string `json:"keys,omitempty"`

	// DeleteConditionColumn names a boolean source column for mode Upsert: rows where it is true delete the
	// target row with equal keys instead of updating it.
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	DeleteConditionColumn string `json:"deleteConditionColumn,omitempty"`

	// OrderBy names a source column for modes Upsert, Update and Delete: of a batch's rows with equal keys,
	// the one with the largest value wins (without it, the last one read).
	// +optional
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=255
	OrderBy string `json:"orderBy,omitempty"`

	// OverwriteScope is what a batch of mode Overwrite replaces: Table (default) or Partitions (only the
	// partitions the batch holds rows for).
	// +optional
	// +kubebuilder:validation:Enum=Table;Partitions
	OverwriteScope OverwriteScope `json:"overwriteScope,omitempty"`

	// MergeSchema lets new columns in the source be added to the table schema; it is the same as
	// schemaEvolution: addNewColumns, which supersedes it.
	// +optional
	MergeSchema bool `json:"mergeSchema,omitempty"`

	// SchemaEvolution says what source columns the table does not have do: addNewColumns adds them
	// (nullable, in the commit that carries the batch's data), rescue keeps the schema and puts unknown
	// fields and unconvertible values into the _rescued_data column with the source file's path,
	// failOnNewColumns (the default) stops the stream with a condition naming them, none drops them.
	// +optional
	// +kubebuilder:validation:Enum=addNewColumns;rescue;failOnNewColumns;none
	SchemaEvolution SchemaEvolution `json:"schemaEvolution,omitempty"`

	// OnBadFile is what a bad input file (corrupt, truncated, a value that does not convert, deleted
	// after listing) does: fail stops the stream with a condition naming the file, row and column and
	// commits nothing; skip leaves the file out and records it in status.
	// +optional
	// +kubebuilder:default=fail
	// +kubebuilder:validation:Enum=fail;skip
	OnBadFile string `json:"onBadFile,omitempty"`

	// IncludeExistingFiles decides, at the stream's first start only, whether the files already under
	// the source count (default true).
	// +optional
	// +kubebuilder:default=true
	IncludeExistingFiles *bool `json:"includeExistingFiles,omitempty"`

	// AllowOverwrites takes a file again when it is rewritten in place (a new ETag or modification
	// time under a key already taken). Off by default: each key is ingested once.
	// +optional
	AllowOverwrites bool `json:"allowOverwrites,omitempty"`

	// PartitionBy are the partition columns of the table when the stream's first batch creates it;
	// an existing table keeps its own.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.all(c, self.exists_one(d, d.lowerAscii() == c.lowerAscii()))",message="partitionBy columns must be distinct ignoring case (Delta column names are case-insensitive)"
	// +listType=atomic
	PartitionBy []string `json:"partitionBy,omitempty"`

	// FullListingEvery: listings start after the largest key already taken (keys that arrive in
	// lexical order, such as dated prefixes, cost a listing of the new files only), and every this
	// many listings the whole prefix is listed to catch late files (default 8).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	FullListingEvery *int32 `json:"fullListingEvery,omitempty"`

	// PartitionPruning lists target columns whose values in each batch restrict which target files modes
	// Upsert, Update and Delete read (dynamic file pruning on partition values and file statistics).
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=255
	// +listType=atomic
	PartitionPruning []string `json:"partitionPruning,omitempty"`

	// OptimizeWrite overrides the table's delta.autoOptimize.optimizeWrite for this stream.
	// +optional
	OptimizeWrite *bool `json:"optimizeWrite,omitempty"`

	// AutoCompact overrides the table's delta.autoOptimize.autoCompact for this stream.
	// +optional
	AutoCompact *bool `json:"autoCompact,omitempty"`

	// CheckpointLocation stores the stream's progress (default: <table>/_deltakeeper/streams/<namespace>.<name>).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$') || self.matches('^(abfss|abfs|wasbs|wasb)://[A-Za-z0-9._-]+@[A-Za-z0-9-]+([.](dfs|blob)[.][A-Za-z0-9.-]+)?(/.*)?$') || self.matches('^(az|azure)://[A-Za-z0-9._-]+(/.*)?$') || self.matches('^gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](/.*)?$') || self.matches('^file:///.+$')",message="checkpointLocation must be s3://<bucket>[/prefix], abfss://<container>@<account>.dfs.core.windows.net[/prefix] (or abfs://, wasbs://, wasb://, az://<container>[/prefix]), gs://<bucket>[/prefix] with a valid bucket or container name, or file:///<absolute path>"
	CheckpointLocation string `json:"checkpointLocation,omitempty"`

	// Suspend stops new batches.
	// +optional
	// +kubebuilder:default=false
	Suspend bool `json:"suspend,omitempty"`

	// JobTemplate customises the ingest pods.
	// +optional
	JobTemplate *JobTemplate `json:"jobTemplate,omitempty"`
}

// SchemaEvolution is a stream's schema evolution mode.
type SchemaEvolution string

// Schema evolution modes.
const (
	SchemaAddNewColumns    SchemaEvolution = "addNewColumns"
	SchemaRescue           SchemaEvolution = "rescue"
	SchemaFailOnNewColumns SchemaEvolution = "failOnNewColumns"
	SchemaNone             SchemaEvolution = "none"
)

// EffectiveSchemaEvolution is the mode the stream runs with: schemaEvolution, else addNewColumns for
// mergeSchema: true, else failOnNewColumns.
func (s *StreamIngestSpec) EffectiveSchemaEvolution() SchemaEvolution {
	switch {
	case s.SchemaEvolution != "":
		return s.SchemaEvolution
	case s.MergeSchema:
		return SchemaAddNewColumns
	}
	return SchemaFailOnNewColumns
}

// IngestMode is how a batch is written.
type IngestMode string

// Ingest modes.
const (
	IngestAppend         IngestMode = "Append"
	IngestUpsert         IngestMode = "Upsert"
	IngestUpdate         IngestMode = "Update"
	IngestDelete         IngestMode = "Delete"
	IngestOverwrite      IngestMode = "Overwrite"
	IngestTruncateInsert IngestMode = "TruncateInsert"
)

// IsKeyed reports whether the mode matches source rows to target rows by keys.
func (m IngestMode) IsKeyed() bool {
	return m == IngestUpsert || m == IngestUpdate || m == IngestDelete
}

// OverwriteScope is what an Overwrite batch replaces.
type OverwriteScope string

// Overwrite scopes.
const (
	OverwriteTable      OverwriteScope = "Table"
	OverwritePartitions OverwriteScope = "Partitions"
)

// IngestSource is exactly one of files under a prefix or another DeltaTable's changes.
// +kubebuilder:validation:XValidation:rule="has(self.files) != has(self.deltaTable)",message="set exactly one of source.files or source.deltaTable"
// +kubebuilder:validation:XValidation:rule="has(self.files) == has(oldSelf.files)",message="the source's kind is immutable: the stream's progress belongs to one source; create a new StreamIngest for another"
type IngestSource struct {
	// Files ingests new files that appear under a location.
	// +optional
	Files *FileSource `json:"files,omitempty"`

	// DeltaTable ingests the changes of another DeltaTable (same namespace) as a stream.
	// +optional
	DeltaTable *DeltaTableSource `json:"deltaTable,omitempty"`
}

// FileSource is a location with files of one format.
// +kubebuilder:validation:XValidation:rule="self.format != 'parquet' || !has(self.options) || size(self.options) == 0",message="parquet takes no reader options"
// +kubebuilder:validation:XValidation:rule="self.format != 'json' || !has(self.options) || self.options.all(k, k.lowerAscii() in ['multiline', 'dateformat', 'timestampformat', 'infercolumntypes'])",message="json options are multiLine, dateFormat, timestampFormat and inferColumnTypes"
// +kubebuilder:validation:XValidation:rule="self.format != 'csv' || !has(self.options) || self.options.all(k, k.lowerAscii() in ['header', 'delimiter', 'sep', 'quote', 'escape', 'comment', 'nullvalue', 'dateformat', 'timestampformat', 'infercolumntypes'])",message="csv options are header, delimiter (sep), quote, escape, comment, nullValue, dateFormat, timestampFormat and inferColumnTypes"
// +kubebuilder:validation:XValidation:rule="!has(self.options) || self.options.all(k, !(k.lowerAscii() in ['header', 'multiline', 'infercolumntypes']) || self.options[k] in ['true', 'false'])",message="header, multiLine and inferColumnTypes take true or false"
type FileSource struct {
	// Location is the prefix to watch, in the forms a DeltaTable's location takes (s3://, Azure, gs://,
	// file:///) and under the same rule, so a bucket name the store would refuse fails at admission.
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^s3://[a-z0-9][a-z0-9.-]{1,61}[a-z0-9](/.*)?$') || self.matches('^(abfss|abfs|wasbs|wasb)://[A-Za-z0-9._-]+@[A-Za-z0-9-]+([.](dfs|blob)[.][A-Za-z0-9.-]+)?(/.*)?$') || self.matches('^(az|azure)://[A-Za-z0-9._-]+(/.*)?$') || self.matches('^gs://[a-z0-9][a-z0-9._-]{1,220}[a-z0-9](/.*)?$') || self.matches('^file:///.+$')",message="source.files.location must be s3://<bucket>[/prefix], abfss://<container>@<account>.dfs.core.windows.net[/prefix] (or abfs://, wasbs://, wasb://, az://<container>[/prefix]), gs://<bucket>[/prefix] with a valid bucket or container name, or file:///<absolute path>"
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="source.files.location is immutable: the stream's progress belongs to one source; create a new StreamIngest for another"
	Location string `json:"location"`

	// Format of the files.
	// +kubebuilder:validation:Enum=parquet;json;csv
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="source.files.format is immutable: the files already taken were read as this format; create a new StreamIngest for another"
	Format string `json:"format"`

	// Options for the reader, e.g. header=true and delimiter=; for csv. csv takes header, delimiter
	// (or sep), quote, escape, comment, nullValue, dateFormat, timestampFormat, inferColumnTypes; json
	// takes multiLine, dateFormat, timestampFormat, inferColumnTypes; parquet takes none. Files named
	// .gz or .zst are decompressed.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.size() <= 64 && self[k].size() <= 256)",message="options keys must be at most 64 and values at most 256 characters"
	Options map[string]string `json:"options,omitempty"`
}

// DeltaTableSource reads another table's changes.
type DeltaTableSource struct {
	// Name of the source DeltaTable.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:XValidation:rule="self.matches('^[a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*$')",messageExpression=`'source.deltaTable.name "' + self + '" is not a DeltaTable name: lower-case letters, digits, - and ., starting and ending with a letter or digit, e.g. orders-2024'`
	// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="source.deltaTable.name is immutable: the stream's progress belongs to one source; create a new StreamIngest for another"
	Name string `json:"name"`

	// StartingVersion is the first source version to read (default: the version at stream start).
	// +optional
	// +kubebuilder:validation:Minimum=0
	StartingVersion *int64 `json:"startingVersion,omitempty"`
}

// IngestTrigger says when batches run.
type IngestTrigger struct {
	// Interval between batches.
	// +optional
	// +kubebuilder:default="1m"
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$')",messageExpression=`'trigger.interval "' + self + '" is not a duration: use 24h, 168h, 720h (units h, m, s; there is no d)'`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') || duration(self) >= duration('10s')",message="trigger.interval must be at least 10s"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// AvailableNow processes everything available, in batches bounded by the admission limits, then stops
	// (the stream becomes Completed) instead of running forever.
	// +optional
	AvailableNow bool `json:"availableNow,omitempty"`
}

// StreamIngestStatus reports the stream's progress. It is filled from the results of the stream's ingest
// Jobs: every Job runs batches for at most about half the trigger interval and exits, so a committed batch
// shows here within the interval (see docs/ingest.md).
type StreamIngestStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Progressing, Stalled.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastBatchID is the id of the last committed batch.
	// +optional
	LastBatchID *int64 `json:"lastBatchId,omitempty"`

	// LastBatch describes the last committed batch.
	// +optional
	LastBatch *BatchRecord `json:"lastBatch,omitempty"`

	// CommittedVersion is the target table version of the last batch.
	// +optional
	CommittedVersion *int64 `json:"committedVersion,omitempty"`

	// Backlog is what the source holds that no batch has taken yet, as the last Job saw it.
	// +optional
	Backlog *Backlog `json:"backlog,omitempty"`

	// Queue is where the object's next worker Job waits for admission, while it waits.
	// +optional
	Queue *QueueStatus `json:"queue,omitempty"`

	// ActiveJob is the running ingest Job, if any.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ActiveJob string `json:"activeJob,omitempty"`

	// JobsStarted counts the ingest Jobs the stream started; it names the next one, so a Job is never
	// started twice.
	// +optional
	JobsStarted int64 `json:"jobsStarted,omitempty"`

	// ConsecutiveFailures counts the Jobs that failed in a row; the next Job waits 10s·2^(n-1), at most 10m.
	// +optional
	ConsecutiveFailures int32 `json:"consecutiveFailures,omitempty"`

	// NextJobTime is when the next ingest Job starts.
	// +optional
	NextJobTime *metav1.Time `json:"nextJobTime,omitempty"`

	// RecentBatches are the latest batches, newest first.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	RecentBatches []BatchRecord `json:"recentBatches,omitempty"`

	// RecentJobs are the latest ingest Jobs, newest first.
	// +optional
	// +kubebuilder:validation:MaxItems=5
	// +listType=atomic
	RecentJobs []RunRecord `json:"recentJobs,omitempty"`

	// SchemaChanges are the columns the stream added to the table (schemaEvolution addNewColumns), oldest
	// first.
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=255
	// +listType=atomic
	SchemaChanges []string `json:"schemaChanges,omitempty"`

	// SkippedFiles are the latest files onBadFile: skip left out, newest last; SkippedCount counts all.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	SkippedFiles []SkippedFile `json:"skippedFiles,omitempty"`

	// SkippedCount counts every file the stream skipped.
	// +optional
	SkippedCount int64 `json:"skippedCount,omitempty"`

	// RescuedRows counts rows whose unknown fields or unconvertible values went to _rescued_data.
	// +optional
	RescuedRows int64 `json:"rescuedRows,omitempty"`

	// AutoCompaction reports auto compaction after the stream's commits.
	// +optional
	AutoCompaction *AutoCompactionStatus `json:"autoCompaction,omitempty"`
}

// SkippedFile is a source file a stream left out.
type SkippedFile struct {
	// File is the source key.
	// +kubebuilder:validation:MaxLength=1024
	File string `json:"file"`
	// Reason the file was left out.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Reason string `json:"reason,omitempty"`
}

// AutoCompactionStatus counts auto compaction's runs and describes the last one.
type AutoCompactionStatus struct {
	// Runs counts auto compaction runs that rewrote files.
	Runs int64 `json:"runs"`
	// FilesRemoved and FilesAdded by the last run.
	// +optional
	FilesRemoved int64 `json:"filesRemoved,omitempty"`
	// +optional
	FilesAdded int64 `json:"filesAdded,omitempty"`
	// Version the last run committed.
	// +optional
	Version *int64 `json:"version,omitempty"`
}

// BatchRecord describes one ingest batch.
type BatchRecord struct {
	// BatchID of the batch.
	BatchID int64 `json:"batchId"`
	// Files read by the batch.
	Files int64 `json:"files"`
	// Bytes read by the batch.
	Bytes int64 `json:"bytes"`
	// Rows written by the batch.
	Rows int64 `json:"rows"`
	// Version of the target table the batch committed.
	// +optional
	Version *int64 `json:"version,omitempty"`
	// FilesWritten counts the data files the batch wrote per partition directory ("" unpartitioned).
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	FilesWritten map[string]int64 `json:"filesWritten,omitempty"`
	// MeanFileBytes is the mean size of the data files the batch wrote.
	// +optional
	MeanFileBytes int64 `json:"meanFileBytes,omitempty"`
	// Merge reports what a batch of a keyed mode, Overwrite or TruncateInsert read and changed.
	// +optional
	Merge *BatchMerge `json:"merge,omitempty"`
	// CommitTime of the batch (the end of the Job that ran it).
	// +optional
	CommitTime *metav1.Time `json:"commitTime,omitempty"`
	// JobName that ran the batch.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	JobName string `json:"jobName,omitempty"`
}

// BatchMerge is what an update-method batch read and changed: how dynamic file pruning narrowed the target
// files it read, and what happened to rows.
type BatchMerge struct {
	// FilesTotal live target files; FilesPrunedByPartition and FilesPrunedByStats were skipped by the batch's
	// partition values and by key statistics; FilesScanned had their keys read; FilesTouched held a match.
	FilesTotal             int64 `json:"filesTotal"`
	FilesPrunedByPartition int64 `json:"filesPrunedByPartition"`
	FilesPrunedByStats     int64 `json:"filesPrunedByStats"`
	FilesScanned           int64 `json:"filesScanned"`
	FilesTouched           int64 `json:"filesTouched"`
	// Rows updated, deleted and inserted.
	RowsUpdated  int64 `json:"rowsUpdated"`
	RowsDeleted  int64 `json:"rowsDeleted"`
	RowsInserted int64 `json:"rowsInserted"`
	// Attempts counts plans: more than 1 when a concurrent commit (maintenance) made the batch re-plan.
	// +optional
	Attempts int32 `json:"attempts,omitempty"`
}

// Backlog is the pending source data.
type Backlog struct {
	// Files pending.
	Files int64 `json:"files"`
	// Bytes pending.
	Bytes int64 `json:"bytes"`
	// OldestPendingAge is the age of the oldest pending file.
	// +optional
	OldestPendingAge *metav1.Duration `json:"oldestPendingAge,omitempty"`
}

// StreamIngest continuously ingests new files into a DeltaTable.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=si;ingest,categories=deltakeeper
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Batch",type=integer,JSONPath=`.status.lastBatchId`
// +kubebuilder:printcolumn:name="Version",type=integer,JSONPath=`.status.committedVersion`
// +kubebuilder:printcolumn:name="Backlog",type=integer,JSONPath=`.status.backlog.files`
// +kubebuilder:printcolumn:name="Lag",type=string,JSONPath=`.status.backlog.oldestPendingAge`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`,priority=1
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StreamIngest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec StreamIngestSpec `json:"spec"`

	// Status is written by the controller. A new object starts with observedGeneration 0, so that GitOps
	// tools (kstatus) read it as in progress until the first reconcile.
	// +kubebuilder:default={observedGeneration: 0}
	Status StreamIngestStatus `json:"status,omitempty"`
}

// StreamIngestList is a list of StreamIngests.
// +kubebuilder:object:root=true
type StreamIngestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []StreamIngest `json:"items"`
}

func init() {
	register(&StreamIngest{}, &StreamIngestList{})
}
