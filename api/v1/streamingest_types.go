package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// StreamIngestSpec describes continuous ingestion of new data into a DeltaTable. Every batch commits
// exactly once: the batch id is recorded in the table with a Delta txn action, so a retried batch is
// recognised and never applied twice.
// +kubebuilder:validation:XValidation:rule="self.mode != 'Upsert' || (has(self.upsert) && size(self.upsert.keys) > 0)",message="mode Upsert needs upsert.keys: the columns that identify a row"
// +kubebuilder:validation:XValidation:rule="self.mode == 'Upsert' || !has(self.upsert)",message="upsert applies only to mode Upsert"
// +kubebuilder:validation:XValidation:rule="!has(self.mergeSchema) || !self.mergeSchema || !has(self.schemaEvolution) || self.schemaEvolution == 'addNewColumns'",message="mergeSchema: true means schemaEvolution addNewColumns; set only one of them"
type StreamIngestSpec struct {
	// Source of new data.
	Source IngestSource `json:"source"`

	// Target is the name of the DeltaTable (same namespace) to write to.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
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
	// +kubebuilder:validation:XValidation:rule="quantity(string(self)).isGreaterThan(quantity('0'))",message="maxBytesPerTrigger must be positive, e.g. 10Gi"
	MaxBytesPerTrigger *resource.Quantity `json:"maxBytesPerTrigger,omitempty"`

	// Mode is Append (blind appends) or Upsert (merge on keys).
	// +optional
	// +kubebuilder:default=Append
	// +kubebuilder:validation:Enum=Append;Upsert
	Mode IngestMode `json:"mode,omitempty"`

	// Upsert configures merging for mode Upsert.
	// +optional
	Upsert *UpsertSpec `json:"upsert,omitempty"`

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
	// +listType=atomic
	PartitionBy []string `json:"partitionBy,omitempty"`

	// FullListingEvery: listings start after the largest key already taken (keys that arrive in
	// lexical order, such as dated prefixes, cost a listing of the new files only), and every this
	// many listings the whole prefix is listed to catch late files (default 8).
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=1000
	FullListingEvery *int32 `json:"fullListingEvery,omitempty"`

	// PartitionPruning lists target columns whose values in each batch restrict which target files an upsert
	// reads (dynamic file pruning on partition values and file statistics).
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
	// +kubebuilder:validation:XValidation:rule="self.matches('^(s3|abfss|abfs|wasbs|wasb|az|azure|gs)://.') || self.startsWith('file:///')",message="checkpointLocation must be an s3:// or file:/// URI, or an Azure (abfss://, abfs://, wasbs://, wasb://, az://) or gs:// one"
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
	IngestAppend IngestMode = "Append"
	IngestUpsert IngestMode = "Upsert"
)

// IngestSource is exactly one of files under a prefix or another DeltaTable's changes.
// +kubebuilder:validation:XValidation:rule="has(self.files) != has(self.deltaTable)",message="set exactly one of source.files or source.deltaTable"
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
	// Location is an s3:// or file:/// prefix to watch.
	// +kubebuilder:validation:MinLength=8
	// +kubebuilder:validation:MaxLength=1024
	// +kubebuilder:validation:XValidation:rule="self.matches('^(s3|abfss|abfs|wasbs|wasb|az|azure|gs)://.') || self.startsWith('file:///')",message="source.files.location must be an s3:// or file:/// URI, or an Azure (abfss://, abfs://, wasbs://, wasb://, az://) or gs:// one"
	Location string `json:"location"`

	// Format of the files.
	// +kubebuilder:validation:Enum=parquet;json;csv
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
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('10s')",message="trigger.interval must be at least 10s"
	Interval *metav1.Duration `json:"interval,omitempty"`

	// AvailableNow processes everything available, in batches bounded by the admission limits, then stops
	// (the stream becomes Completed) instead of running forever.
	// +optional
	AvailableNow bool `json:"availableNow,omitempty"`
}

// UpsertSpec configures merges.
type UpsertSpec struct {
	// Keys identify a row; a source row updates the target row with equal keys or is inserted.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=8
	// +kubebuilder:validation:items:MaxLength=255
	// +listType=atomic
	Keys []string `json:"keys"`

	// DeleteConditionColumn names a boolean source column; rows where it is true delete the target row.
	// +optional
	// +kubebuilder:validation:MaxLength=255
	DeleteConditionColumn string `json:"deleteConditionColumn,omitempty"`
}

// StreamIngestStatus reports the stream's progress.
type StreamIngestStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, Progressing.
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

	// Backlog is what the source holds that no batch has taken yet.
	// +optional
	Backlog *Backlog `json:"backlog,omitempty"`

	// ActiveJob is the running ingest Job, if any.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	ActiveJob string `json:"activeJob,omitempty"`

	// RecentBatches are the latest batches, newest first.
	// +optional
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	RecentBatches []BatchRecord `json:"recentBatches,omitempty"`
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
	// CommitTime of the batch.
	// +optional
	CommitTime *metav1.Time `json:"commitTime,omitempty"`
	// JobName that ran the batch.
	// +optional
	// +kubebuilder:validation:MaxLength=63
	JobName string `json:"jobName,omitempty"`
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
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Target",type=string,JSONPath=`.spec.target`
// +kubebuilder:printcolumn:name="Mode",type=string,JSONPath=`.spec.mode`
// +kubebuilder:printcolumn:name="Batch",type=integer,JSONPath=`.status.lastBatchId`
// +kubebuilder:printcolumn:name="Version",type=integer,JSONPath=`.status.committedVersion`
// +kubebuilder:printcolumn:name="Backlog",type=integer,JSONPath=`.status.backlog.files`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type StreamIngest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   StreamIngestSpec   `json:"spec"`
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
