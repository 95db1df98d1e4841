package delta

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// TimestampOutOfRangeError says that no version was committed at or before the requested time
// (Requested < Earliest), or that the time is after the latest commit (Requested > Latest), which
// Spark refuses too: a later commit could still appear with an earlier timestamp than the clock
// of the asker.
type TimestampOutOfRangeError struct {
	Table            string
	Requested        time.Time
	Earliest, Latest time.Time
	EarliestVersion  Version
	LatestVersion    Version
}

func (e *TimestampOutOfRangeError) Error() string {
	if e.Requested.Before(e.Earliest) {
		return fmt.Sprintf("table %s: no version was committed at or before %s; the earliest recoverable version is %d, committed at %s",
			e.Table, e.Requested.UTC().Format(time.RFC3339Nano), e.EarliestVersion, e.Earliest.UTC().Format(time.RFC3339Nano))
	}
	return fmt.Sprintf("table %s: %s is after the latest commit (version %d at %s); ask for the latest version instead",
		e.Table, e.Requested.UTC().Format(time.RFC3339Nano), e.LatestVersion, e.Latest.UTC().Format(time.RFC3339Nano))
}

// AtTime loads the snapshot that was current at time ts: the latest version committed at or
// before ts. Commit times are in-commit timestamps for versions at or after ICT enablement and
// commit-file modification times before that (made strictly increasing, as Spark does, since
// file times can go backwards).
func (t *Table) AtTime(ctx context.Context, ts time.Time) (*Snapshot, error) {
	v, err := t.VersionAtTime(ctx, ts)
	if err != nil {
		return nil, err
	}
	return t.At(ctx, v)
}

// VersionAtTime resolves a timestamp to a version without loading any files.
func (t *Table) VersionAtTime(ctx context.Context, ts time.Time) (Version, error) {
	l, err := listLog(ctx, t.store, "", NoVersion)
	if err != nil {
		return NoVersion, err
	}
	latest, err := t.State(ctx, NoVersion)
	if err != nil {
		return NoVersion, err
	}
	earliest := l.earliestRecoverable()
	var versions []Version
	for v := range l.commits {
		if v >= earliest {
			versions = append(versions, v)
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	if len(versions) == 0 {
		return NoVersion, &VersionNotFoundError{Table: t.Location(), Requested: NoVersion, Earliest: earliest, Latest: l.maxVersion}
	}
	ictFrom := Version(-1) // first version with in-commit timestamps; -1: none
	if latest.Properties.InCommitTimestampsEnabled() {
		ictFrom = 0
		if v, _, ok, err := latest.Properties.ICTEnablement(); err != nil {
			return NoVersion, fmt.Errorf("table %s: %w", t.Location(), err)
		} else if ok {
			ictFrom = v
		}
	}
	// Monotonic file times for the versions without ICT, in ascending order.
	fileTimes := make(map[Version]int64, len(versions))
	var prev int64 = -1 << 62
	for _, v := range versions {
		mt := l.commits[v].ModTime.UnixMilli()
		if mt <= prev {
			mt = prev + 1
		}
		fileTimes[v] = mt
		prev = mt
	}
	var readErr error
	commitTime := func(v Version) int64 {
		if ictFrom >= 0 && v >= ictFrom {
			ict, err := t.inCommitTimestamp(ctx, v)
			if err != nil && readErr == nil {
				readErr = err
			}
			return ict
		}
		return fileTimes[v]
	}
	want := ts.UnixMilli()
	// The last version whose commit time is ≤ want; times increase with versions.
	i := sort.Search(len(versions), func(i int) bool { return commitTime(versions[i]) > want }) - 1
	if readErr != nil {
		return NoVersion, readErr
	}
	if i < 0 || i == len(versions)-1 && want > commitTime(versions[i]) {
		err := t.outOfRange(ts, versions, commitTime)
		if readErr != nil {
			return NoVersion, readErr
		}
		return NoVersion, err
	}
	return versions[i], nil
}

func (t *Table) outOfRange(ts time.Time, versions []Version, commitTime func(Version) int64) error {
	first, last := versions[0], versions[len(versions)-1]
	return &TimestampOutOfRangeError{Table: t.Location(), Requested: ts,
		Earliest: time.UnixMilli(commitTime(first)).UTC(), Latest: time.UnixMilli(commitTime(last)).UTC(),
		EarliestVersion: first, LatestVersion: last}
}

// inCommitTimestamp reads commitInfo.inCommitTimestamp of commit v.
func (t *Table) inCommitTimestamp(ctx context.Context, v Version) (int64, error) {
	ci, err := t.readCommitInfo(ctx, v)
	if errors.Is(err, storage.ErrNotFound) {
		return 0, fmt.Errorf("table %s: commit %d disappeared while resolving a timestamp: %w", t.Location(), v, err)
	}
	if err != nil {
		return 0, fmt.Errorf("table %s: %w", t.Location(), err)
	}
	if ci != nil && ci.InCommitTimestamp != nil {
		return *ci.InCommitTimestamp, nil
	}
	return 0, fmt.Errorf("table %s: commit %d has no in-commit timestamp although ICT is enabled for it", t.Location(), v)
}
