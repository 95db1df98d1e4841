package cluster_test

import (
	"os"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

func TestOptimize_SpillsToTempDirBeyondTheMemoryLimit(t *testing.T) {
	cases := []struct {
		name      string
		limit     int64
		wantSpill bool
	}{
		{"fits in memory", 1 << 30, false},
		{"spills at the smallest limit", 16 << 20, true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			f := newFixture(t, nil)
			f.appendFiles(eventRows(150_000, 0, 3), 6)
			f.clusterBy("a", "b")
			before := f.rows()
			var waves int
			var spilled int64
			defer cluster.SetRewriteHook(func(w int, b int64) { waves, spilled = w, b })()
			tmp := t.TempDir()
			op := f.optimize(opts(func(o *cluster.Options) { o.MemoryLimit = tc.limit; o.TempDir = tmp; o.TargetFileSize = 512 << 10 }))
			if op.Outcome != result.Succeeded {
				t.Fatalf("op = %+v", op)
			}
			if (spilled > 0) != tc.wantSpill || (waves > 1) != tc.wantSpill {
				t.Fatalf("waves %d, spilled %d bytes; want spill = %v", waves, spilled, tc.wantSpill)
			}
			sameRows(t, before, f.rows())
			if left, _ := os.ReadDir(tmp); len(left) != 0 {
				t.Fatalf("spill files left behind in %s: %d entries", tmp, len(left))
			}
		})
	}
}
