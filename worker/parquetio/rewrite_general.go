package parquetio

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// generalLane rewrites inputs whose layout differs from the output's through the logical path: rows are
// read as values (which handles legacy lists, missing nested fields, decimal rescaling) and shredded
// again. It is slower than the column lanes and only used for such files.
type generalLane struct {
	schema   *types.StructType
	matchIDs bool
	files    []*File
	deleted  []*roaring64.Bitmap
	shred    *shredder
	encs     []*columnEncoder
	rt       rowTrackingPlan
	input    int
	rows     *RowReader
	pending  []types.Struct // rows read but not yet written
	indexes  []int64        // physical indexes of the pending rows, when row tracking is preserved
}

func newGeneralLane(schema *types.StructType, out *outputSchema, cfg *encoderConfig, files []*File, deleted []*roaring64.Bitmap, matchIDs bool, rt rowTrackingPlan) *generalLane {
	g := &generalLane{schema: schema, matchIDs: matchIDs, files: files, deleted: deleted, shred: newShredder(out), rt: rt, input: -1}
	for _, l := range out.leaves {
		g.encs = append(g.encs, newColumnEncoder(l, cfg))
	}
	return g
}

// run writes the rows of one output row group and returns its chunks, one per leaf.
func (g *generalLane) run(ctx context.Context, grp *outGroup) ([]*encodedChunk, error) {
	for _, s := range grp.slices {
		if err := g.copy(ctx, s); err != nil {
			return nil, fmt.Errorf("input %d: %w", s.input, err)
		}
	}
	chunks := make([]*encodedChunk, len(g.encs))
	for i, e := range g.encs {
		c, err := e.finishChunk()
		if err != nil {
			return nil, err
		}
		chunks[i] = c
	}
	return chunks, nil
}

// copy writes the next s.live rows of input s.input. Slices of one input arrive in file order, so one
// RowReader per input serves them all.
func (g *generalLane) copy(ctx context.Context, s rgSlice) error {
	if g.input != s.input {
		if len(g.pending) > 0 {
			return fmt.Errorf("internal error: %d rows of input %d were not written", len(g.pending), g.input)
		}
		if g.rows != nil {
			g.rows.Close()
		}
		rr, err := g.files[s.input].Rows(ctx, g.schema, ReadOptions{MatchFieldIDs: g.matchIDs, Deleted: g.deleted[s.input], BatchSize: shredBatch, WithRowIndex: g.rt.base != nil})
		if err != nil {
			return err
		}
		g.rows, g.input = rr, s.input
	}
	left := s.live
	for left > 0 {
		if len(g.pending) == 0 {
			b, err := g.rows.Next()
			if errors.Is(err, io.EOF) {
				return fmt.Errorf("the file ended %d rows early", left)
			}
			if err != nil {
				return err
			}
			g.pending, g.indexes = b.Rows, b.RowIndexes
		}
		n := int(min(int64(len(g.pending)), left))
		for k, r := range g.pending[:n] {
			if g.rt.base != nil {
				if err := g.rt.base[s.input].preserve(r, g.rt.id, g.rt.version, g.indexes[k]); err != nil {
					return err
				}
			}
			if err := g.shred.row(r); err != nil {
				return err
			}
		}
		for i, e := range g.encs {
			if err := e.write(&g.shred.batches[i]); err != nil {
				return err
			}
			g.shred.batches[i].reset()
		}
		g.pending = g.pending[n:]
		if g.indexes != nil {
			g.indexes = g.indexes[n:]
		}
		left -= int64(n)
	}
	return nil
}

func (g *generalLane) close() {
	if g.rows != nil {
		g.rows.Close()
	}
}
