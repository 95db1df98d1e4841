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
// target size, row-group size, row-tracking preservation), and the AddFiles for the commit. It is
// the rewrite half of the one output path (output.go).
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
	dir, err := l.dir(pv)
	if err != nil {
		return nil, err
	}
	return &RewriteOutputs{l: l, ctx: ctx, pv: slices.Clone(pv), dir: dir, schema: schema, rt: rt}, nil
}

// Options returns the parquetio.RewriteOptions for the table; callers may adjust Parallelism.
func (o *RewriteOutputs) Options() parquetio.RewriteOptions {
	return parquetio.RewriteOptions{
		Schema:          o.schema,
		MatchFieldIDs:   o.l.snap.ColumnMappingMode() == delta.ColumnMappingID,
		Writer:          o.l.writer,
		TargetFileBytes: o.l.target,
		RowTracking:     o.rt,
	}
}

// RowTrackingPreserved reports whether Options preserves row ids, which the commit must declare
// (delta.TxnOptions.RowTrackingPreserved).
func (o *RewriteOutputs) RowTrackingPreserved() bool { return o.rt != nil }

// Create is the create(i) factory of parquetio.Rewrite, Permute and PermuteSubset: it starts output
// i (its index across the whole rewrite). A writer of logical rows passes the writer to
// parquetio.NewWriter with Options' Schema and Writer, and describes the file with AddFile.
// Safe for concurrent use, one call per index.
func (o *RewriteOutputs) Create(i int) (storage.Writer, error) {
	key, w, err := o.l.create(o.ctx, o.dir, i)
	if err != nil {
		return nil, err
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

// AddFile describes completed output i for the commit, like AddFiles: for rewrites that write their
// outputs one by one, or in waves whose results number their outputs from the wave's first.
func (o *RewriteOutputs) AddFile(i int, res *parquetio.WriteResult) (*delta.AddFile, error) {
	o.mu.Lock()
	defer o.mu.Unlock()
	if i < 0 || i >= len(o.keys) || o.keys[i] == "" {
		return nil, fmt.Errorf("rewrite reported output %d, which was never created", i)
	}
	return o.l.addFile(o.keys[i], o.pv, res)
}

// Key returns the object key of output i ("" when it was not created).
func (o *RewriteOutputs) Key(i int) string {
	o.mu.Lock()
	defer o.mu.Unlock()
	if i < 0 || i >= len(o.keys) {
		return ""
	}
	return o.keys[i]
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
