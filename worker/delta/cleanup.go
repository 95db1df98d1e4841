package delta

import (
	"context"
	"fmt"
	"sort"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// sidecarGracePeriod protects sidecars a concurrent checkpoint writer has written but not yet
// referenced (PROTOCOL.md §Metadata Cleanup: only unreferenced sidecars older than a day go).
const sidecarGracePeriod = 24 * time.Hour

// CleanupResult reports what CleanupLog did.
type CleanupResult struct {
	// Cutoff is the retention horizon: midnight UTC of (now - delta.logRetentionDuration).
	Cutoff time.Time
	// OldestKept is the checkpoint version the log now starts at (NoVersion when nothing was
	// cleaned).
	OldestKept Version
	// Deleted lists the deleted keys, oldest version first.
	Deleted []string
	// Skipped explains why no expired log file was deleted, when none was.
	Skipped string
	// Leftovers lists the temp files and incomplete checkpoint uploads of interrupted writes that were
	// removed from _delta_log (their last activity before Cutoff), LeftoverBytes their size;
	// KeptRecentLeftovers counts the younger ones, which may belong to writes in progress.
	Leftovers           []string
	LeftoverBytes       int64
	KeptRecentLeftovers int
}

// CleanupLog deletes log files that are no longer needed to reconstruct any version within
// delta.logRetentionDuration, the protocol's safe way (PROTOCOL.md §Metadata Cleanup):
//
//  1. the cutoff is midnight UTC of now minus the retention (default 30 days);
//  2. the newest complete checkpoint whose commit is not newer than the cutoff is kept, with its
//     commit (for commitInfo and the in-commit timestamp), and everything after it;
//  3. commits, checkpoints, .crc files and compaction files starting at or before that checkpoint
//     are deleted, oldest version first, so an interruption leaves a readable log;
//  4. sidecars no remaining checkpoint references are deleted once older than a day.
//
// With checkpointProtection, versions below delta.requireCheckpointProtectionBeforeVersion are only
// removed all at once. delta.enableExpiredLogCleanup=false disables cleanup of log files.
//
// Whatever happened to the log files, the leftovers of interrupted deltakeeper writes under
// _delta_log (temp files of commits, checkpoints and _last_checkpoint, incomplete checkpoint uploads
// on S3; see storage/temp.go) whose last activity is before the cutoff are removed too: no reader
// ever sees them, and nothing else would ever delete them. delta.enableExpiredLogCleanup does not
// keep them: they are not part of the log's history.
func (t *Table) CleanupLog(ctx context.Context) (*CleanupResult, error) {
	st, err := t.State(ctx, NoVersion)
	if err != nil {
		return nil, err
	}
	schema, err := types.ParseSchema(st.Metadata.SchemaString)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Location(), err)
	}
	if err := CheckProtocol(t.Location(), &st.Protocol, &st.Metadata, schema, OpLogCleanup); err != nil {
		return nil, err
	}
	res := &CleanupResult{OldestKept: NoVersion}
	enabled, err := st.Properties.Bool(PropEnableExpiredLogCleanup, true)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Location(), err)
	}
	retention, err := st.Properties.LogRetention()
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", t.Location(), err)
	}
	now := t.clock.Now()
	res.Cutoff = now.Add(-retention).UTC().Truncate(24 * time.Hour)
	if !enabled {
		res.Skipped = PropEnableExpiredLogCleanup + " is false"
	} else if err := t.cleanupExpiredLog(ctx, st, res, now); err != nil {
		return res, err
	}
	if err := t.cleanupLogLeftovers(ctx, res); err != nil {
		return res, err
	}
	return res, nil
}

// cleanupExpiredLog deletes the log files made unnecessary by the newest checkpoint before the
// cutoff (steps 2 to 4 of CleanupLog).
func (t *Table) cleanupExpiredLog(ctx context.Context, st *TableState, res *CleanupResult, now time.Time) error {
	l, err := listLog(ctx, t.store, "", NoVersion)
	if err != nil {
		return err
	}
	cp := t.cleanupCheckpoint(l, res.Cutoff)
	if cp == NoVersion {
		res.Skipped = "no complete checkpoint is older than the retention cutoff"
		return nil
	}
	// The log from cp on must reconstruct every later version, or deleting before it would
	// leave nothing readable.
	for v := cp + 1; v <= l.maxVersion; v++ {
		if _, ok := l.commits[v]; !ok {
			res.Skipped = fmt.Sprintf("commit %d is missing after checkpoint %d; not cleaning a log with gaps", v, cp)
			return nil
		}
	}
	if st.Protocol.HasWriterFeature(FeatureCheckpointProtection) {
		protected, err := st.Properties.Int(PropCheckpointProtectionVersion, 0)
		if err != nil {
			return fmt.Errorf("table %s: %w", t.Location(), err)
		}
		if int64(cp) < protected {
			res.Skipped = fmt.Sprintf("checkpointProtection: versions below %d may only be removed all at once, and the newest expired checkpoint is %d", protected, cp)
			return nil
		}
	}
	doomed := expiredLogFiles(l, cp)
	// Sidecars first: which ones do the remaining checkpoints still reference?
	sidecars, err := t.unreferencedSidecars(ctx, l, cp, now)
	if err != nil {
		return err
	}
	for _, key := range append(doomed, sidecars...) {
		if err := t.store.Delete(ctx, key); err != nil {
			return fmt.Errorf("table %s: delete %s: %w", t.Location(), key, err)
		}
		res.Deleted = append(res.Deleted, key)
	}
	res.OldestKept = cp
	if len(res.Deleted) == 0 {
		res.Skipped = "nothing older than the retention cutoff"
	}
	return nil
}

// cleanupCheckpoint is the newest complete checkpoint whose commit time is not after cutoff.
func (t *Table) cleanupCheckpoint(l *listing, cutoff time.Time) Version {
	versions := make([]Version, 0, len(l.checkpoints))
	for v := range l.checkpoints {
		versions = append(versions, v)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] > versions[j] })
	for _, v := range versions {
		parts := l.completeCheckpoint(v)
		if parts == nil {
			continue
		}
		when := parts[0].ModTime
		if c, ok := l.commits[v]; ok {
			when = c.ModTime
		}
		if !when.After(cutoff) {
			return v
		}
	}
	return NoVersion
}

// expiredLogFiles lists, in ascending version order, the files made unnecessary by checkpoint cp.
func expiredLogFiles(l *listing, cp Version) []string {
	type item struct {
		v   Version
		key string
	}
	var items []item
	for v, f := range l.commits {
		if v < cp {
			items = append(items, item{v, f.Key})
		}
	}
	for v, files := range l.checkpoints {
		if v < cp {
			for _, f := range files {
				items = append(items, item{v, f.Key})
			}
		}
	}
	for _, c := range l.compactions {
		if c.version <= cp {
			items = append(items, item{c.version, c.Key})
		}
	}
	for _, f := range l.checksums {
		if f.version < cp {
			items = append(items, item{f.version, f.Key})
		}
	}
	sort.Slice(items, func(i, j int) bool {
		if items[i].v != items[j].v {
			return items[i].v < items[j].v
		}
		// Within a version, the commit goes last: a checkpoint without its commit is still usable.
		return commitRank(items[i].key) < commitRank(items[j].key)
	})
	out := make([]string, len(items))
	for i, it := range items {
		out[i] = it.key
	}
	return out
}

func commitRank(key string) int {
	if f, ok := parseLogFile(storage.ObjectInfo{Key: key}); ok && f.kind == kindCommit {
		return 1
	}
	return 0
}

// unreferencedSidecars returns sidecar files that no checkpoint at or after cp references and
// that are older than the grace period. If a remaining checkpoint cannot be read, no sidecar is
// deleted: an unknown reference must be assumed to exist.
func (t *Table) unreferencedSidecars(ctx context.Context, l *listing, cp Version, now time.Time) ([]string, error) {
	referenced := map[string]bool{}
	for v := range l.checkpoints {
		if v < cp {
			continue
		}
		for _, f := range l.checkpoints[v] {
			collect := func(a *Action) error {
				if a.Sidecar != nil {
					if key, err := sidecarKey(t.Location(), a.Sidecar.Path); err == nil {
						referenced[key] = true
					}
				}
				return nil
			}
			var err error
			if f.format == "json" {
				err = readJSONActions(ctx, t.store, f.Key, collect)
			} else {
				err = readParquetActions(ctx, t.store, f.Key, parquetReadRequest{columns: []string{"sidecar"}}, nil, collect)
			}
			if err != nil {
				// Keep every sidecar when a reference is unknown; the log files still go.
				return nil, nil
			}
		}
	}
	var out []string
	for info, err := range t.store.List(ctx, SidecarDir, "") {
		if err != nil {
			return nil, fmt.Errorf("table %s: list %s: %w", t.Location(), SidecarDir, err)
		}
		if referenced[info.Key] || now.Sub(info.ModTime) < sidecarGracePeriod {
			continue
		}
		out = append(out, info.Key)
	}
	return out, nil
}
