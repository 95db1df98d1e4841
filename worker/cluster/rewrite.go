package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"math"
	"math/rand/v2"
	"runtime"
	"sort"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// sampleSize is the number of keys per column behind the range bounds: 100 per range id, far more
// than Spark's RangePartitioner draws, and cheap since keys are plain integers.
const sampleSize = 100 * DefaultRanges

// writeBatch is the number of rows handed to a Parquet writer at once.
const writeBatch = 1024

// rewriteJob clusters the rows of one set of inputs into new files ordered along the curve:
//
//  1. read the key columns only, normalize them to uint64 keys (keys.go), sample them, and compute
//     every live row's curve position;
//  2. radix-sort (position, row) pairs, cut the order into outputs of the target size, and remember
//     each row's rank;
//  3. write the outputs with parquetio.Permute, column by column (permute.go), in waves of outputs
//     that fit the memory budget (waves.go); preserved row ids are computed on the way;
//  4. only when an input needs the logical reader (legacy layouts, ErrPermuteUnsupported): read every
//     row and place it at its rank, in memory for the first wave of ranks that fits the budget and in
//     a local spill file per later wave (spill.go), then write the outputs wave by wave.
//
// No row is ever compared with another: the cost is two reads (one per wave), and one write.
type rewriteJob struct {
	l        *layout
	ins      []*input
	out      *table.RewriteOutputs
	zorder   bool
	opts     Options
	progress func(string)
	// align cuts the outputs along the regions of the table's base layout (regions.go); nil: by size.
	align *alignment
	// groupShift is where a row's group id starts in its sort key, outGroups each output's group
	// (aligned rewrites only).
	groupShift int
	outGroups  []uint64

	off   []int64 // global row number of each input's first live row
	total int64
}

// rewriteStats describe a finished rewrite.
type rewriteStats struct {
	adds         []*delta.AddFile
	rows         int64
	spilledBytes int64
	waves        int
}

func (j *rewriteJob) say(format string, args ...any) {
	if j.progress != nil {
		j.progress(fmt.Sprintf(format, args...))
	}
}

func (j *rewriteJob) parallelism() int {
	if j.opts.Parallelism > 0 {
		return j.opts.Parallelism
	}
	return runtime.GOMAXPROCS(0)
}

func (j *rewriteJob) run(ctx context.Context) (*rewriteStats, error) {
	j.off = make([]int64, len(j.ins)+1)
	for i, in := range j.ins {
		j.off[i+1] = j.off[i] + in.live
	}
	j.total = j.off[len(j.ins)]
	if j.total > math.MaxUint32 {
		return nil, fmt.Errorf("%d rows in one clustering run exceed the 2^32 this implementation sorts at once; cluster incrementally", j.total)
	}
	st := &rewriteStats{rows: j.total}
	if j.total == 0 {
		return st, nil
	}
	sorted, err := j.positions(ctx)
	if err != nil {
		return nil, err
	}
	j.say("computed %d curve positions", len(sorted))
	sortKeys(sorted, j.parallelism())
	starts, order := j.cut(sorted)
	sorted = nil //nolint:ineffassign,wastedassign // the pairs are the largest allocation so far
	// The columnar sort, unless an input needs the logical reader (ErrPermuteUnsupported).
	var adds []*delta.AddFile
	if j.columnarFits() {
		adds, err = j.permute(ctx, order, starts)
		st.waves = 1
	} else {
		adds, st.waves, st.spilledBytes, err = j.permuteWaves(ctx, order, starts)
	}
	if err == nil {
		st.adds = adds
		j.tagOutputs(adds)
		j.say("wrote %d/%d files", len(adds), len(adds))
		if rewriteHook != nil {
			rewriteHook(st.waves, st.spilledBytes)
		}
		return st, nil
	}
	if !errors.Is(err, parquetio.ErrPermuteUnsupported) {
		return nil, err
	}
	j.say("falling back to logical rows: %v", err)
	fileOf := func(row uint32) int {
		return sort.Search(len(j.ins), func(i int) bool { return j.off[i+1] > int64(row) })
	}
	memRow := make([]float64, len(j.ins))
	for i, in := range j.ins {
		memRow[i] = in.memRow
	}
	waves := j.planWaves(order, fileOf, memRow)
	rank := make([]uint32, j.total)
	for r, row := range order {
		rank[row] = uint32(r)
	}
	order = nil //nolint:ineffassign // release it before the rows arrive
	st.waves = len(waves)
	j.say("sorted %d rows into %d files (%d wave(s) in memory)", j.total, len(starts), len(waves))

	w := newOutputWriters(j, starts)
	defer w.abortOpen()
	var sp *spiller
	if len(waves) > 1 {
		if sp, err = newSpiller(j.opts.TempDir, j.l.schema, len(waves), j.opts.MemoryLimit); err != nil {
			return nil, err
		}
		defer sp.remove()
	}
	waveEnd := func(i int) int {
		if i+1 < len(waves) {
			return waves[i+1]
		}
		return int(j.total)
	}
	waveOf := func(r int) int { return sort.SearchInts(waves, r+1) - 1 }
	first := make([]types.Struct, waveEnd(0))
	if err := j.readRows(ctx, rank, first, waveEnd(0), sp, waveOf); err != nil {
		return nil, err
	}
	if sp != nil {
		if err := sp.finish(); err != nil {
			return nil, err
		}
		st.spilledBytes = sp.bytes
	}
	if err := w.writeRange(ctx, first, 0, 0, waveEnd(0)); err != nil {
		return nil, err
	}
	first = nil //nolint:ineffassign // let the first wave go before the next is loaded
	for i := 1; i < len(waves); i++ {
		rows, err := sp.load(ctx, i, waves[i], waveEnd(i)-waves[i])
		if err != nil {
			return nil, err
		}
		if err := w.writeRange(ctx, rows, waves[i], waves[i], waveEnd(i)); err != nil {
			return nil, err
		}
	}
	st.adds = w.adds
	j.tagOutputs(w.adds)
	if rewriteHook != nil {
		rewriteHook(st.waves, st.spilledBytes)
	}
	return st, nil
}

// cut splits the sorted rows into outputs (cutOutputs) and returns, with each output's first rank,
// the row numbers in rank order: from here on only those matter. The cut is a running sum in rank
// order, so it stays serial (its float additions must happen in the same order to cut the same
// files); the row numbers are copied out beside it.
func (j *rewriteJob) cut(sorted []rowKey) ([]int, []uint32) {
	diskRow := make([]float64, len(j.ins))
	for i, in := range j.ins {
		diskRow[i] = in.diskRow
	}
	var starts []int
	done := make(chan struct{})
	go func() {
		defer close(done)
		if j.align != nil {
			starts, j.outGroups = cutGroups(sorted, diskRow, j.out.Options().TargetFileBytes, j.groupShift)
			return
		}
		starts = cutOutputs(sorted, diskRow, j.out.Options().TargetFileBytes)
	}()
	order := make([]uint32, len(sorted))
	parallelChunks(splitChunks(len(sorted), max(1, j.parallelism()-1)), func(_, lo, hi int) {
		for r, k := range sorted[lo:hi] {
			order[lo+r] = k.row
		}
	})
	<-done
	return starts, order
}

// tagOutputs gives each output of an aligned rewrite its region tags.
func (j *rewriteJob) tagOutputs(adds []*delta.AddFile) {
	if j.align == nil {
		return
	}
	for k, add := range adds {
		if add.Tags == nil {
			add.Tags = map[string]string{}
		}
		maps.Copy(add.Tags, j.align.tags(j.outGroups[k]))
	}
}

// rewriteHook lets tests observe how a rewrite used memory and disk.
var rewriteHook func(waves int, spilledBytes int64)

// positions reads the key columns of every input and returns each live row's curve position.
func (j *rewriteJob) positions(ctx context.Context) ([]rowKey, error) {
	dims := len(j.l.keyPath)
	keys := make([][]uint64, len(j.ins))
	store := j.l.snap.Table().Store()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(j.parallelism())
	for i, in := range j.ins {
		g.Go(func() error {
			if k, err := j.columnKeys(gctx, store, in); err == nil {
				keys[i] = k
				return nil
			} else if !errors.Is(err, parquetio.ErrPermuteUnsupported) {
				return err
			}
			k := make([]uint64, 0, in.live*int64(dims))
			err := j.readFile(gctx, store, in, j.l.keySchema, false, func(rows []types.Struct, _ []int64) error {
				for _, row := range rows {
					for c := range dims {
						k = append(k, normalize(j.l.keyValue(row, c)))
					}
				}
				return nil
			})
			if err != nil {
				return err
			}
			if int64(len(k)) != in.live*int64(dims) {
				return fmt.Errorf("data file %s: read %d rows, its statistics and deletion vector leave %d", in.add.Path, len(k)/dims, in.live)
			}
			keys[i] = k
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	// A deterministic sample of rows (the same input gives the same ranges, whatever the read order).
	samplers := make([]*keySampler, dims)
	for c := range samplers {
		samplers[c] = newKeySampler(sampleSize, 1)
	}
	rng := rand.New(rand.NewPCG(uint64(j.total), 0x5eed))
	n := min(int64(sampleSize), j.total)
	for range n {
		g := rng.Int64N(j.total)
		i := sort.Search(len(j.ins), func(i int) bool { return j.off[i+1] > g })
		for c := range dims {
			samplers[c].add(keys[i][(g-j.off[i])*int64(dims)+int64(c)])
		}
	}
	pos, err := newPositioner(samplers, j.zorder)
	if err != nil {
		return nil, err
	}
	pos.curve = tabulate(pos.curve, j.total, j.parallelism())
	// An aligned rewrite sorts by group first: the group id goes above the curve position, whose low
	// bits give way if both do not fit in 64 (the order within a group coarsens, nothing else).
	var drop uint
	if j.align != nil {
		j.groupShift = pos.width
		if over := pos.width + j.align.groupBits() - 64; over > 0 {
			j.groupShift, drop = pos.width-over, uint(over)
		}
	}
	out := make([]rowKey, j.total)
	g, _ = errgroup.WithContext(ctx)
	g.SetLimit(j.parallelism())
	for i, k := range keys {
		g.Go(func() error {
			point := make([]uint32, dims)
			for r := int64(0); r < j.ins[i].live; r++ {
				g := j.off[i] + r
				rk := k[r*int64(dims) : (r+1)*int64(dims)]
				p := pos.position(rk, point)
				if j.align != nil {
					p = j.align.group(i, rk)<<j.groupShift | p>>drop
				}
				out[g] = rowKey{pos: p, row: uint32(g), file: uint32(i)}
			}
			keys[i] = nil
			return nil
		})
	}
	if err := g.Wait(); err != nil {
		return nil, err
	}
	return out, nil
}

// columnKeys reads an input's keys at column speed (parquetio.SortKeys), interleaved per row;
// ErrPermuteUnsupported when a key is nested or the file needs the logical reader.
func (j *rewriteJob) columnKeys(ctx context.Context, store storage.Store, in *input) ([]uint64, error) {
	for c, kp := range j.l.keyPath {
		if len(kp) != 1 || kp[0] != c {
			return nil, parquetio.ErrPermuteUnsupported
		}
	}
	r, err := store.Open(ctx, in.key)
	if err != nil {
		return nil, fmt.Errorf("open data file %s: %w", in.add.Path, err)
	}
	defer r.Close()
	cols, err := parquetio.SortKeys(ctx, parquetio.RewriteInput{File: r, Deleted: in.deleted}, j.l.keySchema, j.l.matchIDs)
	if err != nil {
		return nil, fmt.Errorf("data file %s: %w", in.add.Path, err)
	}
	dims := len(cols)
	k := make([]uint64, in.live*int64(dims))
	for c, col := range cols {
		if int64(len(col)) != in.live {
			return nil, fmt.Errorf("data file %s: read %d keys, its statistics and deletion vector leave %d rows", in.add.Path, len(col), in.live)
		}
		for r, v := range col {
			k[r*dims+c] = v
		}
	}
	return k, nil
}

// planWaves splits the ranks into waves whose rows fit 40% of the memory limit (the rest is the spill
// writers' buffers and the garbage collector's headroom); the keys and ranks held meanwhile count
// against the limit too, but a
// wave gets at least an eighth of it (with more rows than the limit can index, it is exceeded by the
// keys, never by the rows).
func (j *rewriteJob) planWaves(order []uint32, fileOf func(uint32) int, memRow []float64) []int {
	budget := max(0.4*float64(j.opts.MemoryLimit)-float64(j.total)*24, float64(j.opts.MemoryLimit)/8)
	waves := []int{0}
	var acc float64
	for r, row := range order {
		b := memRow[fileOf(row)]
		if acc > 0 && acc+b > budget {
			waves = append(waves, r)
			acc = 0
		}
		acc += b
	}
	return waves
}

// readRows reads every column of every input and places each row at its rank: ranks below firstEnd in
// first, the others in their wave's spill file.
func (j *rewriteJob) readRows(ctx context.Context, rank []uint32, first []types.Struct, firstEnd int, sp *spiller, waveOf func(int) int) error {
	store := j.l.snap.Table().Store()
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(j.parallelism())
	var mu sync.Mutex
	var done int
	for i, in := range j.ins {
		g.Go(func() error {
			next := j.off[i]
			var route *spillRouter
			if sp != nil {
				route = sp.router()
			}
			err := j.readFile(gctx, store, in, j.l.schema, j.l.rtID >= 0, func(rows []types.Struct, idx []int64) error {
				for k, row := range rows {
					if j.l.rtID >= 0 {
						if err := j.preserveRowTracking(in.add, row, idx[k]); err != nil {
							return err
						}
					}
					r := int(rank[next])
					next++
					if r < firstEnd {
						first[r] = detach(row)
						continue
					}
					if err := route.add(waveOf(r), row, r); err != nil {
						return err
					}
				}
				return nil
			})
			if err == nil && route != nil {
				err = route.flush()
			}
			if err == nil && next != j.off[i+1] {
				err = fmt.Errorf("data file %s: read %d rows, expected %d", in.add.Path, next-j.off[i], in.live)
			}
			if err != nil {
				return err
			}
			mu.Lock()
			done++
			j.say("read %d/%d files", done, len(j.ins))
			mu.Unlock()
			return nil
		})
	}
	return g.Wait()
}

// detach copies a row's containers: the reader carves rows out of shared arena chunks, and one row kept
// for the first wave would otherwise keep its whole chunk, and every value in it, alive.
func detach(row types.Struct) types.Struct {
	out := make(types.Struct, len(row))
	for i, v := range row {
		out[i] = detachValue(v)
	}
	return out
}

func detachValue(v types.Value) types.Value {
	switch x := v.(type) {
	case types.Struct:
		return detach(x)
	case types.Array:
		out := make(types.Array, len(x))
		for i, e := range x {
			out[i] = detachValue(e)
		}
		return out
	case types.Map:
		out := make(types.Map, len(x))
		for i, e := range x {
			out[i] = types.MapEntry{Key: detachValue(e.Key), Value: detachValue(e.Value)}
		}
		return out
	}
	return v
}

// preserveRowTracking writes a row's stable row id and row commit version into the materialized
// columns, so that they survive the move to a new file (PROTOCOL.md §Row Tracking).
func (j *rewriteJob) preserveRowTracking(f *delta.AddFile, row types.Struct, index int64) error {
	id, err := delta.PreservedRowID(f, index, row[j.l.rtID])
	if err != nil {
		return fmt.Errorf("file %s: %w", f.Path, err)
	}
	ver, err := delta.PreservedRowCommitVersion(f, row[j.l.rtVersion])
	if err != nil {
		return fmt.Errorf("file %s: %w", f.Path, err)
	}
	row[j.l.rtID], row[j.l.rtVersion] = id, ver
	return nil
}

// readFile streams the live rows of one input read with schema.
func (j *rewriteJob) readFile(ctx context.Context, store storage.Store, in *input, schema *types.StructType, withIndex bool, fn func([]types.Struct, []int64) error) error {
	pf, r, err := in.open(ctx, store)
	if err != nil {
		return err
	}
	defer r.Close()
	rr, err := pf.Rows(ctx, schema, parquetio.ReadOptions{MatchFieldIDs: j.l.matchIDs, Deleted: in.deleted, WithRowIndex: withIndex})
	if err != nil {
		return fmt.Errorf("data file %s: %w", in.add.Path, err)
	}
	defer rr.Close()
	for {
		b, err := rr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return fmt.Errorf("data file %s: %w", in.add.Path, err)
		}
		if err := fn(b.Rows, b.RowIndexes); err != nil {
			return err
		}
	}
}
