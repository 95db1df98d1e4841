package delta

import (
	"fmt"
)

// Log compaction files (PROTOCOL.md §Log Compaction Files) hold "the aggregated actions for
// commit range [x, y]", made by action reconciliation of those commits: at most one action per
// file key, appId and domain, and at most one metaData and protocol. Such a set means the same
// whatever order it is applied in, which is what makes it safe to replay in place of the commits.
// Files that are not reconciled sets exist (Databricks writes the actions of the range newest
// first, the same (path, DV) key both added and removed): replaying one last-wins resurrects
// removed files, and no order-free reading of it is exact. deltakeeper reads a compaction file
// only where its commits are gone (logsegment.go), and then only if it is a reconciled set.

// checkReconciled refuses a compaction file that is not a reconciled set, naming the first key it
// lists twice.
func checkReconciled(table string, f logFile, actions []*Action) error {
	files := make(map[FileKey]string, len(actions))
	apps := map[string]bool{}
	domains := map[string]bool{}
	var metadata, protocol int
	twice := func(what string) error {
		return fmt.Errorf("table %s: log compaction file %s is the only record of versions %d-%d (their commit files are gone) "+
			"and lists %s twice, so it is not a reconciled set and which action came last cannot be told; "+
			"deltakeeper refuses to guess (restore the commit files, or remove the compaction file if a checkpoint covers the range): %w",
			table, f.Key, f.version, f.end, what, ErrCorruptTable)
	}
	for _, a := range actions {
		var k FileKey
		var kind string
		switch {
		case a.Add != nil:
			k, kind = a.Add.Key(), "added"
		case a.Remove != nil:
			k, kind = a.Remove.Key(), "removed"
		case a.Txn != nil:
			if apps[a.Txn.AppID] {
				return twice(fmt.Sprintf("a txn action of application %q", a.Txn.AppID))
			}
			apps[a.Txn.AppID] = true
			continue
		case a.DomainMetadata != nil:
			if domains[a.DomainMetadata.Domain] {
				return twice(fmt.Sprintf("domain %q", a.DomainMetadata.Domain))
			}
			domains[a.DomainMetadata.Domain] = true
			continue
		case a.MetaData != nil:
			if metadata++; metadata > 1 {
				return twice("a metaData action")
			}
			continue
		case a.Protocol != nil:
			if protocol++; protocol > 1 {
				return twice("a protocol action")
			}
			continue
		default:
			continue
		}
		if prev, ok := files[k]; ok {
			return twice(fmt.Sprintf("file %s (%s, then %s)", k, prev, kind))
		}
		files[k] = kind
	}
	return nil
}

// checkCheckpointable refuses to write a checkpoint of a snapshot that rests on a compaction
// file: a checkpoint would make that summary the table's permanent state, and it cannot be
// cross-checked against the commits it replaced, which are gone.
func (s *Snapshot) checkCheckpointable() error {
	if s.segment == nil || !s.segment.compacted {
		return nil
	}
	var names []string
	for _, d := range s.segment.deltas {
		if d.kind == kindCompaction {
			names = append(names, d.Key)
		}
	}
	return fmt.Errorf("table %s: version %d was rebuilt through log compaction file(s) %v because commit files are missing; "+
		"deltakeeper does not write a checkpoint it cannot cross-check against the commits: %w",
		s.table.Location(), s.version, names, ErrLogGap)
}
