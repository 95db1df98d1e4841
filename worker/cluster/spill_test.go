package cluster_test

import (
	"os"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// rowTrackingProps enable row tracking with materialized columns, as Spark does.
var rowTrackingProps = map[string]string{
	"delta.enableRowTracking":                                  "true",
	"delta.rowTracking.materializedRowIdColumnName":            "_row-id-col-test",
	"delta.rowTracking.materializedRowCommitVersionColumnName": "_row-commit-version-col-test",
}

func TestOptimize_StaysWithinTheMemoryLimit(t *testing.T) {
	cases := []struct {
		name                  string
		props                 map[string]string
		limit                 int64
		rows                  int
		logical               bool
		wantWaves, wantSpills bool
	}{
		// Decoded in columns (parquetio.File.PermuteBytes), 150,000 rows take about 9 MB, 400,000
		// about 24 MB: more than the smallest limit's share for them (0.8 × 16 MiB).
		{"fits in memory", nil, 1 << 30, 150_000, false, false, false},
		{"columns decoded again per wave at the smallest limit", nil, 16 << 20, 400_000, false, true, false},
		{"row tracking: row ids computed in every column wave", rowTrackingProps, 16 << 20, 400_000, false, true, false},
		{"row tracking fits in memory", rowTrackingProps, 1 << 30, 150_000, false, false, false},
		{"files missing a nested field: logical rows spill to the temp dir", nil, 16 << 20, 150_000, true, true, true},
		{"files missing a nested field, row tracking: logical rows spill", rowTrackingProps, 16 << 20, 150_000, true, true, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, tc.props)
			f.appendFiles(eventRows(tc.rows, 0, 3), 6)
			f.clusterBy("a", "b")
			if tc.logical {
				f.addNestedField()
			}
			before := f.rows()
			var ids map[int64]string
			if tc.props != nil {
				ids = rowIdentities(t, f.latest())
			}
			var waves int
			var spilled int64
			defer cluster.SetRewriteHook(func(w int, b int64) { waves, spilled = w, b })()
			tmp := t.TempDir()
			op := f.optimize(opts(func(o *cluster.Options) { o.MemoryLimit = tc.limit; o.TempDir = tmp; o.TargetFileSize = 512 << 10 }))
			if op.Outcome != result.Succeeded {
				t.Fatalf("op = %+v", op)
			}
			if (waves > 1) != tc.wantWaves || (spilled > 0) != tc.wantSpills {
				t.Fatalf("waves %d, spilled %d bytes; want waves %v, spill %v", waves, spilled, tc.wantWaves, tc.wantSpills)
			}
			sameRows(t, before, f.rows())
			if ids != nil {
				sameIdentities(t, ids, rowIdentities(t, f.latest()))
			}
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Fatalf("spill files left behind in %s: %d entries", tmp, len(left))
			}
		})
	}
}
