package optimize

import (
	"context"
	"fmt"
	"sync"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
)

// footerParallelism bounds the footers read at once: each is one small ranged read, so this is
// request latency, not CPU.
const footerParallelism = 16

// footerRowCounts reads, from the Parquet footer, the physical row count of every file the plan may
// rewrite whose add carries no numRecords statistic (old Spark writers with stats collection off; an
// overwrite can leave such a file with zero rows). Planning needs the counts to know a file is empty
// (a lone empty file is worth removing), the rewrite checks its output against them, and the commit's
// row check uses them through the removes (AddFile.WithNumRecords). Tables with statistics pay nothing.
func footerRowCounts(ctx context.Context, snap *delta.Snapshot, cfg planConfig) (map[delta.FileKey]int64, error) {
	loc := snap.Table().Location()
	var need []*delta.AddFile
	for _, f := range snap.Files() {
		if cfg.include != nil && !cfg.include(f) || !isCandidate(f, cfg) {
			continue
		}
		if _, ok := delta.NumRecords(f.Stats); ok {
			continue
		}
		if _, err := delta.ObjectKey(loc, f.Path); err != nil {
			continue // outside the table: the planner leaves it alone
		}
		need = append(need, f)
	}
	if len(need) == 0 {
		return nil, nil
	}
	counts := make([]int64, len(need))
	errs := make([]error, len(need))
	sem := make(chan struct{}, footerParallelism)
	var wg sync.WaitGroup
	for i, f := range need {
		sem <- struct{}{}
		wg.Go(func() {
			defer func() { <-sem }()
			counts[i], errs[i] = footerRows(ctx, snap, f)
		})
	}
	wg.Wait()
	out := make(map[delta.FileKey]int64, len(need))
	for i, f := range need {
		if errs[i] != nil {
			return nil, errs[i]
		}
		out[f.Key()] = counts[i]
	}
	return out, nil
}

// footerRows opens one data file's footer and returns its physical row count.
func footerRows(ctx context.Context, snap *delta.Snapshot, f *delta.AddFile) (int64, error) {
	loc := snap.Table().Location()
	key, err := delta.ObjectKey(loc, f.Path)
	if err != nil {
		return 0, fmt.Errorf("table %s: %w", loc, err)
	}
	r, err := snap.Table().Store().Open(ctx, key)
	if err != nil {
		return 0, fmt.Errorf("table %s: open %s to count its rows (its add has no numRecords statistic): %w", loc, key, err)
	}
	defer r.Close()
	pf, err := parquetio.Open(ctx, r)
	if err != nil {
		return 0, fmt.Errorf("table %s: data file %s: %w", loc, key, err)
	}
	return pf.NumRows(), nil
}

// rowCount is a file's physical row count: its numRecords statistic, else the count its footer gave.
func (cfg planConfig) rowCount(f *delta.AddFile) (int64, bool) {
	if n, ok := delta.NumRecords(f.Stats); ok {
		return n, true
	}
	n, ok := cfg.footerRows[f.Key()]
	return n, ok
}
