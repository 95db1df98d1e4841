package cluster

import (
	"context"
	"errors"
	"fmt"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// columnarFits reports whether the inputs, decoded column by column, fit the memory limit: then
// parquetio.Permute sorts them at column speed in one pass. Decoded, a column takes about its
// uncompressed page bytes plus a definition level and an offset per value; dictionary-encoded
// columns expand when decoded, hence the margin; the order costs 4 bytes a row. The rest of the limit
// is the garbage collector's headroom.
func (j *rewriteJob) columnarFits() bool {
	need := float64(j.total) * 8
	for _, in := range j.ins {
		need += 1.5*float64(in.uncompressed) + float64(in.live)*float64(j.l.leafColumns)*6
	}
	return need <= 0.6*float64(j.opts.MemoryLimit)
}

// permuteOptions are the options of parquetio.Permute and PermuteSubset: the output path's schema
// and writer (table.RewriteOutputs), and the materialized row-tracking columns when row ids must be
// preserved (the inputs then carry their files' bases, see permuteInput).
func (j *rewriteJob) permuteOptions() parquetio.RewriteOptions {
	o := j.out.Options()
	o.Parallelism = j.parallelism()
	return o
}

// permuteInput is the parquetio input of one data file read through r.
func permuteInput(r storage.ReaderAt, in *input) parquetio.RewriteInput {
	return parquetio.RewriteInput{File: r, Deleted: in.deleted, RowTracking: in.add.RowTrackingBase()}
}

// permute writes the outputs with parquetio.Permute: the physical-row path, which also computes
// preserved row ids column by column.
func (j *rewriteJob) permute(ctx context.Context, order []uint32, starts []int) ([]*delta.AddFile, error) {
	store := j.l.snap.Table().Store()
	inputs := make([]parquetio.RewriteInput, len(j.ins))
	defer func() {
		for _, in := range inputs {
			if in.File != nil {
				in.File.Close()
			}
		}
	}()
	for i, in := range j.ins {
		r, err := store.Open(ctx, in.key)
		if err != nil {
			return nil, fmt.Errorf("open data file %s: %w", in.add.Path, err)
		}
		inputs[i] = permuteInput(r, in)
	}
	res, err := parquetio.Permute(ctx, inputs, order, starts, j.out.Create, j.permuteOptions())
	if err != nil {
		if errors.Is(err, parquetio.ErrPermuteUnsupported) {
			return nil, err
		}
		return nil, fmt.Errorf("cluster %d files: %w", len(j.ins), err)
	}
	return j.out.AddFiles(res)
}
