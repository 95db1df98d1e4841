package delta

import (
	"context"
	"errors"
	"fmt"
	"sort"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// ErrLogGap is matched by errors for logs whose versions are not contiguous.
var ErrLogGap = errors.New("delta log is not contiguous")

// VersionNotFoundError says that a requested version cannot be reconstructed from the log.
type VersionNotFoundError struct {
	Table     string
	Requested Version // NoVersion: the latest, or any version (time travel by timestamp)
	Earliest  Version // earliest reconstructable version, NoVersion if none is
	Latest    Version // latest version, NoVersion for an empty log
}

func (e *VersionNotFoundError) Error() string {
	switch {
	case e.Latest == NoVersion:
		return fmt.Sprintf("table %s has no commits in %s (not a Delta table, or the path is wrong)", e.Table, LogDir)
	case e.Earliest == NoVersion:
		// Not even the latest version can be built: commit 0 is gone and no complete checkpoint
		// stands in for the commits before the oldest one left.
		return fmt.Sprintf("table %s: no version can be reconstructed (latest is %d): commit 0 is gone and no complete checkpoint "+
			"stands in for the log files before the oldest one left (they were deleted without a checkpoint): %v", e.Table, e.Latest, ErrCorruptTable)
	case e.Requested > e.Latest:
		return fmt.Sprintf("table %s: version %d does not exist yet (latest is %d)", e.Table, e.Requested, e.Latest)
	case e.Requested == NoVersion:
		return fmt.Sprintf("table %s: no version can be reconstructed; the earliest recoverable version is %d", e.Table, e.Earliest)
	}
	return fmt.Sprintf("table %s: version %d can no longer be reconstructed: the earliest recoverable version is %d (older log files were cleaned up)",
		e.Table, e.Requested, e.Earliest)
}

// Unwrap makes a log from which nothing at all can be reconstructed match ErrCorruptTable.
func (e *VersionNotFoundError) Unwrap() error {
	if e.Latest != NoVersion && e.Earliest == NoVersion {
		return ErrCorruptTable
	}
	return nil
}

// logSegment is the set of log files that reconstruct one version: a checkpoint (possibly none)
// and the commits after it; a log compaction file stands in for commits only where they are gone.
type logSegment struct {
	version    Version
	checkpoint []logFile // all parts of the chosen checkpoint, in part order; empty for none
	cpVersion  Version   // NoVersion when replay starts at version 0
	// deltas are replayed in order: commit files and compaction files (each covering [version, end]).
	deltas []logFile
	// commits are all commit files listed for versions (cpVersion, version], for timestamps.
	commits []logFile
	// latestCommit is the commit file at version, if it exists (the checkpoint may be alone).
	latestCommit *logFile
	// compacted is set when a compaction file stands in for commits that are gone: the snapshot
	// then rests on a summary that cannot be cross-checked, and no checkpoint is written from it.
	compacted bool
}

// listing is everything recognised under _delta_log/ in one List pass.
type listing struct {
	commits     map[Version]logFile
	checkpoints map[Version][]logFile
	compactions []logFile
	checksums   []logFile
	maxVersion  Version
	minVersion  Version // smallest commit or checkpoint version seen
	truncated   bool    // listing stopped at upTo: later versions exist
}

func listLog(ctx context.Context, store storage.Store, startAfter string, upTo Version) (*listing, error) {
	l := &listing{commits: map[Version]logFile{}, checkpoints: map[Version][]logFile{}, maxVersion: NoVersion, minVersion: NoVersion}
	for info, err := range store.List(ctx, LogDir, startAfter) {
		if err != nil {
			return nil, fmt.Errorf("list %s of %s: %w", LogDir, store.Location(), err)
		}
		f, ok := parseLogFile(info)
		if !ok {
			continue
		}
		if upTo != NoVersion && f.version > upTo {
			l.truncated = true
			break // keys sort by version: nothing further can be ≤ upTo
		}
		switch f.kind {
		case kindCommit:
			l.commits[f.version] = f
		case kindCheckpointClassic, kindCheckpointMultiPart, kindCheckpointUUID:
			l.checkpoints[f.version] = append(l.checkpoints[f.version], f)
		case kindCompaction:
			l.compactions = append(l.compactions, f)
			continue
		case kindChecksum:
			l.checksums = append(l.checksums, f)
			continue
		default:
			continue
		}
		l.maxVersion = max(l.maxVersion, f.version)
		if l.minVersion == NoVersion || f.version < l.minVersion {
			l.minVersion = f.version
		}
	}
	return l, nil
}

// completeCheckpoint returns the parts of a complete checkpoint at v, preferring a single-file
// classic one, then a UUID-named V2 one, then a complete multi-part set; nil if none is complete
// (an incomplete multi-part set is an interrupted write and must be ignored).
func (l *listing) completeCheckpoint(v Version) []logFile {
	files := l.checkpoints[v]
	for _, kind := range []logFileKind{kindCheckpointClassic, kindCheckpointUUID} {
		for _, f := range files {
			if f.kind == kind {
				return []logFile{f}
			}
		}
	}
	sets := map[int][]logFile{}
	for _, f := range files {
		if f.kind == kindCheckpointMultiPart {
			sets[f.numParts] = append(sets[f.numParts], f)
		}
	}
	for n, parts := range sets {
		seen := make(map[int]logFile, n)
		for _, p := range parts {
			seen[p.part] = p
		}
		if len(seen) != n {
			continue
		}
		out := make([]logFile, 0, n)
		for i := 1; i <= n; i++ {
			out = append(out, seen[i])
		}
		return out
	}
	return nil
}

// newestCheckpoint returns the newest complete checkpoint with version ≤ upTo and < below.
func (l *listing) newestCheckpoint(upTo, below Version) (Version, []logFile) {
	versions := make([]Version, 0, len(l.checkpoints))
	for v := range l.checkpoints {
		if v <= upTo && (below == NoVersion || v < below) {
			versions = append(versions, v)
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] > versions[j] })
	for _, v := range versions {
		if parts := l.completeCheckpoint(v); parts != nil {
			return v, parts
		}
	}
	return NoVersion, nil
}

// buildSegment chooses the files that reconstruct target (NoVersion = latest), using a
// checkpoint older than below when below is set (the fallback after a corrupt checkpoint).
func buildSegment(table string, l *listing, target, below Version) (*logSegment, error) {
	latest := l.maxVersion
	if latest == NoVersion {
		return nil, &VersionNotFoundError{Table: table, Requested: target, Earliest: NoVersion, Latest: NoVersion}
	}
	if target == NoVersion {
		target = latest
	}
	if target > latest {
		return nil, &VersionNotFoundError{Table: table, Requested: target, Earliest: l.earliestRecoverable(), Latest: latest}
	}
	seg := &logSegment{version: target, cpVersion: NoVersion}
	if v, parts := l.newestCheckpoint(target, below); parts != nil {
		seg.cpVersion, seg.checkpoint = v, parts
	}
	start := seg.cpVersion + 1 // 0 without a checkpoint
	if seg.cpVersion == NoVersion {
		start = 0
	}
	// Commits must be contiguous from start to target. A log compaction file stands in only for
	// commits that are gone: a compaction file is a summary another writer made, and where the
	// commits exist they are the record (Databricks writes compaction files that are not
	// reconciled sets, and replaying one in place of its commits resurrects removed files).
	compactions := l.compactionsByStart(start, target)
	for v := start; v <= target; {
		if f, ok := l.commits[v]; ok {
			seg.deltas = append(seg.deltas, f)
			seg.commits = append(seg.commits, f)
			v++
			continue
		}
		if c, ok := pickCompaction(compactions[v], l.commits); ok {
			seg.deltas = append(seg.deltas, c)
			seg.compacted = true
			for u := v; u <= c.end; u++ {
				if f, ok := l.commits[u]; ok {
					seg.commits = append(seg.commits, f)
				}
			}
			v = c.end + 1
			continue
		}
		if v == 0 || seg.cpVersion == NoVersion && v == start {
			return nil, &VersionNotFoundError{Table: table, Requested: target, Earliest: l.earliestRecoverable(), Latest: latest}
		}
		return nil, fmt.Errorf("table %s: commit %d (%s) is missing between %d and %d: %w", table, v, CommitKey(v), start, target, ErrLogGap)
	}
	if f, ok := l.commits[target]; ok {
		seg.latestCommit = &f
	}
	if seg.cpVersion == NoVersion && len(seg.deltas) == 0 {
		return nil, &VersionNotFoundError{Table: table, Requested: target, Earliest: l.earliestRecoverable(), Latest: latest}
	}
	return seg, nil
}

// compactionsByStart groups the compaction files lying inside [start, target) by start version;
// files reaching past it or starting at/below the checkpoint do not fit. The commit at target is
// always replayed itself: it carries the commitInfo (and in-commit timestamp) of the snapshot,
// which compaction files leave out.
func (l *listing) compactionsByStart(start, target Version) map[Version][]logFile {
	out := map[Version][]logFile{}
	for _, c := range l.compactions {
		if c.version < start || c.end >= target {
			continue
		}
		out[c.version] = append(out[c.version], c)
	}
	return out
}

// pickCompaction chooses, among compaction files starting where a commit is missing, the
// narrowest after which the commits resume (so that as little as possible rests on a summary),
// or else the widest.
func pickCompaction(candidates []logFile, commits map[Version]logFile) (logFile, bool) {
	if len(candidates) == 0 {
		return logFile{}, false
	}
	sort.Slice(candidates, func(i, j int) bool { return candidates[i].end < candidates[j].end })
	for _, c := range candidates {
		if _, ok := commits[c.end+1]; ok {
			return c, true
		}
	}
	return candidates[len(candidates)-1], true
}

// earliestRecoverable is the oldest version a snapshot can be built for: the oldest complete
// checkpoint (with contiguous commits after it) or 0 when the log starts at commit 0.
func (l *listing) earliestRecoverable() Version {
	if _, ok := l.commits[0]; ok {
		return 0
	}
	versions := make([]Version, 0, len(l.checkpoints))
	for v := range l.checkpoints {
		versions = append(versions, v)
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	for _, v := range versions {
		if l.completeCheckpoint(v) != nil {
			return v
		}
	}
	return NoVersion
}
