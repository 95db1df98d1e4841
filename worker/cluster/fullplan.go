package cluster

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"golang.org/x/sync/errgroup"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/layoutstats"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// FullPlan is the layout an OPTIMIZE FULL of a snapshot would write, computed from the clustering keys
// alone: the files FULL selects, in its order, their curve positions, sort and cut into outputs are
// FULL's own (rewriteJob.positions, sortKeys, cutOutputs), so the outputs hold exactly the rows FULL's
// would. Only the data columns are never read or written: a reference for what FULL reaches that costs
// a read of the key columns, not a rewrite of the table.
type FullPlan struct {
	// Columns are the clustering columns (logical names), Files the outputs, Rows the rows in them.
	Columns []string
	Files   int
	Rows    int64
	// Bounds[c][k] is output k's range on column c, as its statistics would give it: exact for
	// integers and dates, to the millisecond for timestamps (Delta's statistics truncate them), and
	// by the order-preserving 64-bit key for other types (the first 8 bytes of strings). An output
	// whose values on c are all null has none.
	Bounds [][]layoutstats.Bounds
}

// Quality is the skipping quality of the planned layout, per clustering column (layoutstats.Quality
// over the outputs' bounds, as table.ClusteringQuality measures the files FULL writes).
func (p *FullPlan) Quality() ([]layoutstats.ColumnQuality, error) {
	out := make([]layoutstats.ColumnQuality, len(p.Columns))
	for c, name := range p.Columns {
		q, err := layoutstats.Quality(name, p.Bounds[c])
		if err != nil {
			return nil, err
		}
		out[c] = q
	}
	return out, nil
}

// PlanFull plans an OPTIMIZE FULL of snap with opts (its target size and parallelism; Full is
// implied) without writing anything.
func PlanFull(ctx context.Context, snap *delta.Snapshot, opts Options) (*FullPlan, error) {
	opts.Full = true
	opts, err := prepareRewrite(snap, opts)
	if err != nil {
		return nil, err
	}
	keys, clustered, err := snap.ClusteringColumns()
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", snap.Table().Location(), err)
	}
	if !clustered || len(keys) == 0 {
		return nil, fmt.Errorf("table %s has no clustering columns to plan a FULL by; set them with `deltakeeper alter --cluster-by`", snap.Table().Location())
	}
	logical, _, err := snap.ClusteringColumnsLogical()
	if err != nil {
		return nil, err
	}
	names := logicalNames(logical)
	target, err := targetFileSize(snap, opts)
	if err != nil {
		return nil, err
	}
	sel, err := selectFiles(snap, logical, names, opts, target, nil, nil)
	if err != nil {
		return nil, err
	}
	plan := &FullPlan{Columns: names, Bounds: make([][]layoutstats.Bounds, len(keys))}
	if len(sel.files) == 0 {
		return plan, nil
	}
	cube := newZCube(names, CurveHilbert, target)
	out, err := table.NewRewriteOutputs(ctx, snap, nil, table.WriteOptions{TargetFileSize: target, ClusteringProvider: Provider, Tags: cube.tags()})
	if err != nil {
		return nil, err
	}
	l, err := newLayout(snap, out, keys)
	if err != nil {
		return nil, err
	}
	ins, err := openInputs(ctx, l, sel.files)
	if err != nil {
		return nil, err
	}
	j := &rewriteJob{l: l, ins: ins, out: out, opts: opts}
	j.off = make([]int64, len(ins)+1)
	for i, in := range ins {
		j.off[i+1] = j.off[i] + in.live
	}
	j.total = j.off[len(ins)]
	plan.Rows = j.total
	if j.total == 0 {
		return plan, nil
	}
	outputOf, outputs, err := j.plannedOutputs(ctx)
	if err != nil {
		return nil, err
	}
	plan.Files = outputs
	lo, hi, err := j.outputKeyRanges(ctx, outputOf, outputs)
	if err != nil {
		return nil, err
	}
	for c := range keys {
		t := j.keyType(c)
		plan.Bounds[c] = make([]layoutstats.Bounds, outputs)
		for k := range outputs {
			if lo[k][c] != 0 {
				plan.Bounds[c][k] = statBounds(t, lo[k][c], hi[k][c])
			}
		}
	}
	return plan, nil
}

// plannedOutputs runs FULL's ordering: every row's curve position, the sort, and the cut into outputs;
// it returns each row's output (by global row number) and the number of outputs.
func (j *rewriteJob) plannedOutputs(ctx context.Context) ([]uint32, int, error) {
	sorted, err := j.positions(ctx)
	if err != nil {
		return nil, 0, err
	}
	sortKeys(sorted, j.parallelism())
	diskRow := make([]float64, len(j.ins))
	for i, in := range j.ins {
		diskRow[i] = in.diskRow
	}
	starts := cutOutputs(sorted, diskRow, j.out.Options().TargetFileBytes)
	outputOf := make([]uint32, j.total)
	k := 0
	for r, key := range sorted {
		for k+1 < len(starts) && r >= starts[k+1] {
			k++
		}
		outputOf[key.row] = uint32(k)
	}
	return outputOf, len(starts), nil
}

// outputKeyRanges reads the key columns again and returns every output's smallest and largest
// non-null normalized key per column (0: none).
func (j *rewriteJob) outputKeyRanges(ctx context.Context, outputOf []uint32, outputs int) (lo, hi [][]uint64, err error) {
	dims := len(j.l.keyPath)
	lo, hi = make([][]uint64, outputs), make([][]uint64, outputs)
	for k := range outputs {
		lo[k], hi[k] = make([]uint64, dims), make([]uint64, dims)
	}
	store := j.l.snap.Table().Store()
	var mu sync.Mutex
	g, gctx := errgroup.WithContext(ctx)
	g.SetLimit(j.parallelism())
	for i, in := range j.ins {
		g.Go(func() error {
			keys, err := j.inputKeys(gctx, store, in)
			if err != nil {
				return err
			}
			mu.Lock()
			defer mu.Unlock()
			for r := int64(0); r < in.live; r++ {
				k := outputOf[j.off[i]+r]
				for c := range dims {
					v := keys[r*int64(dims)+int64(c)]
					if v == 0 {
						continue // null: not in the statistics
					}
					if lo[k][c] == 0 || v < lo[k][c] {
						lo[k][c] = v
					}
					hi[k][c] = max(hi[k][c], v)
				}
			}
			return nil
		})
	}
	return lo, hi, g.Wait()
}

// inputKeys is an input's normalized keys, interleaved per row, as positions reads them: at column
// speed, or through the logical reader where that is unsupported.
func (j *rewriteJob) inputKeys(ctx context.Context, store storage.Store, in *input) ([]uint64, error) {
	if k, err := j.columnKeys(ctx, store, in); !errors.Is(err, parquetio.ErrPermuteUnsupported) {
		return k, err
	}
	dims := len(j.l.keyPath)
	k := make([]uint64, 0, in.live*int64(dims))
	err := j.readFile(ctx, store, in, j.l.keySchema, false, func(rows []types.Struct, _ []int64) error {
		for _, row := range rows {
			for c := range dims {
				k = append(k, normalize(j.l.keyValue(row, c)))
			}
		}
		return nil
	})
	if err == nil && int64(len(k)) != in.live*int64(dims) {
		err = fmt.Errorf("data file %s: read %d rows, its statistics and deletion vector leave %d", in.add.Path, len(k)/dims, in.live)
	}
	return k, err
}

// keyType is clustering column c's type.
func (j *rewriteJob) keyType(c int) types.DataType {
	path := j.l.keyPath[c]
	t := j.l.keySchema.Fields[path[0]].Type
	for _, i := range path[1:] {
		t = t.(*types.StructType).Fields[i].Type // newLayout checked the path
	}
	return t
}

// statBounds turns an output's normalized key range into the bounds its statistics would carry.
func statBounds(t types.DataType, lo, hi uint64) layoutstats.Bounds {
	const flip = 1 << 63
	mn, mx := int64(lo^flip), int64(hi^flip)
	if p, ok := t.(*types.PrimitiveType); ok && (p.Name == types.TypeTimestamp || p.Name == types.TypeTimestampNTZ) {
		const ms = 1000 // microseconds
		floor := func(v int64) int64 {
			q := v / ms
			if v%ms < 0 {
				q--
			}
			return q * ms
		}
		// Statistics keep milliseconds: the minimum truncated, the maximum truncated and read back as
		// its upper bound (delta.ColumnStats.MaxUpperBound).
		mn, mx = floor(mn), floor(mx)+ms-1
	}
	return layoutstats.Bounds{Min: mn, Max: mx}
}
