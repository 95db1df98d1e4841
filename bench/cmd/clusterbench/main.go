// Command clusterbench measures liquid clustering (worker/cluster) on a generated table clustered by two
// uniform columns; bench/clustering.sh drives it and bench/RESULTS.md records the figures. Every step
// runs in its own process and prints one JSON line with its wall time and peak RSS (VmHWM):
//
//	clusterbench gen  -table DIR -rows N -file-size B      unclustered table, then CLUSTER BY k1, k2
//	clusterbench full -table DIR -threads T -target B      OPTIMIZE FULL, quality before and after
//	clusterbench duck -table DIR -threads T -out DIR       DuckDB ORDER BY k1, k2 of the same files
//	clusterbench incr -table DIR -cycles C -pct P -files F append P% of the rows in F files, optimize,
//	                                                       compare with FULL's planned layout (-dry-ref)
//	                                                       and with FULL on a copy; C times
//	clusterbench ref  -table DIR -work DIR -version V      FULL on a copy as of version V (incr -full-every 0)
package main

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"runtime/pprof"
	"strconv"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: clusterbench gen|full|duck|incr [flags]")
		os.Exit(2)
	}
	cmds := map[string]func([]string) error{"gen": cmdGen, "full": cmdFull, "duck": cmdDuck, "incr": cmdIncr, "ref": cmdRef}
	cmd, ok := cmds[os.Args[1]]
	if !ok {
		fmt.Fprintf(os.Stderr, "clusterbench: unknown step %q\n", os.Args[1])
		os.Exit(2)
	}
	if p := os.Getenv("CPUPROFILE"); p != "" {
		f, err := os.Create(p)
		if err == nil {
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
	}
	if err := cmd(os.Args[2:]); err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintf(os.Stderr, "clusterbench %s: %v\n", os.Args[1], err)
		os.Exit(1)
	}
}

// emit prints one result line, with the process's peak RSS so far.
func emit(m map[string]any) {
	m["peakRSSMiB"] = peakRSS() >> 20
	b, _ := json.Marshal(m)
	fmt.Println(string(b))
}

// peakRSS is the process's high-water resident set (VmHWM).
func peakRSS() int64 {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return 0
	}
	defer f.Close()
	s := bufio.NewScanner(f)
	for s.Scan() {
		if rest, ok := strings.CutPrefix(s.Text(), "VmHWM:"); ok {
			kb, _ := strconv.ParseInt(strings.Fields(rest)[0], 10, 64)
			return kb << 10
		}
	}
	return 0
}

func open(ctx context.Context, dir string) (*delta.Table, *delta.Snapshot, error) {
	store, err := storage.Open(ctx, dir, storage.Config{})
	if err != nil {
		return nil, nil, err
	}
	tbl := delta.NewTable(store)
	snap, err := tbl.Latest(ctx)
	return tbl, snap, err
}

// qualityOf reports the skipping effectiveness per clustering column, with the perfect-grid reference
// ideal(k, 2) = (k − √k) / (k − 1) for the snapshot's file count.
func qualityOf(snap *delta.Snapshot) (map[string]any, error) {
	q, err := table.ClusteringQuality(snap, []string{"k1", "k2"})
	if err != nil {
		return nil, err
	}
	k := float64(snap.NumFiles())
	out := map[string]any{"files": snap.NumFiles(), "bytes": snap.TotalBytes(), "ideal": round((k - math.Sqrt(k)) / (k - 1))}
	for _, c := range q {
		out[c.Column] = colQuality(c)
	}
	return out, nil
}

func colQuality(c result.ColumnQuality) map[string]any {
	return map[string]any{"skipping": round(c.SkippingEffectiveness), "measured": round(c.MeasuredSkipping),
		"avgDepth": round(c.AvgDepth), "maxDepth": c.MaxDepth}
}

func round(f float64) float64 { return math.Round(f*1000) / 1000 }

func deltaNumRecords(stats string) (int64, bool) { return delta.NumRecords(stats) }
