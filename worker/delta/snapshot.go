package delta

import (
	"encoding/json"
	"fmt"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Snapshot is the immutable state of a table at one version. It is safe for concurrent readers.
// The slices and pointers it returns are shared: callers must not modify them.
type Snapshot struct {
	table      *Table
	version    Version
	protocol   Protocol
	metadata   Metadata
	schema     *types.StructType
	props      TableProperties
	mode       ColumnMappingMode
	files      []*AddFile        // log order
	byKey      fileIndex         // key → position in files
	dvByPath   map[string]string // DV unique id of every live file that has a DV
	tombstones []*RemoveFile
	txns       map[string]SetTransaction
	domains    map[string]DomainMetadata
	commitInfo *CommitInfo
	timestamp  time.Time
	ict        *int64
	segment    *logSegment
	totalBytes int64
	// rowCountsOnly: the files' Stats hold numRecords only (LoadOptions.RowCountsOnly).
	rowCountsOnly bool
	// writeViolation is a validation failure that blocks every operation but OpRead
	// (validate_state.go).
	writeViolation error
}

// Version is the snapshot's table version.
func (s *Snapshot) Version() Version { return s.version }

// Table is the table this snapshot belongs to.
func (s *Snapshot) Table() *Table { return s.table }

// Protocol is the table protocol in force.
func (s *Snapshot) Protocol() Protocol { return s.protocol }

// Metadata is the table metadata in force.
func (s *Snapshot) Metadata() Metadata { return s.metadata }

// Schema is the parsed logical table schema.
func (s *Snapshot) Schema() *types.StructType { return s.schema }

// Properties are the table properties (metaData.configuration) with typed accessors.
func (s *Snapshot) Properties() TableProperties { return s.props }

// ColumnMappingMode is the table's column mapping mode.
func (s *Snapshot) ColumnMappingMode() ColumnMappingMode { return s.mode }

// PhysicalSchema is the schema as stored in data files (see PhysicalSchema).
func (s *Snapshot) PhysicalSchema() *types.StructType { return PhysicalSchema(s.schema, s.mode) }

// Files returns the live files in log order (checkpoint order, then commit order): the same
// order for the same log, but not sorted.
func (s *Snapshot) Files() []*AddFile { return s.files }

// NumFiles is the number of live files.
func (s *Snapshot) NumFiles() int { return len(s.files) }

// TotalBytes is the sum of the live files' sizes.
func (s *Snapshot) TotalBytes() int64 { return s.totalBytes }

// File finds a live file by its logical key.
func (s *Snapshot) File(k FileKey) (*AddFile, bool) {
	if len(s.byKey.slots) == 0 {
		return nil, false // a snapshot without files
	}
	_, pos, ok := s.byKey.find(s.byKey.hashKey(k), func(pos int) bool {
		f := s.files[pos]
		return f.Path == k.Path && dvIDEquals(f.DeletionVector, k.DVID)
	})
	if !ok {
		return nil, false
	}
	return s.files[pos], true
}

// livePath finds a live file by path, whatever its DV.
func (s *Snapshot) livePath(path string) (*AddFile, bool) {
	if f, ok := s.File(FileKey{Path: path}); ok {
		return f, true
	}
	if dv, ok := s.dvByPath[path]; ok {
		return s.File(FileKey{Path: path, DVID: dv})
	}
	return nil, false
}

// Tombstones returns the remove actions still in the log state (not yet expired by a
// checkpoint), in log order. VACUUM uses them; so do checkpoints.
func (s *Snapshot) Tombstones() []*RemoveFile { return s.tombstones }

// Txn returns the latest txn action of an application (idempotent writes).
func (s *Snapshot) Txn(appID string) (SetTransaction, bool) {
	t, ok := s.txns[appID]
	return t, ok
}

// Txns returns every application's latest txn action, sorted by appId.
func (s *Snapshot) Txns() []SetTransaction {
	out := make([]SetTransaction, 0, len(s.txns))
	for _, t := range s.txns {
		out = append(out, t)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].AppID < out[j].AppID })
	return out
}

// Domain returns a live (not removed) domain's metadata.
func (s *Snapshot) Domain(name string) (DomainMetadata, bool) {
	d, ok := s.domains[name]
	return d, ok
}

// Domains returns all live domains, sorted by name.
func (s *Snapshot) Domains() []DomainMetadata {
	out := make([]DomainMetadata, 0, len(s.domains))
	for _, d := range s.domains {
		out = append(out, d)
	}
	sort.Slice(out, func(i, j int) bool { return out[i].Domain < out[j].Domain })
	return out
}

// CommitInfo is the commitInfo of the commit at the snapshot version (nil when that commit file
// is gone, or did not have one).
func (s *Snapshot) CommitInfo() *CommitInfo { return s.commitInfo }

// Timestamp is the commit time of the snapshot version: the in-commit timestamp when the table
// has them for this version, otherwise the commit file's modification time.
func (s *Snapshot) Timestamp() time.Time { return s.timestamp }

// InCommitTimestamp returns the version's in-commit timestamp (ms) if it has one.
func (s *Snapshot) InCommitTimestamp() (int64, bool) {
	if s.ict == nil {
		return 0, false
	}
	return *s.ict, true
}

// CheckpointVersion is the version of the checkpoint the snapshot was built from (NoVersion if
// it was replayed from commit 0).
func (s *Snapshot) CheckpointVersion() Version { return s.segment.cpVersion }

// CheckOperation applies the table-features gate (CheckProtocol) to this snapshot.
func (s *Snapshot) CheckOperation(op Operation) error {
	if err := s.checkWritable(op); err != nil {
		return err
	}
	return CheckProtocol(s.table.Location(), &s.protocol, &s.metadata, s.schema, op)
}

// PartitionColumns returns the partition columns' fields, in metadata order.
func (s *Snapshot) PartitionColumns() []*types.StructField {
	out := make([]*types.StructField, 0, len(s.metadata.PartitionColumns))
	for _, c := range s.metadata.PartitionColumns {
		if f := s.schema.Field(c); f != nil {
			out = append(out, f)
		}
	}
	return out
}

// PartitionValue returns the typed value of a (logical) partition column for a file. Partition
// values are keyed by physical name under column mapping.
func (s *Snapshot) PartitionValue(f *AddFile, column string) (types.Value, error) {
	field := s.schema.Field(column)
	if field == nil || !slices.Contains(s.metadata.PartitionColumns, column) {
		return nil, fmt.Errorf("table %s has no partition column %q", s.table.Location(), column)
	}
	pv, ok := f.PartitionValues.Get(PhysicalName(field, s.mode))
	if !ok {
		return nil, nil // a missing entry means null
	}
	return ParsePartitionValue(field.Type, pv)
}

// PartitionKey returns a canonical key of a file's typed partition values, equal for files whose
// values are equal however they were serialized: group files by it before bin-packing, as
// Spark's OPTIMIZE groups by normalized partition values.
func (s *Snapshot) PartitionKey(f *AddFile) (string, error) {
	var b strings.Builder
	for _, field := range s.PartitionColumns() {
		pv, ok := f.PartitionValues.Get(PhysicalName(field, s.mode))
		if !ok {
			pv = PartitionValue{Column: PhysicalName(field, s.mode), Null: true}
		}
		n, err := NormalizePartitionValue(field.Type, pv)
		if err != nil {
			return "", fmt.Errorf("file %s: %w", f.Path, err)
		}
		fmt.Fprintf(&b, "%d:%s;", len(n), n)
	}
	return b.String(), nil
}

// Stats parses a file's statistics against the table schema; ok=false when the file has none.
func (s *Snapshot) Stats(f *AddFile) (*FileStats, bool, error) {
	if s.rowCountsOnly {
		return nil, false, s.errRowCountsOnly("parse the statistics of " + f.Path)
	}
	if f.Stats == "" {
		return nil, false, nil
	}
	st, err := ParseStats(f.Stats, s.schema, s.mode)
	if err != nil {
		return nil, false, fmt.Errorf("file %s: %w", f.Path, err)
	}
	return st, true, nil
}

// ClusteringColumns returns the clustering columns from the delta.clustering domain as physical
// column paths (ok=false for an unclustered table). The domain's configuration is
// {"clusteringColumns":[["col"],["nested","col"]]} with physical names.
func (s *Snapshot) ClusteringColumns() ([][]string, bool, error) {
	if d, ok := s.domains[DomainClustering]; ok {
		var cfg struct {
			ClusteringColumns [][]string `json:"clusteringColumns"`
		}
		if err := json.Unmarshal([]byte(d.Configuration), &cfg); err != nil {
			return nil, false, fmt.Errorf("table %s: domain %s: %w", s.table.Location(), DomainClustering, err)
		}
		return cfg.ClusteringColumns, true, nil
	}
	// Databricks' liquid preview (writer feature "liquid") keeps the columns in its own domain, as
	// {"clusteringColumns":[{"physicalName":["a","b"]}]}; only trust it when the feature is there.
	if d, ok := s.domains[DomainLiquidPreview]; ok && s.protocol.HasWriterFeature(FeatureLiquidPreview) {
		var cfg struct {
			ClusteringColumns []struct {
				PhysicalName []string `json:"physicalName"`
			} `json:"clusteringColumns"`
		}
		if err := json.Unmarshal([]byte(d.Configuration), &cfg); err != nil {
			return nil, false, fmt.Errorf("table %s: domain %s: %w", s.table.Location(), DomainLiquidPreview, err)
		}
		cols := make([][]string, 0, len(cfg.ClusteringColumns))
		for _, c := range cfg.ClusteringColumns {
			cols = append(cols, c.PhysicalName)
		}
		return cols, true, nil
	}
	return nil, false, nil
}

// ClusteringColumnsLogical resolves ClusteringColumns to logical column paths.
func (s *Snapshot) ClusteringColumnsLogical() ([][]string, bool, error) {
	phys, ok, err := s.ClusteringColumns()
	if !ok || err != nil {
		return nil, ok, err
	}
	out := make([][]string, 0, len(phys))
	for _, p := range phys {
		_, logical, err := ResolvePhysicalColumn(s.schema, s.mode, p)
		if err != nil {
			return nil, true, fmt.Errorf("table %s: clustering column: %w", s.table.Location(), err)
		}
		out = append(out, logical)
	}
	return out, true, nil
}

// System domains deltakeeper reads or writes.
const (
	DomainClustering    = "delta.clustering"
	DomainRowTracking   = "delta.rowTracking"
	DomainLiquidPreview = "delta.liquid"
)
