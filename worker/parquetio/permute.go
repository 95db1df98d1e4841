package parquetio

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sort"
	"sync"

	"github.com/parquet-go/parquet-go/format"
	"golang.org/x/sync/errgroup"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// ErrPermuteUnsupported is returned by Permute, before anything is written, when an input's layout
// needs the logical path (legacy lists, missing nested fields, decimal rescaling): callers sort such
// inputs through logical rows instead.
var ErrPermuteUnsupported = errors.New("an input's layout needs the logical path")

// Permute writes the live rows of inputs (deleted rows dropped) in a given order: output row r is
// the live row order[r], numbered over all inputs (input 0's live rows first, each file's in file
// order), and output k holds rows [starts[k], starts[k+1]) (the last one up to len(order)). It is the
// clustering sort's physical-row path: every column of every input is decoded once into memory in the
// output's physical representation (levels and typed values, dictionaries expanded), and each output is
// encoded by gathering rows column by column, so no row is ever built or compared. Memory is about the
// inputs' decoded (uncompressed) size; callers that cannot afford it spill instead.
//
// Outputs are written concurrently (opts.Parallelism) and closed when complete. On error the outputs
// already completed are returned with it; the caller deletes them.
func Permute(ctx context.Context, inputs []RewriteInput, order []uint32, starts []int, create func(i int) (storage.Writer, error), opts RewriteOptions) (*RewriteResult, error) {
	if opts.Schema == nil {
		return nil, fmt.Errorf("permute: no output schema")
	}
	out, err := buildOutputSchema(opts.Schema, opts.Writer.WriteFieldIDs)
	if err != nil {
		return nil, fmt.Errorf("permute: %w", err)
	}
	cfg, err := opts.Writer.config(len(out.leaves))
	if err != nil {
		return nil, fmt.Errorf("permute: %w", err)
	}
	outTree, _, err := buildSchemaTree(out.elements)
	if err != nil {
		return nil, fmt.Errorf("permute: %w", err)
	}
	p := &permuter{out: out, cfg: cfg, opts: opts, order: order, starts: starts, create: create}
	p.files = make([]*File, len(inputs))
	p.plans = make([]*inputPlan, len(inputs))
	p.off = make([]int64, len(inputs)+1)
	var storedBytes int64
	for i, in := range inputs {
		if p.files[i], err = Open(ctx, in.File); err != nil {
			return nil, fmt.Errorf("permute: input %d: %w", i, err)
		}
		if p.plans[i], err = planInput(p.files[i], opts.Schema, out, outTree, opts.MatchFieldIDs); err != nil {
			return nil, fmt.Errorf("permute: input %d: %w", i, err)
		}
		if p.plans[i].general {
			return nil, fmt.Errorf("permute: input %d: %s: %w", i, p.plans[i].reason, ErrPermuteUnsupported)
		}
		live := p.files[i].NumRows()
		if in.Deleted != nil && live > 0 {
			live -= int64(in.Deleted.Rank(uint64(live - 1)))
		}
		p.off[i+1] = p.off[i] + live
		storedBytes += in.File.Size()
	}
	if p.off[len(inputs)] != int64(len(order)) {
		return nil, fmt.Errorf("permute: the order has %d rows, the inputs %d live rows", len(order), p.off[len(inputs)])
	}
	p.workers = opts.Parallelism
	if p.workers <= 0 {
		p.workers = runtime.GOMAXPROCS(0)
	}
	if err := p.decode(ctx, inputs); err != nil {
		return nil, fmt.Errorf("permute: %w", err)
	}
	// Row groups of about RowGroupBytes, estimated from the inputs' stored bytes per row, and of at least
	// two dictionary probes (the encoder decides between dictionary and PLAIN after probeValues values).
	target := opts.Writer.RowGroupBytes
	if target <= 0 {
		target = DefaultRewriteRowGroupBytes
	}
	p.groupRows = 1 << 20
	if len(order) > 0 && storedBytes > 0 {
		p.groupRows = max(2*cfg.dict.probeValues, int(float64(target)/(float64(storedBytes)/float64(len(order)))))
	}
	if opts.Writer.RowGroupRows > 0 {
		p.groupRows = min(p.groupRows, int(opts.Writer.RowGroupRows))
	}
	res, err := p.encode(ctx)
	if err != nil {
		return res, fmt.Errorf("permute: %w", err)
	}
	for i, in := range inputs {
		res.Deleted += p.files[i].NumRows() - (p.off[i+1] - p.off[i])
		_ = in
	}
	res.Rows = int64(len(order))
	return res, nil
}

type permuter struct {
	out     *outputSchema
	cfg     *encoderConfig
	opts    RewriteOptions
	files   []*File
	plans   []*inputPlan
	off     []int64 // global number of each input's first live row
	order   []uint32
	starts  []int
	create  func(int) (storage.Writer, error)
	workers int

	cols      [][]*column // [input][leaf]
	groupRows int
}

// column is one leaf of one input, decoded: output-level definition and repetition levels and the
// defined values, with indexes from a live row to its triplets and values.
type column struct {
	n          int
	defs, reps []byte
	vals       valueSlices
	vidx       []int32 // flat leaves with nulls: value index of each triplet (nil: the triplet index)
	rec, vrec  []int32 // repeated leaves: first triplet and first value of each record, plus an end entry
}

// decode reads every leaf of every input into memory, several columns at once.
func (p *permuter) decode(ctx context.Context, inputs []RewriteInput) error {
	p.cols = make([][]*column, len(inputs))
	bufSize := min(128<<10, max(16<<10, (4<<20)/max(len(p.out.leaves), 1)))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.workers)
	for i, in := range inputs {
		p.cols[i] = make([]*column, len(p.out.leaves))
		for j, leaf := range p.out.leaves {
			g.Go(func() error {
				c := &column{}
				l := &lane{leaf: leaf, files: p.files, plans: p.plans, rb: newReadBuffers(bufSize), input: -1}
				l.sink = func(b *columnBatch) error { c.capture(b, leaf); return nil }
				src := &p.plans[i].sources[j]
				f := p.files[i]
				for rg := range f.NumRowGroups() {
					info := f.RowGroup(rg)
					deleted := deletedIn(in.Deleted, info.FirstRow, info.NumRows)
					live := info.NumRows - int64(len(deleted))
					if live == 0 {
						continue
					}
					if src.missing {
						if err := l.nulls(live); err != nil {
							return err
						}
						continue
					}
					s := rgSlice{input: i, rg: rg, from: 0, to: info.NumRows, deleted: deleted, live: live}
					if err := l.copySlice(gctx, s, src); err != nil {
						return fmt.Errorf("input %d, row group %d, column %s: %w", i, rg, joinPath(leaf.path), err)
					}
				}
				if err := c.index(leaf, p.off[i+1]-p.off[i]); err != nil {
					return fmt.Errorf("input %d, column %s: %w", i, joinPath(leaf.path), err)
				}
				p.cols[i][j] = c
				return nil
			})
		}
	}
	return g.Wait()
}

// capture copies a batch (which borrows page buffers) into the column, expanding dictionary indexes.
func (c *column) capture(b *columnBatch, leaf *leafDesc) {
	c.n += b.n
	if leaf.maxDef > 0 {
		c.defs = append(c.defs, b.defs...)
	}
	if leaf.maxRep > 0 {
		c.reps = append(c.reps, b.reps...)
	}
	if b.idx != nil {
		appendIndexed(&c.vals, &b.src.valueSlices, leaf.phys, b.idx)
		return
	}
	appendRange(&c.vals, &b.valueSlices, leaf.phys, 0, b.valueSlices.len(leaf.phys))
}

// index builds the row → triplet/value indexes and checks the row count.
func (c *column) index(leaf *leafDesc, rows int64) error {
	maxDef := byte(leaf.maxDef)
	if leaf.maxRep == 0 {
		if int64(c.n) != rows {
			return fmt.Errorf("decoded %d rows, expected %d", c.n, rows)
		}
		if leaf.maxDef > 0 && countEqual(c.defs, maxDef) != c.n {
			c.vidx = make([]int32, c.n)
			v := int32(0)
			for t, d := range c.defs {
				c.vidx[t] = v
				if d == maxDef {
					v++
				}
			}
		}
		return nil
	}
	v := int32(0)
	for t := 0; t < c.n; t++ {
		if c.reps[t] == 0 {
			c.rec = append(c.rec, int32(t))
			c.vrec = append(c.vrec, v)
		}
		if c.defs == nil || c.defs[t] == maxDef {
			v++
		}
	}
	if int64(len(c.rec)) != rows {
		return fmt.Errorf("decoded %d records, expected %d", len(c.rec), rows)
	}
	c.rec = append(c.rec, int32(c.n))
	c.vrec = append(c.vrec, v)
	return nil
}

// encode writes the outputs, several at once.
func (p *permuter) encode(ctx context.Context) (*RewriteResult, error) {
	res := &RewriteResult{Files: make([]*WriteResult, len(p.starts))}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.workers)
	encs := sync.Pool{New: func() any {
		e := make([]*columnEncoder, len(p.out.leaves))
		for j, leaf := range p.out.leaves {
			e[j] = newColumnEncoder(leaf, p.cfg)
		}
		return e
	}}
	for k := range p.starts {
		end := len(p.order)
		if k+1 < len(p.starts) {
			end = p.starts[k+1]
		}
		g.Go(func() error {
			e := encs.Get().([]*columnEncoder)
			wr, err := p.writeOutput(gctx, k, p.starts[k], end, e)
			if err != nil {
				return err // the encoders may hold a partial chunk: drop them
			}
			encs.Put(e)
			res.Files[k] = wr
			return nil
		})
	}
	err := g.Wait()
	if err != nil {
		var done []*WriteResult
		for _, f := range res.Files {
			if f != nil {
				done = append(done, f)
			}
		}
		res.Files = done
	}
	return res, err
}

// writeOutput writes output k: rows [lo, hi) of the order.
func (p *permuter) writeOutput(ctx context.Context, k, lo, hi int, encs []*columnEncoder) (*WriteResult, error) {
	w, err := p.create(k)
	if err != nil {
		return nil, fmt.Errorf("create output %d: %w", k, err)
	}
	fw := newFileWriter(w, p.out, p.cfg.codecID)
	fw.kv = keyValues(p.opts.Writer.KeyValueMetadata)
	stats := make([]leafStats, len(p.out.leaves))
	var in, loc []int32
	var batch columnBatch
	fail := func(err error) (*WriteResult, error) {
		_ = w.Abort() // the write error is the one to report
		return nil, err
	}
	for a := lo; a < hi; a += p.groupRows {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		b := min(hi, a+p.groupRows)
		in, loc = in[:0], loc[:0]
		for _, g := range p.order[a:b] {
			i := sort.Search(len(p.files), func(i int) bool { return p.off[i+1] > int64(g) })
			in, loc = append(in, int32(i)), append(loc, int32(int64(g)-p.off[i]))
		}
		fw.beginRowGroup()
		for j, leaf := range p.out.leaves {
			for s := 0; s < len(in); s += writeStep {
				e := min(len(in), s+writeStep)
				p.gather(&batch, j, leaf, in[s:e], loc[s:e])
				if err := encs[j].write(&batch); err != nil {
					return fail(err)
				}
			}
			c, err := encs[j].finishChunk()
			if err != nil {
				return fail(err)
			}
			stats[j].add(leaf.order, c)
			if err := fw.writeChunk(c); err != nil {
				return fail(err)
			}
		}
		fw.endRowGroup()
	}
	size, err := fw.close()
	if err != nil {
		return fail(err)
	}
	if err := w.Close(); err != nil {
		return nil, fmt.Errorf("close output %d: %w", k, err)
	}
	return &WriteResult{NumRows: fw.numRows, Bytes: size, Columns: columnStatsOf(p.out.leaves, stats)}, nil
}

// gather fills batch with leaf j of the given rows (input, live row within it).
func (p *permuter) gather(batch *columnBatch, j int, leaf *leafDesc, in, loc []int32) {
	batch.reset()
	maxDef := byte(leaf.maxDef)
	for r := range in {
		c := p.cols[in[r]][j]
		t := int(loc[r])
		if leaf.maxRep > 0 {
			t0, t1 := c.rec[t], c.rec[t+1]
			if c.defs != nil {
				batch.defs = append(batch.defs, c.defs[t0:t1]...)
			}
			batch.reps = append(batch.reps, c.reps[t0:t1]...)
			batch.n += int(t1 - t0)
			appendRange(&batch.valueSlices, &c.vals, leaf.phys, int(c.vrec[t]), int(c.vrec[t+1]))
			continue
		}
		batch.n++
		if leaf.maxDef > 0 {
			d := c.defs[t]
			batch.defs = append(batch.defs, d)
			if d != maxDef {
				continue
			}
		}
		v := t
		if c.vidx != nil {
			v = int(c.vidx[t])
		}
		appendOne(&batch.valueSlices, &c.vals, leaf.phys, v)
	}
	if leaf.maxDef == 0 {
		batch.defs = nil
	}
	if leaf.maxRep == 0 {
		batch.reps = nil
	}
}

// appendOne appends value i of src.
func appendOne(dst, src *valueSlices, phys format.Type, i int) {
	switch phys {
	case format.Boolean:
		dst.bools = append(dst.bools, src.bools[i])
	case format.Int32:
		dst.i32 = append(dst.i32, src.i32[i])
	case format.Int64:
		dst.i64 = append(dst.i64, src.i64[i])
	case format.Int96:
		dst.i96 = append(dst.i96, src.i96[i])
	case format.Float:
		dst.f32 = append(dst.f32, src.f32[i])
	case format.Double:
		dst.f64 = append(dst.f64, src.f64[i])
	default:
		if len(dst.binOff) == 0 {
			dst.binOff = append(dst.binOff, uint32(len(dst.bin)))
		}
		dst.bin = append(dst.bin, src.bytesAt(i)...)
		dst.binOff = append(dst.binOff, uint32(len(dst.bin)))
	}
}

// appendRange appends values [lo, hi) of src.
func appendRange(dst, src *valueSlices, phys format.Type, lo, hi int) {
	switch phys {
	case format.Boolean:
		dst.bools = append(dst.bools, src.bools[lo:hi]...)
	case format.Int32:
		dst.i32 = append(dst.i32, src.i32[lo:hi]...)
	case format.Int64:
		dst.i64 = append(dst.i64, src.i64[lo:hi]...)
	case format.Int96:
		dst.i96 = append(dst.i96, src.i96[lo:hi]...)
	case format.Float:
		dst.f32 = append(dst.f32, src.f32[lo:hi]...)
	case format.Double:
		dst.f64 = append(dst.f64, src.f64[lo:hi]...)
	default:
		for i := lo; i < hi; i++ {
			appendOne(dst, src, phys, i)
		}
	}
}

// appendIndexed appends the dictionary entries idx of src.
func appendIndexed(dst, src *valueSlices, phys format.Type, idx []int32) {
	for _, i := range idx {
		appendOne(dst, src, phys, int(i))
	}
}
