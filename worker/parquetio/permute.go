package parquetio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"
	"sync/atomic"

	"golang.org/x/sync/errgroup"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// ErrPermuteUnsupported is returned by Permute, before anything is written, when an input's layout
// needs the logical path (legacy lists, missing nested fields, decimal rescaling): callers sort such
// inputs through logical rows instead.
var ErrPermuteUnsupported = errors.New("an input's layout needs the logical path")

// Permute writes the live rows of inputs (deleted rows dropped) in a given order: output k holds the
// live rows order[starts[k]:starts[k+1]] (the last one up to len(order)), numbered over all inputs
// (input 0's live rows first, each file's in file order), cut into row groups in that order; within a
// row group rows keep their input order. It is the clustering sort's physical-row path: every column of
// every input is decoded once, and each decoded value is appended straight to the segment of its
// destination row group (and input), so that reads are sequential and writes go to one stream per
// row group; outputs are then encoded from the segments. No row is ever built or compared, and no
// value is fetched from a random place. Memory is about the inputs' decoded (uncompressed) size;
// callers that cannot afford it spill instead.
//
// Outputs are written concurrently (opts.Parallelism) and closed when complete. On error the outputs
// already completed are returned with it; the caller deletes them.
func Permute(ctx context.Context, inputs []RewriteInput, order []uint32, starts []int, create func(i int) (storage.Writer, error), opts RewriteOptions) (*RewriteResult, error) {
	return permute(ctx, inputs, order, starts, create, opts, false)
}

// PermuteSubset is Permute for some of the live rows: rows absent from order are decoded but not kept,
// so memory is about the subset's decoded size. Callers bound memory by permuting the outputs in
// waves, each decoding the inputs again (from local copies, for remote tables). Every row must appear
// at most once.
func PermuteSubset(ctx context.Context, inputs []RewriteInput, order []uint32, starts []int, create func(i int) (storage.Writer, error), opts RewriteOptions) (*RewriteResult, error) {
	return permute(ctx, inputs, order, starts, create, opts, true)
}

func permute(ctx context.Context, inputs []RewriteInput, order []uint32, starts []int, create func(i int) (storage.Writer, error), opts RewriteOptions, subset bool) (*RewriteResult, error) {
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
	p := &permuter{out: out, cfg: cfg, opts: opts, create: create}
	if opts.RowTracking != nil {
		// Row ids are preserved as in Rewrite: the materialized columns are filled from each row's
		// file base and physical index while they are decoded, before the rows move.
		id, version, err := rowTrackingFields(opts.Schema, opts.RowTracking)
		if err != nil {
			return nil, fmt.Errorf("permute: %w", err)
		}
		p.rtLeaf = map[int]rtKind{outTree.children[id].leaf: rtRowID, outTree.children[version].leaf: rtCommitVersion}
		for _, in := range inputs {
			p.rtBase = append(p.rtBase, in.RowTracking)
		}
	}
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
	total := p.off[len(inputs)]
	if (!subset && total != int64(len(order))) || int64(len(order)) > total {
		return nil, fmt.Errorf("permute: the order has %d rows, the inputs %d live rows", len(order), total)
	}
	p.workers = opts.Parallelism
	if p.workers <= 0 {
		p.workers = runtime.GOMAXPROCS(0)
	}
	// Row groups of about RowGroupBytes, estimated from the inputs' stored bytes per row, and of at least
	// two dictionary probes (the encoder decides between dictionary and PLAIN after probeValues values).
	target := opts.Writer.RowGroupBytes
	if target <= 0 {
		target = DefaultRewriteRowGroupBytes
	}
	groupRows := 1 << 20
	if len(order) > 0 && storedBytes > 0 {
		groupRows = max(2*cfg.dict.probeValues, int(float64(target)/(float64(storedBytes)/float64(len(order)))))
	}
	if opts.Writer.RowGroupRows > 0 {
		groupRows = min(groupRows, int(opts.Writer.RowGroupRows))
	}
	if err := p.plan(order, starts, groupRows, total); err != nil {
		return nil, fmt.Errorf("permute: %w", err)
	}
	if err := p.decode(ctx, inputs); err != nil {
		return nil, fmt.Errorf("permute: %w", err)
	}
	res, err := p.encode(ctx)
	if err != nil {
		return res, fmt.Errorf("permute: %w", err)
	}
	if !subset {
		for i := range inputs {
			res.Deleted += p.files[i].NumRows() - (p.off[i+1] - p.off[i])
		}
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
	create  func(int) (storage.Writer, error)
	workers int
	// rtLeaf maps the materialized row-tracking columns' leaves to what they hold, rtBase is each
	// input's row-tracking base (both nil when RewriteOptions.RowTracking is not set).
	rtLeaf map[int]rtKind
	rtBase []RowTrackingBase

	groups   [][]int       // output → its row groups (indexes into the segments)
	groupOf  []uint32      // global live row → its row group
	rows     [][]int32     // [input][row group] → the input's rows in it, to size segments up front
	segments [][][]segment // [input][leaf][row group]
}

// skipRow marks a live row that PermuteSubset leaves out.
const skipRow = ^uint32(0)

// segment holds the values one input contributes to one leaf of one output row group, in the
// output's physical representation: levels (nil when the leaf has none) and the defined values.
type segment struct {
	n          int
	defs, reps []byte
	vals       valueSlices
	sized      bool // its slices were allocated for the rows it will receive (scatter.segment)
}

// plan assigns every live row of the order to its output row group; the others get skipRow. It runs
// between the caller's sort and the decode, on the critical path with nothing to overlap it, so its
// passes over the rows are split among the workers: the row groups' rows are assigned with a
// compare-and-swap each, which finds a row that appears twice without a race.
func (p *permuter) plan(order []uint32, starts []int, groupRows int, total int64) error {
	type span struct{ lo, hi int } // a row group's ranks
	var spans []span
	p.groups = make([][]int, len(starts))
	for k, lo := range starts {
		hi := len(order)
		if k+1 < len(starts) {
			hi = starts[k+1]
		}
		if lo > hi || lo < 0 || hi > len(order) {
			return fmt.Errorf("output %d starts at %d, after the next one (%d)", k, lo, hi)
		}
		for a := lo; a < hi; a += groupRows {
			p.groups[k] = append(p.groups[k], len(spans))
			spans = append(spans, span{a, min(hi, a+groupRows)})
		}
	}
	n := len(spans)
	p.groupOf = make([]uint32, total)
	chunk := int64(max(1, (len(p.groupOf)+p.workers-1)/p.workers))
	var g errgroup.Group
	for lo := int64(0); lo < total; lo += chunk {
		g.Go(func() error {
			fill := p.groupOf[lo:min(total, lo+chunk)]
			for i := range fill {
				fill[i] = skipRow
			}
			return nil
		})
	}
	_ = g.Wait() // the fills return no error
	g.SetLimit(p.workers)
	for grp, sp := range spans {
		g.Go(func() error {
			for _, row := range order[sp.lo:sp.hi] {
				if int64(row) >= total || !atomic.CompareAndSwapUint32(&p.groupOf[row], skipRow, uint32(grp)) {
					return fmt.Errorf("row %d is not a live row, or appears twice", row)
				}
			}
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	p.rows = make([][]int32, len(p.files))
	for i := range p.rows {
		g.Go(func() error {
			rows := make([]int32, n)
			for _, grp := range p.groupOf[p.off[i]:p.off[i+1]] {
				if grp != skipRow {
					rows[grp]++
				}
			}
			p.rows[i] = rows
			return nil
		})
	}
	_ = g.Wait() // the counts return no error
	p.segments = make([][][]segment, len(p.files))
	for i := range p.segments {
		p.segments[i] = make([][]segment, len(p.out.leaves))
		for j := range p.segments[i] {
			p.segments[i][j] = make([]segment, n)
		}
	}
	return nil
}

// decode reads every leaf of every input, several columns at once, scattering each record to the
// segment of its row group.
func (p *permuter) decode(ctx context.Context, inputs []RewriteInput) error {
	bufSize := min(128<<10, max(16<<10, (4<<20)/max(len(p.out.leaves), 1)))
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.workers)
	for i, in := range inputs {
		for j, leaf := range p.out.leaves {
			g.Go(func() error {
				sc := &scatter{leaf: leaf, segs: p.segments[i][j], groupOf: p.groupOf[p.off[i]:p.off[i+1]], groupRows: p.rows[i]}
				l := &lane{leaf: leaf, files: p.files, plans: p.plans, rb: newReadBuffers(bufSize), input: -1, sink: sc.capture}
				if kind, ok := p.rtLeaf[j]; ok {
					l.rt = &rtFill{kind: kind, base: p.rtBase}
				}
				src := &p.plans[i].sources[j]
				f := p.files[i]
				for s := range wholeRowGroups(i, f, in.Deleted) {
					if src.missing {
						var err error
						if l.rt != nil {
							err = l.rt.computed(s, f.rowGroupStart[s.rg], leaf, l.write)
						} else {
							err = l.nulls(s.live)
						}
						if err != nil {
							return fmt.Errorf("input %d, row group %d, column %s: %w", i, s.rg, joinPath(leaf.path), err)
						}
						continue
					}
					if err := l.copySlice(gctx, s, src); err != nil {
						return fmt.Errorf("input %d, row group %d, column %s: %w", i, s.rg, joinPath(leaf.path), err)
					}
				}
				if sc.err != nil {
					return fmt.Errorf("input %d, column %s: %w", i, joinPath(leaf.path), sc.err)
				}
				if sc.rows != len(sc.groupOf) {
					return fmt.Errorf("input %d, column %s: decoded %d rows, expected %d", i, joinPath(leaf.path), sc.rows, len(sc.groupOf))
				}
				return nil
			})
		}
	}
	return g.Wait()
}

// encode writes the outputs, several at once.
func (p *permuter) encode(ctx context.Context) (*RewriteResult, error) {
	res := &RewriteResult{Files: make([]*WriteResult, len(p.groups))}
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(p.workers)
	encs := sync.Pool{New: func() any {
		e := make([]*columnEncoder, len(p.out.leaves))
		for j, leaf := range p.out.leaves {
			e[j] = newColumnEncoder(leaf, p.cfg)
		}
		return &e // a pointer: putting a slice into a Pool allocates
	}}
	for k := range p.groups {
		g.Go(func() error {
			e := encs.Get().(*[]*columnEncoder)
			wr, err := p.writeOutput(gctx, k, *e)
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

// writeOutput writes output k from its row groups' segments, releasing them as it goes.
func (p *permuter) writeOutput(ctx context.Context, k int, encs []*columnEncoder) (*WriteResult, error) {
	w, err := p.create(k)
	if err != nil {
		return nil, fmt.Errorf("create output %d: %w", k, err)
	}
	fw := newFileWriter(w, p.out, p.cfg.codecID)
	fw.kv = keyValues(p.opts.Writer.KeyValueMetadata)
	stats := make([]leafStats, len(p.out.leaves))
	var defined levelRuns
	fail := func(err error) (*WriteResult, error) {
		_ = w.Abort() // the write error is the one to report
		return nil, err
	}
	for _, grp := range p.groups[k] {
		if err := ctx.Err(); err != nil {
			return fail(err)
		}
		fw.beginRowGroup()
		for j, leaf := range p.out.leaves {
			for i := range p.files {
				seg := &p.segments[i][j][grp]
				batch := columnBatch{n: seg.n, defs: seg.defs, reps: seg.reps, valueSlices: seg.vals}
				if leaf.maxDef == 0 {
					batch.defs = nil
				} else if batch.defs == nil {
					batch.defs = defined.run(byte(leaf.maxDef), seg.n) // no nulls: the segment kept no levels
				}
				if err := encs[j].write(&batch); err != nil {
					return fail(err)
				}
				*seg = segment{}
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

// levelRuns hands out runs of one definition level, for segments without nulls (scatter.level); the
// encoder copies levels, so one buffer per level serves every segment.
type levelRuns map[byte][]byte

func (r *levelRuns) run(level byte, n int) []byte {
	if *r == nil {
		*r = levelRuns{}
	}
	buf := (*r)[level]
	if len(buf) < n {
		buf = bytes.Repeat([]byte{level}, n)
		(*r)[level] = buf
	}
	return buf[:n]
}
