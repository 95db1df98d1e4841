package tabletest

import (
	"context"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// SortedRows scans a snapshot and returns its rows in canonical form, sorted: two snapshots hold the same row
// multiset exactly when their SortedRows are equal. It is how tests prove that a rewrite kept every row.
func SortedRows(ctx context.Context, snap *delta.Snapshot) ([]string, error) {
	scan, err := table.NewScan(snap, table.ScanOptions{})
	if err != nil {
		return nil, err
	}
	var rows []string
	if _, err := scan.Run(ctx, func(batch []types.Struct) error {
		for _, r := range batch {
			rows = append(rows, table.CanonicalRow(r))
		}
		return nil
	}); err != nil {
		return nil, err
	}
	slices.Sort(rows)
	return rows, nil
}
