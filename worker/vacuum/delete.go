package vacuum

import (
	"context"
	"fmt"
	"sync"
	"sync/atomic"

	wprogress "github.com/deltakeeper/deltakeeper/worker/progress"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// deleteAll deletes the candidates with bounded concurrency. It stops starting new deletes after the
// first failure and reports what was deleted until then.
func deleteAll(ctx context.Context, store storage.Store, cands []candidate, parallelism int, rep *Report, progress func(string)) error {
	var files, bytes atomic.Int64
	var total int64
	for _, c := range cands {
		total += c.size
	}
	wprogress.Start(ctx, "vacuum", int64(len(cands)), total)
	var mu sync.Mutex
	var firstErr error
	each(ctx, len(cands), parallelism, func(i int) bool {
		c := cands[i]
		if err := store.Delete(ctx, c.key); err != nil {
			mu.Lock()
			firstErr = cmpErr(firstErr, fmt.Errorf("delete %s: %w", c.key, err))
			mu.Unlock()
			return false
		}
		n := files.Add(1)
		bytes.Add(c.size)
		wprogress.Advance(ctx, 1, c.size)
		if n%1000 == 0 {
			progress(fmt.Sprintf("deleted %d/%d files", n, len(cands)))
		}
		return true
	})
	rep.FilesDeleted, rep.BytesDeleted = files.Load(), bytes.Load()
	if firstErr == nil && ctx.Err() != nil && rep.FilesDeleted < int64(len(cands)) {
		firstErr = fmt.Errorf("vacuum interrupted: %w", context.Cause(ctx))
	}
	return firstErr
}

// each runs fn(0..n-1) on up to parallelism goroutines, until fn returns false or ctx is done.
func each(ctx context.Context, n, parallelism int, fn func(i int) bool) {
	if parallelism <= 0 {
		parallelism = DefaultParallelism
	}
	var next atomic.Int64
	var stop atomic.Bool
	var wg sync.WaitGroup
	for range min(parallelism, n) {
		wg.Go(func() {
			for !stop.Load() && ctx.Err() == nil {
				i := int(next.Add(1)) - 1
				if i >= n {
					return
				}
				if !fn(i) {
					stop.Store(true)
				}
			}
		})
	}
	wg.Wait()
}
