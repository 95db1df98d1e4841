package table

import (
	"context"
	"fmt"
	"slices"
	"sync"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// RewriteOutputs names, creates and describes the output files of one parquetio.Rewrite of a bin of
// files that share partition values (compaction, clustering): the create(i) factory, the rewrite
// options matching the table (physical schema without partition columns, field ids in id mode, codec,
// target size, row-tracking preservation), and the AddFiles for the commit.
type RewriteOutputs struct {
	l   *layout
	ctx context.Context
	pv  delta.PartitionValues
	dir string
	// schema is the layout's file schema plus the materialized row-tracking columns named by rt when
	// the rewrite must preserve row ids (rt nil otherwise).
	schema *types.StructType
	rt     *parquetio.RowTrackingColumns

	mu   sync.Mutex
	keys []string // created, by output index
}

// NewRewriteOutputs prepares the outputs of a bin whose files all carry partition values pv (copied
// verbatim to the new files, so a value keeps the exact serialization the table already uses).
// DataChange in opts is normally false for rewrites.
func NewRewriteOutputs(ctx context.Context, snap *delta.Snapshot, pv delta.PartitionValues, opts WriteOptions) (*RewriteOutputs, error) {
	l, err := newLayout(snap, opts)
	if err != nil {
		return nil, err
	}
	schema, rt, err := snap.RewriteFileSchema()
	if err != nil {
		return nil, err
	}
	return &RewriteOutputs{l: l, ctx: ctx, pv: slices.Clone(pv), dir: partitionDir(snap, pv), schema: schema, rt: rt}, nil
}

// Options returns the parquetio.RewriteOptions for the table; callers may adjust Parallelism.
func (o *RewriteOutputs) Options() parquetio.RewriteOptions {
	w := o.l.writer
	w.RowGroupBytes = 0 // the rewrite's own default (DefaultRewriteRowGroupBytes)
	return parquetio.RewriteOptions{
		Schema:          o.schema,
		MatchFieldIDs:   o.l.snap.ColumnMappingMode() == delta.ColumnMappingID,
		Writer:          w,
		TargetFileBytes: o.l.target,
		RowTracking:     o.rt,
	}
}

// RowTrackingPreserved reports whether Options preserves row ids, which the commit must declare
// (delta.TxnOptions.RowTrackingPreserved).
func (o *RewriteOutputs) RowTrackingPreserved() bool { return o.rt != nil }

// Create is the create(i) factory of parquetio.Rewrite.
func (o *RewriteOutputs) Create(i int) (storage.Writer, error) {
	key := o.dir + delta.DataFileName(i, o.l.writer.Codec)
	w, err := o.l.snap.Table().Store().Create(o.ctx, key)
	if err != nil {
		return nil, fmt.Errorf("create %s: %w", key, err)
	}
	o.mu.Lock()
	defer o.mu.Unlock()
	for len(o.keys) <= i {
		o.keys = append(o.keys, "")
	}
	o.keys[i] = key
	return w, nil
}

// AddFiles describes the completed outputs of res for the commit: one AddFile per output, in output
// order, with statistics, the bin's partition values and the configured dataChange flag.
func (o *RewriteOutputs) AddFiles(res *parquetio.RewriteResult) ([]*delta.AddFile, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if len(res.Files) > len(o.keys) {
		return nil, fmt.Errorf("rewrite reported %d outputs but %d were created", len(res.Files), len(o.keys))
	}
	adds := make([]*delta.AddFile, 0, len(res.Files))
	for i, f := range res.Files {
		add, err := o.l.addFile(o.keys[i], o.pv, f)
		if err != nil {
			return nil, err
		}
		adds = append(adds, add)
	}
	return adds, nil
}

// Abort deletes every output created so far (completed or not): call it when the rewrite failed or
// its commit definitely did not happen.
func (o *RewriteOutputs) Abort(ctx context.Context) error {
	o.mu.Lock()
	keys := slices.DeleteFunc(slices.Clone(o.keys), func(k string) bool { return k == "" })
	o.keys = nil
	o.mu.Unlock()
	return deleteKeys(ctx, o.l.snap.Table().Store(), keys)
}
