package delta

import (
	"encoding/json"
	"fmt"
	"strconv"
)

// Action is one line of a commit file (or one row of a checkpoint): exactly one of the fields is
// set. Unknown action names and unknown fields are ignored on read, as PROTOCOL.md §Actions asks.
type Action struct {
	Protocol           *Protocol           `json:"protocol,omitempty"`
	MetaData           *Metadata           `json:"metaData,omitempty"`
	Add                *AddFile            `json:"add,omitempty"`
	Remove             *RemoveFile         `json:"remove,omitempty"`
	CDC                *AddCDCFile         `json:"cdc,omitempty"`
	Txn                *SetTransaction     `json:"txn,omitempty"`
	CommitInfo         *CommitInfo         `json:"commitInfo,omitempty"`
	DomainMetadata     *DomainMetadata     `json:"domainMetadata,omitempty"`
	Sidecar            *Sidecar            `json:"sidecar,omitempty"`
	CheckpointMetadata *CheckpointMetadata `json:"checkpointMetadata,omitempty"`
}

// Protocol is the protocol action. Feature lists are meaningful only from reader version 3 /
// writer version 7 on; Features() resolves legacy versions into the features they imply.
type Protocol struct {
	MinReaderVersion int      `json:"minReaderVersion"`
	MinWriterVersion int      `json:"minWriterVersion"`
	ReaderFeatures   []string `json:"readerFeatures,omitempty"`
	WriterFeatures   []string `json:"writerFeatures,omitempty"`
}

// MarshalJSON writes the feature lists exactly when the versions call for them (possibly empty),
// and never otherwise: a reader-3 protocol without "readerFeatures" is invalid.
func (p Protocol) MarshalJSON() ([]byte, error) {
	out := struct {
		MinReaderVersion int       `json:"minReaderVersion"`
		MinWriterVersion int       `json:"minWriterVersion"`
		ReaderFeatures   *[]string `json:"readerFeatures,omitempty"`
		WriterFeatures   *[]string `json:"writerFeatures,omitempty"`
	}{MinReaderVersion: p.MinReaderVersion, MinWriterVersion: p.MinWriterVersion}
	if p.MinReaderVersion >= 3 {
		rf := nonNil(p.ReaderFeatures)
		out.ReaderFeatures = &rf
	}
	if p.MinWriterVersion >= 7 {
		wf := nonNil(p.WriterFeatures)
		out.WriterFeatures = &wf
	}
	return json.Marshal(out)
}

// Metadata is the metaData action; the latest one completely replaces earlier ones.
type Metadata struct {
	ID               string            `json:"id"`
	Name             string            `json:"name,omitempty"`
	Description      string            `json:"description,omitempty"`
	Format           Format            `json:"format"`
	SchemaString     string            `json:"schemaString"`
	PartitionColumns []string          `json:"partitionColumns"`
	Configuration    map[string]string `json:"configuration"`
	CreatedTime      *int64            `json:"createdTime,omitempty"`
}

// Format is metaData.format; the provider is always "parquet".
type Format struct {
	Provider string            `json:"provider"`
	Options  map[string]string `json:"options"`
}

// MarshalJSON writes empty lists and maps as [] and {} rather than null, as Spark does.
func (m Metadata) MarshalJSON() ([]byte, error) {
	type plain Metadata
	c := plain(m)
	c.PartitionColumns = nonNil(c.PartitionColumns)
	if c.Configuration == nil {
		c.Configuration = map[string]string{}
	}
	if c.Format.Provider == "" {
		c.Format.Provider = "parquet"
	}
	if c.Format.Options == nil {
		c.Format.Options = map[string]string{}
	}
	return json.Marshal(c)
}

// AddFile is the add action. Path is the URL-encoded URI from the log, kept verbatim; use
// Table.ObjectKey to turn it into a storage key.
type AddFile struct {
	Path                    string                    `json:"path"`
	PartitionValues         PartitionValues           `json:"partitionValues"`
	Size                    int64                     `json:"size"`
	ModificationTime        int64                     `json:"modificationTime"`
	DataChange              bool                      `json:"dataChange"`
	Stats                   string                    `json:"stats,omitempty"`
	Tags                    map[string]string         `json:"tags,omitempty"`
	DeletionVector          *DeletionVectorDescriptor `json:"deletionVector,omitempty"`
	BaseRowID               *int64                    `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64                    `json:"defaultRowCommitVersion,omitempty"`
	ClusteringProvider      string                    `json:"clusteringProvider,omitempty"`
}

// Key is the logical file identity used by reconciliation and conflict checks.
func (a *AddFile) Key() FileKey { return FileKey{Path: a.Path, DVID: a.DeletionVector.UniqueID()} }

// Remove builds the remove action that retires this file at deletionTime (ms since epoch),
// carrying every field the protocol wants re-emitted: extendedFileMetadata with partition values,
// size, stats and tags; the DV (the logical file is (path, dv)); and the row-tracking fields.
func (a *AddFile) Remove(deletionTime int64, dataChange bool) *RemoveFile {
	size := a.Size
	ext := true
	return &RemoveFile{
		Path:                    a.Path,
		DeletionTimestamp:       &deletionTime,
		DataChange:              dataChange,
		ExtendedFileMetadata:    &ext,
		PartitionValues:         a.PartitionValues,
		Size:                    &size,
		Stats:                   a.Stats,
		Tags:                    a.Tags,
		DeletionVector:          a.DeletionVector,
		BaseRowID:               a.BaseRowID,
		DefaultRowCommitVersion: a.DefaultRowCommitVersion,
	}
}

// WithDeletionVector returns the add that replaces this file after rows were deleted by a new
// DV: same path, size and partition values, dataChange=true, and — so that row ids stay stable —
// the same baseRowId and defaultRowCommitVersion. Remove the old (path, DV) in the same commit.
func (a *AddFile) WithDeletionVector(dv *DeletionVectorDescriptor, modificationTime int64) *AddFile {
	c := *a
	c.DeletionVector = dv
	c.DataChange = true
	c.ModificationTime = modificationTime
	return &c
}

// RemoveFile is the remove action: a tombstone kept until its retention expires, for VACUUM.
type RemoveFile struct {
	Path                    string                    `json:"path"`
	DeletionTimestamp       *int64                    `json:"deletionTimestamp,omitempty"`
	DataChange              bool                      `json:"dataChange"`
	ExtendedFileMetadata    *bool                     `json:"extendedFileMetadata,omitempty"`
	PartitionValues         PartitionValues           `json:"partitionValues"`
	Size                    *int64                    `json:"size,omitempty"`
	Stats                   string                    `json:"stats,omitempty"`
	Tags                    map[string]string         `json:"tags,omitempty"`
	DeletionVector          *DeletionVectorDescriptor `json:"deletionVector,omitempty"`
	BaseRowID               *int64                    `json:"baseRowId,omitempty"`
	DefaultRowCommitVersion *int64                    `json:"defaultRowCommitVersion,omitempty"`
}

// Key is the logical file identity (path, DV unique id).
func (r *RemoveFile) Key() FileKey { return FileKey{Path: r.Path, DVID: r.DeletionVector.UniqueID()} }

// DeletionTime returns deletionTimestamp, or 0 when a legacy writer left it out.
func (r *RemoveFile) DeletionTime() int64 {
	if r.DeletionTimestamp == nil {
		return 0
	}
	return *r.DeletionTimestamp
}

// AddCDCFile is the cdc action (change data files under _change_data/).
type AddCDCFile struct {
	Path            string            `json:"path"`
	PartitionValues PartitionValues   `json:"partitionValues"`
	Size            int64             `json:"size"`
	DataChange      bool              `json:"dataChange"`
	Tags            map[string]string `json:"tags,omitempty"`
}

// SetTransaction is the txn action used for idempotent writes: the latest version per appId wins.
type SetTransaction struct {
	AppID       string `json:"appId"`
	Version     int64  `json:"version"`
	LastUpdated *int64 `json:"lastUpdated,omitempty"`
}

// DomainMetadata is the domainMetadata action; Removed=true is a tombstone for the domain.
type DomainMetadata struct {
	Domain        string `json:"domain"`
	Configuration string `json:"configuration"`
	Removed       bool   `json:"removed"`
}

// Sidecar references a file of add/remove actions under _delta_log/_sidecars/ (V2 checkpoints).
type Sidecar struct {
	Path             string            `json:"path"`
	SizeInBytes      int64             `json:"sizeInBytes"`
	ModificationTime int64             `json:"modificationTime"`
	Tags             map[string]string `json:"tags,omitempty"`
}

// CheckpointMetadata is the one-per-V2-checkpoint header action.
type CheckpointMetadata struct {
	Version int64             `json:"version"`
	Tags    map[string]string `json:"tags,omitempty"`
}

// FileKey identifies a logical file: the same path with a different DV is a different logical file.
type FileKey struct {
	Path string
	DVID string
}

func (k FileKey) String() string {
	if k.DVID == "" {
		return k.Path
	}
	return k.Path + " (deletion vector " + k.DVID + ")"
}

// CommitInfo is the free-form commitInfo action. Only the fields deltakeeper needs are typed;
// Raw keeps the whole object as read. On write the typed fields are emitted, in Spark's shapes
// (operationParameters and operationMetrics values are strings).
type CommitInfo struct {
	InCommitTimestamp   *int64            `json:"inCommitTimestamp,omitempty"`
	Timestamp           *int64            `json:"timestamp,omitempty"`
	Operation           string            `json:"operation,omitempty"`
	OperationParameters map[string]string `json:"operationParameters"`
	ReadVersion         *int64            `json:"readVersion,omitempty"`
	IsolationLevel      string            `json:"isolationLevel,omitempty"`
	IsBlindAppend       *bool             `json:"isBlindAppend,omitempty"`
	OperationMetrics    map[string]string `json:"operationMetrics,omitempty"`
	Tags                map[string]string `json:"tags,omitempty"`
	EngineInfo          string            `json:"engineInfo,omitempty"`
	TxnID               string            `json:"txnId,omitempty"`

	// Raw is the object as read from the log (nil for commit infos built here).
	Raw json.RawMessage `json:"-"`
}

// UnmarshalJSON is lenient: other engines put non-string values into operationParameters and
// operationMetrics, and an odd optional field must never make a table unreadable. Only the two
// timestamps, which time travel and in-commit timestamps depend on, are decoded strictly.
func (c *CommitInfo) UnmarshalJSON(b []byte) error {
	var fields map[string]json.RawMessage
	if err := json.Unmarshal(b, &fields); err != nil {
		return err
	}
	out := CommitInfo{Raw: append(json.RawMessage(nil), b...)}
	for _, ts := range []struct {
		name string
		dst  **int64
	}{{"inCommitTimestamp", &out.InCommitTimestamp}, {"timestamp", &out.Timestamp}} {
		if raw, ok := fields[ts.name]; ok && string(raw) != "null" {
			var v int64
			if err := json.Unmarshal(raw, &v); err != nil {
				return fmt.Errorf("commitInfo.%s: %w", ts.name, err)
			}
			*ts.dst = &v
		}
	}
	lenient := func(name string, dst any) { _ = json.Unmarshal(fields[name], dst) }
	lenient("operation", &out.Operation)
	lenient("readVersion", &out.ReadVersion)
	lenient("isolationLevel", &out.IsolationLevel)
	lenient("isBlindAppend", &out.IsBlindAppend)
	lenient("engineInfo", &out.EngineInfo)
	lenient("txnId", &out.TxnID)
	var params, metrics, tags map[string]json.RawMessage
	lenient("operationParameters", &params)
	lenient("operationMetrics", &metrics)
	lenient("tags", &tags)
	out.OperationParameters = rawMapToStrings(params)
	out.OperationMetrics = rawMapToStrings(metrics)
	out.Tags = rawMapToStrings(tags)
	*c = out
	return nil
}

// rawMapToStrings keeps string values as they are and other JSON values in their JSON text.
func rawMapToStrings(m map[string]json.RawMessage) map[string]string {
	if m == nil {
		return nil
	}
	out := make(map[string]string, len(m))
	for k, v := range m {
		var s string
		if json.Unmarshal(v, &s) == nil {
			out[k] = s
		} else {
			out[k] = string(v)
		}
	}
	return out
}

// BlindAppend reports whether the commit declared itself a blind append. A missing flag counts as
// false: conflict checks then treat the commit's adds as data it may have derived from reads.
func (c *CommitInfo) BlindAppend() bool {
	return c != nil && c.IsBlindAppend != nil && *c.IsBlindAppend
}

func nonNil[T any](s []T) []T {
	if s == nil {
		return []T{}
	}
	return s
}

func ptr[T any](v T) *T { return &v }

func itoa(n int64) string { return strconv.FormatInt(n, 10) }

func jsonMarshal(v any) ([]byte, error) { return json.Marshal(v) }
