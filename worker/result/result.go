// Package result is the worker's report: one compact JSON document per command, printed with `-o json` and
// written to the Job's termination-message file, from which the reconcilers fill status. The schema is
// versioned (field "v") and kept under MaxBytes, the kubelet's limit for a termination message.
package result

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"time"
)

// SchemaVersion is the version of the result schema; readers reject versions they do not know.
const SchemaVersion = 1

// MaxBytes is the kubelet's cap on one container's termination message.
const MaxBytes = 4096

// Outcome is how a command ended.
type Outcome string

// Outcomes, with the process exit codes of the top-level CLI. Under `deltakeeper worker` (Job mode)
// NothingToDo exits 0 too, because Kubernetes has no way to count another exit code as success; the
// result document still says nothing_to_do.
// The codes and their meaning are in exitcodes.go.
const (
	Succeeded   Outcome = "succeeded"     // ExitSucceeded
	Failed      Outcome = "failed"        // ExitFailed: may succeed on retry (storage error, lost conflict)
	Refused     Outcome = "refused"       // ExitRefused: will not succeed until someone changes the table or the arguments
	NothingToDo Outcome = "nothing_to_do" // ExitNothingToDo
)

// ExitCode returns the CLI exit code of an outcome.
func (o Outcome) ExitCode() int {
	switch o {
	case Succeeded:
		return ExitSucceeded
	case Refused:
		return ExitRefused
	case NothingToDo:
		return ExitNothingToDo
	default:
		return ExitFailed
	}
}

// Reasons are stable, machine-readable causes (CamelCase, as Kubernetes condition reasons).
const (
	ReasonUnsupportedFeature = "UnsupportedFeature" // a table feature the worker does not implement
	ReasonBadArgument        = "BadArgument"        // an invalid flag or argument
	ReasonTableNotFound      = "TableNotFound"      // no _delta_log at the location
	ReasonUnreachable        = "Unreachable"        // storage could not be read (network, credentials, permissions)
	ReasonConflict           = "Conflict"           // a concurrent commit conflicted and retries were exhausted
	ReasonCorruptTable       = "CorruptTable"       // the log or a data file violates the protocol
	ReasonInternal           = "Internal"           // anything else
)

// Result is the report of one command.
type Result struct {
	V          int      `json:"v"`
	Command    string   `json:"cmd"`
	Outcome    Outcome  `json:"outcome"`
	Reason     string   `json:"reason,omitempty"`
	Message    string   `json:"msg,omitempty"`
	Version    *int64   `json:"version,omitempty"` // table version read or committed last
	DurationMs int64    `json:"ms"`
	Table      *Table   `json:"table,omitempty"` // inspect, and the state after maintenance
	Applied    *Applied `json:"applied,omitempty"`
	Ops        []Op     `json:"ops,omitempty"` // maintenance steps, in order
	Ingest     *Ingest  `json:"ingest,omitempty"`
	Merge      *Merge   `json:"merge,omitempty"`
	Delete     *Delete  `json:"delete,omitempty"`
	Share      *Share   `json:"share,omitempty"` // a scale-out share (share.go)
}

// Table is what a table is: the facts DeltaTable status shows.
type Table struct {
	Version            int64           `json:"version"`
	NumFiles           int64           `json:"files"`
	SizeBytes          int64           `json:"bytes"`
	NumSmallFiles      int64           `json:"small"`
	SmallFileThreshold int64           `json:"smallBelow"`
	UnclusteredBytes   int64           `json:"unclusteredBytes,omitempty"`
	PartitionColumns   []string        `json:"partitionBy,omitempty"`
	ClusteringColumns  []string        `json:"clusterBy,omitempty"`
	MinReaderVersion   int32           `json:"minReader"`
	MinWriterVersion   int32           `json:"minWriter"`
	ReaderFeatures     []string        `json:"readerFeatures,omitempty"`
	WriterFeatures     []string        `json:"writerFeatures,omitempty"`
	Quality            []ColumnQuality `json:"quality,omitempty"`
}

// ColumnQuality is the clustering quality of one column (see worker/cluster).
type ColumnQuality struct {
	Column                string  `json:"col"`
	Status                string  `json:"status"` // ok | no_stats
	NumFiles              int64   `json:"files"`
	NumFilesWithStats     int64   `json:"withStats"`
	AvgCoveragePct        float64 `json:"coveragePct"`
	AvgDepth              float64 `json:"avgDepth"`
	MaxDepth              int64   `json:"maxDepth"`
	OverlapRatio          float64 `json:"overlap"`
	SkippingEffectiveness float64 `json:"skipping"`
	// MeasuredSkipping checks the estimate: the mean share of the other files point queries on real
	// values skip (layoutstats.ColumnQuality.MeasuredSkipping).
	MeasuredSkipping float64 `json:"measured"`
}

// Applied says what an inspect run committed to make the table match its declaration.
type Applied struct {
	Properties        []string `json:"properties,omitempty"` // keys set or changed
	ClusteringColumns []string `json:"clusterBy,omitempty"`  // new clustering columns, when changed
	Version           *int64   `json:"version,omitempty"`    // the commit, when one was needed
}

// Op is one maintenance step of a run.
type Op struct {
	Name         string  `json:"op"` // optimize | cluster | vacuum | checkpoint | logCleanup | alter
	Outcome      Outcome `json:"outcome"`
	Reason       string  `json:"reason,omitempty"`
	Message      string  `json:"msg,omitempty"`
	Version      *int64  `json:"version,omitempty"` // version committed by the step
	FilesAdded   int64   `json:"filesAdded,omitempty"`
	FilesRemoved int64   `json:"filesRemoved,omitempty"`
	BytesAdded   int64   `json:"bytesAdded,omitempty"`
	BytesRemoved int64   `json:"bytesRemoved,omitempty"`
	RowsPurged   int64   `json:"rowsPurged,omitempty"` // deletion-vector rows dropped by rewrites
	// ConflictFiles counts input files whose rewrite was abandoned because a concurrent commit removed or
	// changed them (a lost conflict; re-planned files count again each time they are lost). The manager
	// runs a table's next maintenance alone when its runs keep losing work to keyed writers.
	ConflictFiles int64 `json:"conflictFiles,omitempty"`
	// TempFilesRemoved and TempBytesRemoved count the temp files and incomplete uploads of interrupted
	// writes that vacuum and log cleanup removed (not part of FilesRemoved).
	TempFilesRemoved int64 `json:"tempFilesRemoved,omitempty"`
	TempBytesRemoved int64 `json:"tempBytesRemoved,omitempty"`
	DurationMs       int64 `json:"ms,omitempty"`
}

// Encode renders the result as compact JSON no larger than MaxBytes, shortening the message and dropping the
// quality details if it would not fit.
func (r *Result) Encode() ([]byte, error) {
	r.V = SchemaVersion
	data, err := json.Marshal(r)
	if err != nil {
		return nil, err
	}
	if len(data) <= MaxBytes {
		return data, nil
	}
	trimmed := *r
	trimmed.Message = shorten(trimmed.Message, 256)
	for i := range trimmed.Ops {
		trimmed.Ops[i].Message = shorten(trimmed.Ops[i].Message, 128)
	}
	if data, err = json.Marshal(&trimmed); err == nil && len(data) <= MaxBytes {
		return data, nil
	}
	if trimmed.Ingest != nil {
		in := *trimmed.Ingest
		in.Batches = append([]IngestBatch(nil), in.Batches...)
		for i := range in.Batches {
			in.Batches[i].Written = nil
		}
		if len(in.Batches) > 3 {
			in.Batches = in.Batches[len(in.Batches)-3:]
		}
		for i := range in.Skipped {
			in.Skipped[i].Reason = shorten(in.Skipped[i].Reason, 96)
		}
		if len(in.SchemaChanges) > 20 {
			in.SchemaChanges = append(in.SchemaChanges[:20:20], "...")
		}
		if len(in.NewColumns) > 20 {
			in.NewColumns = append(in.NewColumns[:20:20], "...")
		}
		trimmed.Ingest = &in
	}
	if trimmed.Share != nil {
		sh := *trimmed.Share
		sh.Superseded = nil
		trimmed.Share = &sh
	}
	if trimmed.Table != nil {
		t := *trimmed.Table
		t.Quality, t.ReaderFeatures, t.WriterFeatures = nil, nil, nil
		trimmed.Table = &t
	}
	if data, err = json.Marshal(&trimmed); err != nil {
		return nil, err
	}
	if len(data) > MaxBytes {
		return nil, fmt.Errorf("result is %d bytes even when trimmed, over the %d-byte termination-message limit", len(data), MaxBytes)
	}
	return data, nil
}

// Decode parses a result, rejecting unknown schema versions.
func Decode(data []byte) (*Result, error) {
	var r Result
	if err := json.Unmarshal(data, &r); err != nil {
		return nil, fmt.Errorf("parse worker result: %w", err)
	}
	if r.V != SchemaVersion {
		return nil, fmt.Errorf("worker result has schema version %d, this build understands %d", r.V, SchemaVersion)
	}
	switch r.Outcome {
	case Succeeded, Failed, Refused, NothingToDo:
	default:
		return nil, fmt.Errorf("worker result has unknown outcome %q", r.Outcome)
	}
	return &r, nil
}

// WriteFile writes the encoded result to path (the Job's terminationMessagePath).
func (r *Result) WriteFile(path string) error {
	data, err := r.Encode()
	if err != nil {
		return err
	}
	if err := os.WriteFile(path, data, 0o644); err != nil {
		return fmt.Errorf("write result to %s: %w", path, err)
	}
	return nil
}

// Since sets DurationMs from a start time.
func (r *Result) Since(start time.Time) { r.DurationMs = time.Since(start).Milliseconds() }

// Error is an error that carries the outcome and reason it should be reported with.
type Error struct {
	Outcome Outcome
	Reason  string
	Err     error
}

func (e *Error) Error() string { return e.Err.Error() }
func (e *Error) Unwrap() error { return e.Err }

// ExitCode lets the CLI exit with the outcome's code.
func (e *Error) ExitCode() int { return e.Outcome.ExitCode() }

// Refuse wraps err as a refusal with a reason.
func Refuse(reason string, err error) error {
	return &Error{Outcome: Refused, Reason: reason, Err: err}
}

// Fail wraps err as a failure with a reason.
func Fail(reason string, err error) error { return &Error{Outcome: Failed, Reason: reason, Err: err} }

// Classify returns the outcome and reason an error should be reported with.
func Classify(err error) (Outcome, string) {
	var e *Error
	if errors.As(err, &e) {
		return e.Outcome, e.Reason
	}
	return Failed, ReasonInternal
}

func shorten(s string, n int) string {
	if len(s) <= n {
		return s
	}
	return s[:n-3] + "..."
}
