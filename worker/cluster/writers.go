package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// outputWriters write the outputs of a rewrite: output k holds ranks [starts[k], starts[k+1]). Ranks
// arrive wave by wave, so an output may stay open across waves.
type outputWriters struct {
	j      *rewriteJob
	starts []int
	open   map[int]*openOutput
	mu     sync.Mutex
	adds   []*delta.AddFile
	done   int
}

type openOutput struct {
	key string
	sw  storage.Writer
	pw  *parquetio.Writer
}

// The outputs' uploads are bounded by the context the rewrite's table.RewriteOutputs was made with,
// since they may outlive the wave (and its errgroup context) that started them.
func newOutputWriters(j *rewriteJob, starts []int) *outputWriters {
	return &outputWriters{j: j, starts: starts, open: map[int]*openOutput{}, adds: make([]*delta.AddFile, len(starts))}
}

func (w *outputWriters) end(k int) int {
	if k+1 < len(w.starts) {
		return w.starts[k+1]
	}
	return int(w.j.total)
}

// writeRange writes ranks [lo, hi), held in rows[r-base], to their outputs, several outputs at once.
func (w *outputWriters) writeRange(ctx context.Context, rows []types.Struct, base, lo, hi int) error {
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(w.j.parallelism())
	for k := range w.starts {
		from, to := max(lo, w.starts[k]), min(hi, w.end(k))
		if from >= to {
			continue
		}
		g.Go(func() error { return w.write(gctx, k, rows[from-base:to-base], to == w.end(k)) })
	}
	return g.Wait()
}

func (w *outputWriters) write(ctx context.Context, k int, rows []types.Struct, last bool) error {
	w.mu.Lock()
	o := w.open[k]
	w.mu.Unlock()
	if o == nil {
		sw, err := w.j.out.Create(k)
		if err != nil {
			return err
		}
		opts := w.j.out.Options()
		pw, err := parquetio.NewWriter(sw, opts.Schema, opts.Writer)
		if err != nil {
			sw.Abort()
			return err
		}
		o = &openOutput{key: w.j.out.Key(k), sw: sw, pw: pw}
		w.mu.Lock()
		w.open[k] = o
		w.mu.Unlock()
	}
	for i := 0; i < len(rows); i += writeBatch {
		if err := ctx.Err(); err != nil {
			return err
		}
		if err := o.pw.Write(rows[i:min(i+writeBatch, len(rows))]); err != nil {
			return fmt.Errorf("write %s: %w", o.key, err)
		}
	}
	if !last {
		return nil
	}
	res, err := o.pw.Close()
	if err != nil {
		return fmt.Errorf("write %s: %w", o.key, err)
	}
	if err := o.sw.Close(); err != nil {
		return fmt.Errorf("upload %s: %w", o.key, err)
	}
	add, err := w.j.out.AddFile(k, res)
	if err != nil {
		return err
	}
	w.mu.Lock()
	delete(w.open, k)
	w.adds[k] = add
	w.done++
	w.j.say("wrote %d/%d files", w.done, len(w.starts))
	w.mu.Unlock()
	return nil
}

// abortOpen discards outputs still being written (after an error); completed ones are deleted by the
// caller (table.RewriteOutputs.Abort) when the commit does not happen.
func (w *outputWriters) abortOpen() {
	w.mu.Lock()
	defer w.mu.Unlock()
	var errs []error
	for k, o := range w.open {
		errs = append(errs, o.sw.Abort())
		delete(w.open, k)
	}
	_ = errors.Join(errs...) // best effort: the objects never became visible
}
