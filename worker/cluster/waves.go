package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// permuteWaves is the columnar sort for inputs whose decoded columns exceed the memory limit: the
// outputs are written in waves whose rows fit it, each wave decoding every input again and keeping only
// its own rows (parquetio.PermuteSubset). A remote table's inputs are first copied to TempDir, so that
// the repeated reads hit the local disk, not the object store. It returns the outputs' adds, the number
// of waves and the bytes copied.
func (j *rewriteJob) permuteWaves(ctx context.Context, order []uint32, starts []int) ([]*delta.AddFile, int, int64, error) {
	waves := j.outputWaves(order, starts)
	inputs, copied, cleanup, err := j.waveInputs(ctx, len(waves) > 1)
	defer cleanup()
	if err != nil {
		return nil, 0, 0, err
	}
	adds := make([]*delta.AddFile, len(starts))
	for w, first := range waves {
		last := len(starts)
		if w+1 < len(waves) {
			last = waves[w+1]
		}
		lo, hi := starts[first], len(order)
		if last < len(starts) {
			hi = starts[last]
		}
		rel := make([]int, 0, last-first)
		for _, s := range starts[first:last] {
			rel = append(rel, s-lo)
		}
		var fl outputFlusher
		res, err := parquetio.PermuteSubset(ctx, inputs, order[lo:hi], rel, j.flushedCreate(&fl, first), j.permuteOptions())
		if err = errors.Join(err, fl.wait()); err != nil {
			return nil, 0, 0, fmt.Errorf("cluster %d files, wave %d of %d: %w", len(j.ins), w+1, len(waves), err)
		}
		for i, wr := range res.Files {
			if adds[first+i], err = j.out.AddFile(first+i, wr); err != nil {
				return nil, 0, 0, err
			}
		}
		j.say("wrote %d/%d files (wave %d of %d)", last, len(starts), w+1, len(waves))
	}
	return adds, len(waves), copied, nil
}

// outputWaves groups consecutive outputs into waves whose decoded rows fit the memory limit's share
// for them (columnarFits), less the order and the row → row group map (8 bytes a row); it returns
// each wave's first output.
func (j *rewriteJob) outputWaves(order []uint32, starts []int) []int {
	budget := max(permuteShare*float64(j.opts.MemoryLimit)-float64(j.total)*8, float64(j.opts.MemoryLimit)/8)
	rowBytes := make([]float64, len(j.ins))
	for i, in := range j.ins {
		if in.live > 0 {
			rowBytes[i] = in.permuteBytes / float64(in.live)
		}
	}
	fileOf := func(row uint32) int {
		return sort.Search(len(j.ins), func(i int) bool { return j.off[i+1] > int64(row) })
	}
	waves := []int{0}
	var acc float64
	for k, lo := range starts {
		hi := len(order)
		if k+1 < len(starts) {
			hi = starts[k+1]
		}
		var b float64
		for _, row := range order[lo:hi] {
			b += rowBytes[fileOf(row)]
		}
		if acc > 0 && acc+b > budget {
			waves = append(waves, k)
			acc = 0
		}
		acc += b
	}
	return waves
}

// waveInputs opens the inputs for the waves: straight from a local table, or, with several waves of a
// remote one, from copies in TempDir.
func (j *rewriteJob) waveInputs(ctx context.Context, several bool) ([]parquetio.RewriteInput, int64, func(), error) {
	store := j.l.snap.Table().Store()
	inputs := make([]parquetio.RewriteInput, len(j.ins))
	var dir string
	cleanup := func() {
		for _, in := range inputs {
			if in.File != nil {
				in.File.Close()
			}
		}
		if dir != "" {
			os.RemoveAll(dir)
		}
	}
	local := strings.HasPrefix(store.Location(), "file://")
	var copied int64
	if several && !local {
		var err error
		if dir, err = os.MkdirTemp(j.opts.TempDir, "deltakeeper-cluster-"); err != nil {
			return nil, 0, cleanup, fmt.Errorf("local copies of the inputs in %s (set --tmp-dir to a writable local directory): %w", j.opts.TempDir, err)
		}
	}
	for i, in := range j.ins {
		r, err := store.Open(ctx, in.key)
		if err != nil {
			return nil, 0, cleanup, fmt.Errorf("open data file %s: %w", in.add.Path, err)
		}
		if dir != "" {
			lf, err := copyLocal(r, filepath.Join(dir, fmt.Sprintf("input-%05d.parquet", i)))
			r.Close()
			if err != nil {
				return nil, 0, cleanup, fmt.Errorf("copy data file %s to %s: %w", in.add.Path, dir, err)
			}
			r = lf
			copied += lf.Size()
		}
		inputs[i] = permuteInput(r, in)
	}
	if dir != "" {
		j.say("copied %d files (%d bytes) to %s for the waves", len(j.ins), copied, dir)
	}
	return inputs, copied, cleanup, nil
}

func copyLocal(r storage.ReaderAt, path string) (localFile, error) {
	f, err := os.Create(path)
	if err != nil {
		return localFile{}, err
	}
	if _, err := io.Copy(f, io.NewSectionReader(r, 0, r.Size())); err != nil {
		f.Close()
		return localFile{}, err
	}
	return localFile{f, r.Size()}, nil
}
