package delta

import (
	"encoding/json"
	"fmt"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// RowTracking is a table's row-tracking state (PROTOCOL.md §Row Tracking). When the writer
// feature is supported (and not suspended) every new file gets a fresh baseRowId above the
// high-water mark and a defaultRowCommitVersion; the Transaction does that. When it is enabled,
// rewrites must also preserve each row's id and commit version by writing them into the
// materialized columns; the rewriter does that with PreservedRowID/PreservedRowCommitVersion.
type RowTracking struct {
	Supported bool // rowTracking is a writer feature of the table
	Enabled   bool // delta.enableRowTracking=true: row ids are stable and must be preserved
	Suspended bool // delta.rowTrackingSuspended=true: no ids are assigned to new files
	// HighWaterMark is the highest row id assigned so far (-1 when none).
	HighWaterMark int64
	// Physical names of the materialized columns holding preserved ids (empty when unset).
	MaterializedRowIDColumn            string
	MaterializedRowCommitVersionColumn string
}

// RowTracking returns the table's row-tracking state.
func (s *Snapshot) RowTracking() (RowTracking, error) {
	rt := RowTracking{
		Supported:                          s.protocol.HasWriterFeature(FeatureRowTracking),
		Enabled:                            s.props.flag(PropEnableRowTracking),
		Suspended:                          s.props.flag(PropRowTrackingSuspended),
		HighWaterMark:                      -1,
		MaterializedRowIDColumn:            s.props[PropMaterializedRowIDColumn],
		MaterializedRowCommitVersionColumn: s.props[PropMaterializedRowCommitVer],
	}
	if d, ok := s.domains[DomainRowTracking]; ok {
		hwm, err := parseHighWaterMark(d.Configuration)
		if err != nil {
			return rt, fmt.Errorf("table %s: %w", s.table.Location(), err)
		}
		rt.HighWaterMark = hwm
	} else if rt.Supported {
		// Every writer that assigns ids records the mark, so a table with ids and no mark was
		// written by one that did not. Fresh ids must still not collide with assigned ones: the
		// mark is taken from the files themselves. Tables with a mark do not pay for this pass.
		hwm, err := s.assignedRowIDMax()
		if err != nil {
			return rt, fmt.Errorf("table %s: %w", s.table.Location(), err)
		}
		rt.HighWaterMark = hwm
	}
	return rt, nil
}

// assignedRowIDMax is the highest row id the live files' baseRowIds cover (-1 when none has one).
func (s *Snapshot) assignedRowIDMax() (int64, error) {
	highest := int64(-1)
	for _, f := range s.files {
		if f.BaseRowID == nil {
			continue
		}
		n, ok := NumRecords(f.Stats)
		if !ok {
			return 0, fmt.Errorf("file %s has a baseRowId but no numRecords statistic and the table records no %s domain, so the ids it covers are unknown: %w",
				f.Path, DomainRowTracking, ErrUnsupportedTable)
		}
		highest = max(highest, *f.BaseRowID+n-1)
	}
	return highest, nil
}

// assigns reports whether new files must get row ids.
func (rt RowTracking) assigns() bool { return rt.Supported && !rt.Suspended }

func parseHighWaterMark(cfg string) (int64, error) {
	var c struct {
		RowIDHighWaterMark *int64 `json:"rowIdHighWaterMark"`
	}
	if err := json.Unmarshal([]byte(cfg), &c); err != nil || c.RowIDHighWaterMark == nil {
		return 0, fmt.Errorf("domain %s: configuration %q has no rowIdHighWaterMark", DomainRowTracking, cfg)
	}
	return *c.RowIDHighWaterMark, nil
}

func highWaterMarkConfig(hwm int64) string { return fmt.Sprintf(`{"rowIdHighWaterMark":%d}`, hwm) }

// PreservedRowID returns the stable row id of the row at physical index rowIndex of file f:
// the materialized column's value when the row has one, otherwise baseRowId + rowIndex.
func PreservedRowID(f *AddFile, rowIndex int64, materialized types.Value) (int64, error) {
	id, err := f.RowTrackingBase().RowID(rowIndex, materialized)
	if err != nil {
		return 0, fmt.Errorf("file %s: %w", f.Path, err)
	}
	return id, nil
}

// PreservedRowCommitVersion returns the row commit version of a row of f: the materialized
// column's value when set, otherwise the file's defaultRowCommitVersion.
func PreservedRowCommitVersion(f *AddFile, materialized types.Value) (int64, error) {
	v, err := f.RowTrackingBase().RowCommitVersion(materialized)
	if err != nil {
		return 0, fmt.Errorf("file %s: %w", f.Path, err)
	}
	return v, nil
}

// RowTrackingBase is what f says about its rows' identities, in the form parquetio.Rewrite takes
// (RewriteInput.RowTracking) to preserve them while copying columns.
func (f *AddFile) RowTrackingBase() parquetio.RowTrackingBase {
	return parquetio.RowTrackingBase{BaseRowID: f.BaseRowID, DefaultRowCommitVersion: f.DefaultRowCommitVersion}
}

// MustPreserve reports whether a rewrite has to carry every row's id and commit version into the
// materialized columns: row tracking is enabled and active. It is the condition under which a
// rewrite's commit must declare TxnOptions.RowTrackingPreserved.
func (rt RowTracking) MustPreserve() bool { return rt.Enabled && rt.Supported && !rt.Suspended }

// PreservedColumns names the materialized columns for parquetio.RewriteOptions.RowTracking when the
// rewrite must preserve row ids (MustPreserve), nil otherwise. Row tracking enabled without the
// column names cannot be preserved and is refused (the features gate refuses such tables first).
func (rt RowTracking) PreservedColumns() (*parquetio.RowTrackingColumns, error) {
	if !rt.MustPreserve() {
		return nil, nil
	}
	if rt.MaterializedRowIDColumn == "" || rt.MaterializedRowCommitVersionColumn == "" {
		return nil, fmt.Errorf("row tracking is enabled but the table names no materialized row id / row commit version columns, so a rewrite cannot preserve row ids (set %s and %s, as Spark does when enabling row tracking): %w",
			PropMaterializedRowIDColumn, PropMaterializedRowCommitVer, ErrUnsupportedTable)
	}
	return &parquetio.RowTrackingColumns{RowID: rt.MaterializedRowIDColumn, RowCommitVersion: rt.MaterializedRowCommitVersionColumn}, nil
}

// RewriteFileSchema is the data-file schema of a rewrite of the table's files (compaction,
// clustering): physical names, no partition columns, and, when row ids must be preserved
// (RowTracking.MustPreserve), the two materialized row-tracking columns as nullable longs at the end.
// They are not table columns, so readers that do not know them ignore them. rt names them for
// parquetio.RewriteOptions.RowTracking; it is nil when row ids need not be preserved.
func (s *Snapshot) RewriteFileSchema() (schema *types.StructType, rt *parquetio.RowTrackingColumns, err error) {
	track, err := s.RowTracking()
	if err != nil {
		return nil, nil, err
	}
	if rt, err = track.PreservedColumns(); err != nil {
		return nil, nil, fmt.Errorf("table %s: %w", s.table.Location(), err)
	}
	parts := s.metadata.PartitionColumns
	schema = &types.StructType{}
	for i, f := range s.PhysicalSchema().Fields {
		if !slices.Contains(parts, s.Schema().Fields[i].Name) {
			schema.Fields = append(schema.Fields, f)
		}
	}
	if rt != nil {
		for _, name := range []string{rt.RowID, rt.RowCommitVersion} {
			if !slices.ContainsFunc(schema.Fields, func(f *types.StructField) bool { return f.Name == name }) {
				schema.Fields = append(schema.Fields, &types.StructField{Name: name, Type: types.Primitive(types.TypeLong), Nullable: true})
			}
		}
	}
	return schema, rt, nil
}

// rowIDAssignment remembers which adds the transaction gave ids to, so that a rebase onto a
// winner with a higher high-water mark can reassign exactly those.
type rowIDAssignment struct {
	assigned []*AddFile // adds that came without baseRowId
	undated  []*AddFile // adds that came without defaultRowCommitVersion
	records  []int64    // numRecords of each assigned add
}

func (tx *Transaction) planRowIDs() (*rowIDAssignment, error) {
	ra := &rowIDAssignment{}
	for _, a := range tx.adds {
		if a.BaseRowID == nil {
			n, ok := NumRecords(a.Stats)
			if !ok {
				return nil, fmt.Errorf("table %s tracks row ids, but added file %s has no numRecords statistic to size its id range", tx.table.Location(), a.Path)
			}
			ra.assigned = append(ra.assigned, a)
			ra.records = append(ra.records, n)
		}
		if a.DefaultRowCommitVersion == nil {
			ra.undated = append(ra.undated, a)
		}
	}
	return ra, nil
}

// apply assigns ids above hwm and the commit version; it returns the new high-water mark.
func (ra *rowIDAssignment) apply(hwm int64, version Version) int64 {
	for i, a := range ra.assigned {
		a.BaseRowID = ptr(hwm + 1)
		hwm += ra.records[i]
	}
	for _, a := range ra.undated {
		a.DefaultRowCommitVersion = ptr(int64(version))
	}
	return hwm
}
