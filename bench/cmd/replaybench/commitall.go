package main

import (
	"context"
	"fmt"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
)

// commitAll measures the commit a compaction of every live file would make (the generated files have
// no data, so nothing is rewritten): one OPTIMIZE transaction on the snapshot that removes all of them
// and adds one output per bin of the dry-run plan, as the committer builds it (removes with their row
// counts). The commit lands as the table's next version; `-only commit-all` prints its key so that the
// caller can delete it and measure again on the same table.
func commitAll(ctx context.Context, snap *delta.Snapshot, run optimizeRun) error {
	start := time.Now()
	rep, err := optimize.RunSnapshot(ctx, snap, optimize.Options{DryRun: true, MaxDeletedRowsRatio: optimize.DefaultMaxDeletedRowsRatio}, nil)
	if err != nil {
		return err
	}
	phase("plan-all", start, map[string]any{"bins": len(rep.Plan.Bins)})
	start = time.Now()
	tx, err := snap.Begin(delta.OpRewrite, delta.TxnOptions{Operation: "OPTIMIZE", NoAutoCheckpoint: true})
	if err != nil {
		return err
	}
	var rows int64
	removes := 0
	for i, b := range rep.Plan.Bins {
		tx.RemoveKeepingRowCounts(false, b.Files...)
		removes += len(b.Files)
		tx.Add(&delta.AddFile{Path: fmt.Sprintf("%s/compacted-%05d.zstd.parquet", b.Dir, i), PartitionValues: b.PartitionValues,
			Size: b.Bytes, ModificationTime: time.Now().UnixMilli(), Stats: fmt.Sprintf(`{"numRecords":%d}`, b.LiveRows)})
		rows += b.LiveRows
	}
	phase("build", start, map[string]any{"removes": removes, "adds": len(rep.Plan.Bins), "rows": rows})
	start = time.Now()
	res, err := tx.Commit(ctx)
	if err != nil {
		return err
	}
	phase("commit-all", start, map[string]any{"version": res.Version, "key": delta.CommitKey(res.Version)})
	return run.profile(rep)
}
