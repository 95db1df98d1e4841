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
// parquetio.Permute sorts them at column speed in one pass. The decoded rows are estimated from the
// footers (parquetio.File.PermuteBytes); the order and the row → row group map cost 8 bytes a row.
// The rest of the limit, a fifth, is the encoders' buffers and the garbage collector's headroom: the
// decoded columns are flat slices of values, which the collector does not scan.
func (j *rewriteJob) columnarFits() bool {
	return j.permuteBytes(j.ins) <= permuteShare*float64(j.opts.MemoryLimit)
}

// permuteShare is the part of the memory limit the decoded rows and the order may take.
const permuteShare = 0.8

// permuteBytes estimates the memory of permuting all the live rows of ins at once.
func (j *rewriteJob) permuteBytes(ins []*input) float64 {
	need := float64(j.total) * 8
	for _, in := range ins {
		need += in.permuteBytes
	}
	return need
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

// flushedCreate is the create function of parquetio.Permute and PermuteSubset for the outputs from
// first on: table.RewriteOutputs.Create, written and closed in the background (outputFlusher).
func (j *rewriteJob) flushedCreate(fl *outputFlusher, first int) func(int) (storage.Writer, error) {
	return func(i int) (storage.Writer, error) {
		w, err := j.out.Create(first + i)
		if err != nil {
			return nil, err
		}
		return fl.wrap(w), nil
	}
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
	var fl outputFlusher
	res, err := parquetio.Permute(ctx, inputs, order, starts, j.flushedCreate(&fl, 0), j.permuteOptions())
	// Every output is closed or aborted once Permute returns; wait for the storage to finish them,
	// before they are described, committed or deleted.
	err = errors.Join(err, fl.wait())
	if err != nil {
		if errors.Is(err, parquetio.ErrPermuteUnsupported) {
			return nil, err
		}
		return nil, fmt.Errorf("cluster %d files: %w", len(j.ins), err)
	}
	return j.out.AddFiles(res)
}
