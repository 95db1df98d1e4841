package delta

import (
	"fmt"
)

// validate enforces, before anything is written, the protocol's rules for one commit and the
// guarantees of the transaction's kind. A violation is a bug in the caller; committing it could
// corrupt the table, so it is refused with an error naming the file.
func (tx *Transaction) validate() error {
	loc := tx.table.Location()
	fail := func(format string, args ...any) error {
		return fmt.Errorf("table %s: refusing to commit %s: %s", loc, tx.opts.Operation, fmt.Sprintf(format, args...))
	}
	if len(tx.adds) == 0 && len(tx.removes) == 0 && len(tx.txns) == 0 && len(tx.domains) == 0 && tx.newMetadata == nil && tx.newProtocol == nil {
		return fail("the transaction has no actions")
	}
	// The protocol may have gained features in this transaction; the kind must still be allowed.
	if err := CheckProtocol(loc, tx.protocol(), tx.metadata(), tx.snap.schema, tx.kind); err != nil {
		return err
	}
	if tx.newMetadata != nil {
		if err := tx.validateMetadataChange(); err != nil {
			return fail("%v", err)
		}
	}
	addPaths := make(map[string]*AddFile, len(tx.adds))
	for _, a := range tx.adds {
		if a.Path == "" {
			return fail("an added file has an empty path")
		}
		if _, dup := addPaths[a.Path]; dup {
			return fail("file %s is added twice", a.Path)
		}
		addPaths[a.Path] = a
		if _, err := ObjectKey(loc, a.Path); err != nil {
			return fail("%v", err)
		}
		if a.DeletionVector != nil {
			if _, ok := NumRecords(a.Stats); !ok {
				return fail("file %s carries a deletion vector but no numRecords statistic", a.Path)
			}
		}
		if err := tx.checkPartitionValues(a); err != nil {
			return fail("%v", err)
		}
		if _, live := tx.snap.livePath(a.Path); live && tx.snap.rowCountsOnly {
			// A live file re-added from this snapshot (a new DV, a tag) would carry the row count
			// in place of its statistics.
			return fail("file %s is live and the snapshot was loaded with row counts only; load it in full to re-add a file", a.Path)
		}
		// Re-adding a live path with another DV is only legal together with removing the old one.
		if old, ok := tx.snap.livePath(a.Path); ok && old.DeletionVector.UniqueID() != a.DeletionVector.UniqueID() && !tx.removedPaths[a.Path] {
			return fail("file %s is already in the table with another deletion vector and is not removed", a.Path)
		}
	}
	seenRemoves := make(map[string]bool, len(tx.removes))
	var removedRows int64
	rowsKnown := true
	for _, r := range tx.removes {
		if seenRemoves[r.Path] {
			return fail("file %s is removed twice", r.Path)
		}
		seenRemoves[r.Path] = true
		live, ok := tx.snap.File(r.Key())
		if !ok {
			return fail("file %s is not live in version %d", r.Key(), tx.snap.version)
		}
		if a, ok := addPaths[r.Path]; ok && a.DeletionVector.UniqueID() == r.DeletionVector.UniqueID() {
			return fail("file %s is both added and removed with the same deletion vector", r.Key())
		}
		// The live add's count, else the one the caller read from the file's footer and recorded
		// with the remove (AddFile.WithNumRecords): files without statistics are still checked.
		n, ok := NumRecords(live.Stats)
		if !ok {
			n, ok = NumRecords(r.Stats)
		}
		if ok {
			removedRows += n
			if live.DeletionVector != nil {
				removedRows -= live.DeletionVector.Cardinality
			}
		} else {
			rowsKnown = false
		}
	}
	props := TableProperties(tx.metadata().Configuration)
	switch tx.kind {
	case OpAppend:
		if len(tx.removes) > 0 {
			return fail("an append may not remove files")
		}
		for _, a := range tx.adds {
			if !a.DataChange {
				return fail("appended file %s must have dataChange=true", a.Path)
			}
		}
	case OpRewrite:
		return tx.validateRewrite(fail, removedRows, rowsKnown, props)
	case OpMerge:
		if err := tx.validateDML(fail, props); err != nil {
			return err
		}
	case OpVacuum, OpCheckpoint, OpLogCleanup:
		if len(tx.adds) > 0 || len(tx.removes) > 0 {
			return fail("a %s transaction may not add or remove files", tx.kind)
		}
	}
	if props.flag(PropAppendOnly) {
		for _, r := range tx.removes {
			if r.DataChange {
				return fail("delta.appendOnly=true and file %s would be removed with dataChange=true", r.Path)
			}
		}
	}
	return nil
}

// validateRewrite checks that a compaction/clustering commit only rearranges rows: every action
// has dataChange=false, and when the statistics allow it, the rows added equal the live rows
// removed. This is the last line of defence against a rewrite that lost or duplicated rows.
func (tx *Transaction) validateRewrite(fail func(string, ...any) error, removedRows int64, rowsKnown bool, props TableProperties) error {
	if len(tx.removes) == 0 || len(tx.adds) == 0 && (!rowsKnown || removedRows != 0) {
		return fail("a rewrite must remove files and add their rows back")
	}
	var addedRows int64
	for _, a := range tx.adds {
		if a.DataChange {
			return fail("rewritten file %s must have dataChange=false", a.Path)
		}
		if a.DeletionVector != nil {
			return fail("rewritten file %s must not carry a deletion vector", a.Path)
		}
		n, ok := NumRecords(a.Stats)
		if !ok {
			rowsKnown = false
		}
		addedRows += n
	}
	for _, r := range tx.removes {
		if r.DataChange {
			return fail("file %s must be removed with dataChange=false in a rewrite", r.Path)
		}
	}
	if rowsKnown && addedRows != removedRows {
		// Deterministic: the statistics of the removed files do not match their data, or the rewrite
		// is wrong; neither heals on retry.
		return fmt.Errorf("%w: %w", fail("the new files hold %d rows but the removed files held %d live rows", addedRows, removedRows), ErrCorruptTable)
	}
	if props.flag(PropEnableRowTracking) && tx.protocol().HasWriterFeature(FeatureRowTracking) && !props.flag(PropRowTrackingSuspended) {
		if !tx.opts.RowTrackingPreserved {
			return fail("row tracking is enabled and the rewrite did not declare that it preserved row ids (TxnOptions.RowTrackingPreserved)")
		}
		tx.tags["delta.rowTracking.preserved"] = "true"
	}
	return nil
}

// validateDML checks a MERGE / UPDATE / DELETE commit: rows change, so every add and remove has
// dataChange=true, and on a table whose row ids must be preserved the commit says whether its
// rewritten rows kept them (delta.rowTracking.preserved, as Spark tags it).
func (tx *Transaction) validateDML(fail func(string, ...any) error, props TableProperties) error {
	for _, a := range tx.adds {
		if !a.DataChange {
			return fail("file %s added by a data change must have dataChange=true", a.Path)
		}
	}
	for _, r := range tx.removes {
		if !r.DataChange {
			return fail("file %s removed by a data change must have dataChange=true", r.Path)
		}
	}
	if props.flag(PropEnableRowTracking) && tx.protocol().HasWriterFeature(FeatureRowTracking) && !props.flag(PropRowTrackingSuspended) &&
		(tx.opts.RowTrackingPreserved || tx.rowTrackingPreserved) {
		tx.tags["delta.rowTracking.preserved"] = "true"
	}
	return nil
}

// checkPartitionValues verifies that an added file names exactly the partition columns (by
// physical name) with values that parse as their types.
func (tx *Transaction) checkPartitionValues(a *AddFile) error {
	cols := tx.snap.PartitionColumns()
	if len(a.PartitionValues) != len(cols) {
		return fmt.Errorf("file %s has %d partition values, the table has %d partition columns", a.Path, len(a.PartitionValues), len(cols))
	}
	for _, f := range cols {
		pv, ok := a.PartitionValues.Get(PhysicalName(f, tx.snap.mode))
		if !ok {
			return fmt.Errorf("file %s has no value for partition column %s (physical name %q)", a.Path, f.Name, PhysicalName(f, tx.snap.mode))
		}
		if _, err := ParsePartitionValue(f.Type, pv); err != nil {
			return fmt.Errorf("file %s: %w", a.Path, err)
		}
	}
	return nil
}

// featureProperties lists the table properties that activate a feature: setting one without the
// feature in the protocol would leave other writers ignoring it.
var featureProperties = []struct {
	property string
	features []string
}{
	{PropEnableICT, []string{FeatureInCommitTimestamp, FeatureICTPreview}},
	{PropEnableDeletionVectors, []string{FeatureDeletionVectors}},
	{PropEnableRowTracking, []string{FeatureRowTracking}},
	{PropEnableCDF, []string{FeatureChangeDataFeed}},
	{PropAppendOnly, []string{FeatureAppendOnly}},
}

// validateMetadataChange checks a new metadata action: every typed property parses, properties
// that activate a feature have it in the protocol, and nothing deltakeeper cannot carry out
// (column mapping changes, turning row tracking on, which needs a backfill) is attempted.
func (tx *Transaction) validateMetadataChange() error {
	props := TableProperties(tx.newMetadata.Configuration)
	old := tx.snap.props
	checks := []error{}
	_, err := props.CheckpointInterval()
	checks = append(checks, err)
	_, err = props.LogRetention()
	checks = append(checks, err)
	_, err = props.DeletedFileRetention()
	checks = append(checks, err)
	_, err = props.CheckpointRetention()
	checks = append(checks, err)
	_, _, err = props.TargetFileSize()
	checks = append(checks, err)
	_, err = props.NumIndexedCols()
	checks = append(checks, err)
	_, _, err = props.StatsColumns()
	checks = append(checks, err)
	for _, err := range checks {
		if err != nil {
			return err
		}
	}
	if props[PropColumnMappingMode] != old[PropColumnMappingMode] {
		return fmt.Errorf("changing %s needs a schema rewrite deltakeeper does not do", PropColumnMappingMode)
	}
	if props.flag(PropEnableRowTracking) && !old.flag(PropEnableRowTracking) {
		return fmt.Errorf("enabling row tracking on an existing table needs a row id backfill deltakeeper does not do")
	}
	p := tx.protocol()
	for _, fp := range featureProperties {
		if !props.flag(fp.property) {
			continue
		}
		ok := false
		for _, f := range fp.features {
			ok = ok || p.HasWriterFeature(f)
		}
		if !ok {
			return fmt.Errorf("%s=true needs the %s table feature; add it with UpgradeProtocol in the same transaction", fp.property, fp.features[0])
		}
	}
	return nil
}
