package delta

import (
	"context"
	"fmt"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// cleanupLogLeftovers removes the leftovers of interrupted writes under _delta_log whose last
// activity is before the cutoff: deltakeeper's temp files (commits, checkpoints, _last_checkpoint,
// anything the local store was writing there) and, on S3, incomplete uploads of classic checkpoints,
// the only log files written with a multipart upload. Spark writes checkpoints under the same names,
// so such an upload may be another writer's; one older than the log retention (a day at least) is an
// abandoned one whoever started it. Other uploads under _delta_log are not ours and are left alone.
func (t *Table) cleanupLogLeftovers(ctx context.Context, res *CleanupResult) error {
	var doomed []storage.Leftover
	for lo, err := range storage.Leftovers(ctx, t.store, LogDir) {
		if err != nil {
			return fmt.Errorf("table %s: list leftovers of interrupted writes in %s: %w", t.Location(), LogDir, err)
		}
		if lo.UploadID != "" && !isClassicCheckpointKey(lo.Target) {
			continue
		}
		if !lo.LastActivity.Before(res.Cutoff) {
			res.KeptRecentLeftovers++
			continue
		}
		doomed = append(doomed, lo)
	}
	for _, lo := range doomed {
		if err := storage.RemoveLeftover(ctx, t.store, lo); err != nil {
			return fmt.Errorf("table %s: remove leftover %s: %w", t.Location(), lo.Key, err)
		}
		res.Leftovers = append(res.Leftovers, lo.Key)
		res.LeftoverBytes += lo.Size
	}
	return nil
}

// isClassicCheckpointKey reports whether key is "_delta_log/<version>.checkpoint.parquet".
func isClassicCheckpointKey(key string) bool {
	f, ok := parseLogFile(storage.ObjectInfo{Key: key})
	return ok && f.kind == kindCheckpointClassic && f.format == "parquet"
}
