package vacuum

import (
	"context"
	"fmt"
	"path"
	"strings"
	"sync"
	"sync/atomic"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Leftovers of interrupted deltakeeper writes (storage/temp.go) never appear in a listing or in the
// log: a writer SIGKILLed before its rename leaves a hidden temp file, one killed during an S3
// multipart upload leaves the upload. Full mode removes those in data directories once their last
// activity is older than the cutoff, like unreferenced data files; the ones under _delta_log are log
// cleanup's (delta.Table.CleanupLog, with the log retention). Spark's hidden-path rule still applies
// to the directories, and another writer's debris is never touched: local temp files are ours by
// their name, uploads by their target being a data file name only deltakeeper writes.

// findLeftovers lists the leftovers full mode removes and counts the ones kept for being recent.
func findLeftovers(ctx context.Context, snap *delta.Snapshot, rep *Report) ([]storage.Leftover, error) {
	isHidden := hiddenRule(snap)
	var out []storage.Leftover
	for lo, err := range storage.Leftovers(ctx, snap.Table().Store(), "") {
		if err != nil {
			return nil, fmt.Errorf("table %s: list leftovers of interrupted writes: %w", snap.Table().Location(), err)
		}
		if !dataLeftover(lo, isHidden) {
			continue
		}
		if !lo.LastActivity.Before(rep.Cutoff) {
			rep.KeptRecentLeftovers++
			continue
		}
		out = append(out, lo)
		rep.Leftovers++
		rep.LeftoverBytes += lo.Size
	}
	return out, nil
}

// dataLeftover reports whether a leftover is vacuum's: outside the log and hidden directories, and,
// for an upload, one of a data file deltakeeper names.
func dataLeftover(lo storage.Leftover, isHidden func(string) bool) bool {
	if strings.HasPrefix(lo.Target, delta.LogDir) {
		return false
	}
	if dir := path.Dir(lo.Target); dir != "." && hiddenPath(dir, isHidden) {
		return false
	}
	if lo.UploadID != "" && !delta.IsDataFileName(path.Base(lo.Target)) {
		return false
	}
	return true
}

// removeLeftovers removes the leftovers with bounded concurrency, stopping after the first failure.
func removeLeftovers(ctx context.Context, store storage.Store, los []storage.Leftover, parallelism int, rep *Report) error {
	var n, bytes atomic.Int64
	var mu sync.Mutex
	var firstErr error
	each(ctx, len(los), parallelism, func(i int) bool {
		if err := storage.RemoveLeftover(ctx, store, los[i]); err != nil {
			mu.Lock()
			firstErr = cmpErr(firstErr, fmt.Errorf("remove leftover %s: %w", los[i].Key, err))
			mu.Unlock()
			return false
		}
		n.Add(1)
		bytes.Add(los[i].Size)
		return true
	})
	rep.LeftoversRemoved, rep.LeftoverBytesRemoved = n.Load(), bytes.Load()
	if firstErr == nil && ctx.Err() != nil && rep.LeftoversRemoved < int64(len(los)) {
		firstErr = fmt.Errorf("vacuum interrupted: %w", context.Cause(ctx))
	}
	return firstErr
}
