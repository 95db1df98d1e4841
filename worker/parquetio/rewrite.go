package parquetio

import (
	"context"
	"fmt"
	"runtime"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// DefaultRewriteRowGroupBytes is the estimated compressed size of an output row group when
// WriterOptions.RowGroupBytes is 0. A rewrite holds about two row groups in memory.
const DefaultRewriteRowGroupBytes = 16 << 20

// RewriteInput is one file to rewrite.
type RewriteInput struct {
	File storage.ReaderAt
	// Deleted holds the file's deleted rows (its deletion vector), physical indexes; nil for none.
	Deleted *roaring64.Bitmap
	// RowTracking is the file's baseRowId and defaultRowCommitVersion; read only when
	// RewriteOptions.RowTracking is set.
	RowTracking RowTrackingBase
}

// RewriteOptions control Rewrite.
type RewriteOptions struct {
	// Schema is the output schema with the names stored in files (physical names under column
	// mapping). Inputs are read with it: columns they lack are null, narrower stored types are widened.
	Schema *types.StructType
	// MatchFieldIDs resolves input columns by field id (column mapping "id" mode).
	MatchFieldIDs bool
	// Writer sets codec, field ids and sizing of the outputs. RowGroupBytes defaults to
	// DefaultRewriteRowGroupBytes here.
	Writer WriterOptions
	// TargetFileBytes starts a new output once an output reaches it (checked after each row group);
	// 0 writes a single output.
	TargetFileBytes int64
	// Parallelism is the number of goroutines decoding and encoding columns, and as many compress
	// pages; 0 means GOMAXPROCS. The cores used are bounded by GOMAXPROCS: on 2 cores, 2 column
	// goroutines and 2 compressors keep both busy even when one column holds most of the data.
	Parallelism int
	// RowTracking, when set, preserves every row's stable row id and row commit version (Delta row
	// tracking) in the named columns of Schema: a row keeps its materialized values when the input
	// stores non-null ones, and otherwise gets its input's baseRowId plus its physical index in the
	// input (deleted rows counted) and its input's defaultRowCommitVersion. Inputs stay on the
	// column-copy path: the values are computed per column, not per row.
	RowTracking *RowTrackingColumns
	// CopyPages keeps each input row group as one output row group (one left without rows is dropped;
	// row groups of more than twice RowGroupBytes are still cut) and copies the pages of its columns
	// that lose no row as they are stored, without decoding them, where the input stores the column
	// in the output's layout and codec and was written by this package (rewrite_pagecopy.go). A row
	// filter (Deleted) that hits few pages then costs little more than reading the file. Row groups
	// are not merged, so it suits a copy-on-write of one file, not compaction.
	CopyPages bool
}

// RewriteResult describes what Rewrite wrote.
type RewriteResult struct {
	// Files describes the outputs in creation order.
	Files []*WriteResult
	// Rows is the number of rows written; Deleted the number of rows the deletion vectors dropped.
	Rows, Deleted int64
	// GeneralInputs counts inputs whose layout differed from the output's (legacy lists, missing nested
	// fields, decimal rescaling) and which were therefore rewritten through logical values.
	GeneralInputs int
}

// Rewrite compacts inputs into new files of the output schema, in input order, dropping deleted rows.
// Outputs are created with create(0), create(1), … and rolled over at TargetFileBytes; each is closed
// by Rewrite when complete. Columns are copied page by page without building rows when an input stores
// them in the output's layout (whatever its codec, encodings or timestamp representation); other inputs
// take the logical path. Memory is bounded by a few row groups, not by the input size.
//
// On error the output being written is aborted and the error returned together with the outputs
// already completed, which the caller should delete.
func Rewrite(ctx context.Context, inputs []RewriteInput, create func(i int) (storage.Writer, error), opts RewriteOptions) (*RewriteResult, error) {
	if opts.Schema == nil {
		return nil, fmt.Errorf("rewrite: no output schema")
	}
	out, err := buildOutputSchema(opts.Schema, opts.Writer.WriteFieldIDs)
	if err != nil {
		return nil, fmt.Errorf("rewrite: %w", err)
	}
	cfg, err := opts.Writer.config(len(out.leaves))
	if err != nil {
		return nil, fmt.Errorf("rewrite: %w", err)
	}
	outTree, _, err := buildSchemaTree(out.elements)
	if err != nil {
		return nil, fmt.Errorf("rewrite: %w", err)
	}
	rt := rowTrackingPlan{id: -1, version: -1}
	if opts.RowTracking != nil {
		if rt.id, rt.version, err = rowTrackingFields(opts.Schema, opts.RowTracking); err != nil {
			return nil, fmt.Errorf("rewrite: %w", err)
		}
		for _, in := range inputs {
			rt.base = append(rt.base, in.RowTracking)
		}
	}
	res := &RewriteResult{}
	files := make([]*File, len(inputs))
	plans := make([]*inputPlan, len(inputs))
	deleted := make([]*roaring64.Bitmap, len(inputs))
	target := opts.Writer.RowGroupBytes
	if target <= 0 {
		target = DefaultRewriteRowGroupBytes
	}
	gp := &groupPlanner{keepRowGroups: opts.CopyPages, targetBytes: target, maxRows: opts.Writer.RowGroupRows, numLeaves: len(out.leaves)}
	for i, in := range inputs {
		if files[i], err = Open(ctx, in.File); err != nil {
			return nil, fmt.Errorf("rewrite: input %d: %w", i, err)
		}
		if plans[i], err = planInput(files[i], opts.Schema, out, outTree, opts.MatchFieldIDs); err != nil {
			return nil, fmt.Errorf("rewrite: input %d: %w", i, err)
		}
		if plans[i].general {
			res.GeneralInputs++
		}
		deleted[i] = in.Deleted
		for rg := range files[i].NumRowGroups() {
			gp.add(i, files[i], rg, plans[i], in.Deleted)
		}
	}
	gp.close()

	workers := opts.Parallelism
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	// Compression, about two thirds of the work, runs on its own goroutines page by page, so a column
	// that dominates the data still spreads over every core.
	cfg.pool = newCompressPool(cfg.codec, workers)
	defer cfg.pool.close()
	sched := newScheduler(gp.groups, len(out.leaves), 1)
	// Page bodies are read past the buffer (io.ReadFull of a page larger than it goes straight to the
	// storage), so the buffer only serves page headers and small pages.
	bufSize := min(128<<10, max(16<<10, (4<<20)/max(len(out.leaves), 1)))
	lanes := make([]*lane, len(out.leaves))
	for j, l := range out.leaves {
		lanes[j] = newLane(l, cfg, files, plans, bufSize)
	}
	if rt.base != nil {
		lanes[outTree.children[rt.id].leaf].rt = &rtFill{kind: rtRowID, base: rt.base}
		lanes[outTree.children[rt.version].leaf].rt = &rtFill{kind: rtCommitVersion, base: rt.base}
	}
	general := newGeneralLane(opts.Schema, out, cfg, files, deleted, opts.MatchFieldIDs, rt)
	defer general.close()

	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	for range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for {
				t, ok := sched.take()
				if !ok {
					return
				}
				var chunks []*encodedChunk
				var err error
				if t.lane == generalTask {
					chunks, err = general.run(ctx, gp.groups[t.group])
				} else {
					var c *encodedChunk
					c, err = lanes[t.lane].run(ctx, t.lane, gp.groups[t.group])
					chunks = []*encodedChunk{c}
				}
				sched.done(t, chunks, err)
			}
		}()
	}
	sink := &outputSink{create: create, out: out, cfg: cfg, target: opts.TargetFileBytes, kv: opts.Writer.KeyValueMetadata}
	err = sink.writeAll(ctx, sched, gp.groups)
	if err != nil {
		sched.fail(err)
		cancel() // running tasks stop at their next page
	} else {
		sched.finish()
	}
	wg.Wait()
	res.Files = sink.results
	if err != nil {
		sink.abort()
		return res, fmt.Errorf("rewrite: %w", err)
	}
	for i, f := range files {
		if dv := deleted[i]; dv != nil && f.NumRows() > 0 {
			res.Deleted += int64(dv.Rank(uint64(f.NumRows() - 1))) // deleted rows below NumRows
		}
	}
	for _, g := range gp.groups {
		res.Rows += g.rows
	}
	return res, nil
}

// outputSink writes finished row groups to the outputs in order and rolls over between them.
type outputSink struct {
	create  func(int) (storage.Writer, error)
	out     *outputSchema
	cfg     *encoderConfig
	target  int64
	kv      map[string]string
	w       storage.Writer
	fw      *fileWriter
	stats   []leafStats
	results []*WriteResult
}

func (s *outputSink) writeAll(ctx context.Context, sched *scheduler, groups []*outGroup) error {
	for k := range groups {
		if err := ctx.Err(); err != nil {
			return err
		}
		if s.fw == nil {
			w, err := s.create(len(s.results))
			if err != nil {
				return fmt.Errorf("create output %d: %w", len(s.results), err)
			}
			s.w, s.fw = w, newFileWriter(w, s.out, s.cfg.codecID)
			s.fw.kv = keyValues(s.kv)
			s.stats = make([]leafStats, len(s.out.leaves))
		}
		s.fw.beginRowGroup()
		for j := range s.out.leaves {
			c, err := sched.chunk(k, j)
			if err != nil {
				return err
			}
			s.stats[j].add(s.out.leaves[j].order, c)
			if err := s.fw.writeChunk(c); err != nil {
				return err
			}
		}
		s.fw.endRowGroup()
		sched.written(k)
		if s.target > 0 && s.fw.offset >= s.target {
			if err := s.finishFile(); err != nil {
				return err
			}
		}
	}
	if s.fw != nil {
		return s.finishFile()
	}
	return nil
}

func (s *outputSink) finishFile() error {
	size, err := s.fw.close()
	if err != nil {
		return err
	}
	if err := s.w.Close(); err != nil {
		return fmt.Errorf("close output %d: %w", len(s.results), err)
	}
	s.results = append(s.results, &WriteResult{NumRows: s.fw.numRows, Bytes: size, Columns: columnStatsOf(s.out.leaves, s.stats)})
	s.w, s.fw = nil, nil
	return nil
}

func (s *outputSink) abort() {
	if s.w != nil {
		_ = s.w.Abort() // the rewrite's error is the one to report
		s.w, s.fw = nil, nil
	}
}
