package delta

import (
	"context"
	"sync"

	"golang.org/x/sync/semaphore"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// commitReadAhead bounds how many bytes of commit JSON are parsed ahead of the replay: enough to
// parse the commits after a checkpoint while the checkpoint is decoded, without holding a long
// history in memory at once.
const commitReadAhead = 64 << 20

// commitReader parses the commit (and log compaction) files of a segment in order on its own
// goroutine, ahead of the replay that applies them.
type commitReader struct {
	files   []logFile
	results []chan commitFile
	sem     *semaphore.Weighted
	cancel  context.CancelFunc
	wg      sync.WaitGroup
}

type commitFile struct {
	actions []*Action
	err     error
}

// startCommitReader starts reading files; only the commit at target keeps its commitInfo (the
// snapshot's), the others' are skipped unread.
func startCommitReader(ctx context.Context, store storage.Store, files []logFile, target Version) *commitReader {
	ctx, cancel := context.WithCancel(ctx)
	c := &commitReader{files: files, results: make([]chan commitFile, len(files)), sem: semaphore.NewWeighted(commitReadAhead), cancel: cancel}
	for i := range c.results {
		c.results[i] = make(chan commitFile, 1)
	}
	if len(files) == 0 {
		return c
	}
	c.wg.Add(1)
	go func() {
		defer c.wg.Done()
		for i, f := range files {
			if err := c.sem.Acquire(ctx, c.weight(i)); err != nil {
				c.results[i] <- commitFile{err: err}
				continue
			}
			var r commitFile
			opts := readOptions{commitInfo: f.kind == kindCommit && f.version == target}
			r.err = readLogFile(ctx, store, f.Key, opts, func(a *Action) error {
				r.actions = append(r.actions, a)
				return nil
			})
			c.results[i] <- r
		}
	}()
	return c
}

func (c *commitReader) weight(i int) int64 { return min(max(c.files[i].Size, 1), commitReadAhead) }

// next waits for the actions of file i; files are taken in order.
func (c *commitReader) next(i int) ([]*Action, error) {
	r := <-c.results[i]
	return r.actions, r.err
}

// done releases file i's share of the read-ahead once its actions are applied.
func (c *commitReader) done(i int) { c.sem.Release(c.weight(i)) }

// stop ends the reading (a replay that failed or finished) and waits for the goroutine.
func (c *commitReader) stop() {
	c.cancel()
	c.wg.Wait()
}
