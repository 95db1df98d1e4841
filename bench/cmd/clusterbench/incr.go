package main

import (
	"context"
	"flag"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/deltakeeper/deltakeeper/bench/internal/localfs"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
)

// cmdIncr runs append + incremental optimize cycles on a clustered table. After each cycle (every
// -full-every cycles) a hard-linked copy of the table is clustered with FULL, so that the incremental
// layout's quality is compared with what FULL gives on the same data.
func cmdIncr(args []string) error {
	fs := flag.NewFlagSet("incr", flag.ExitOnError)
	dir := fs.String("table", "", "table directory (clustered)")
	work := fs.String("work", "", "scratch directory for the FULL reference copies")
	cycles := fs.Int("cycles", 1, "append + optimize cycles")
	pct := fs.Float64("pct", 1, "rows appended per cycle, in percent of the initial rows")
	files := fs.Int("files", 20, "files per append")
	fullEvery := fs.Int("full-every", 1, "compare with a real FULL after the first cycle, every N cycles and after the last; 0 never")
	dry := fs.Bool("dry-ref", true, "compare with FULL's planned layout (cluster.PlanFull, no rewrite) after every cycle")
	mk := clusterOptions(fs)
	fs.Parse(args)
	ctx := context.Background()
	tbl, snap, err := open(ctx, *dir)
	if err != nil {
		return err
	}
	initialRows := int64(0)
	for _, f := range snap.Files() {
		n, _ := deltaNumRecords(f.Stats)
		initialRows += n
	}
	tableBytes := snap.TotalBytes()
	opts := mk()
	var cumAppended, cumRewritten int64
	next := initialRows + 1_000_000_000 // ids of appended rows never collide with the generated ones
	for c := 1; c <= *cycles; c++ {
		n := int(float64(initialRows) * *pct / 100)
		appended, err := appendRows(ctx, tbl, n, next, uint64(1000+c), *files, 0)
		if err != nil {
			return err
		}
		next += int64(n)
		_, snap, err := open(ctx, *dir)
		if err != nil {
			return err
		}
		start := time.Now()
		op, err := cluster.Optimize(ctx, tbl, snap, opts, nil)
		if err != nil {
			return err
		}
		wall := time.Since(start).Seconds()
		cumAppended += appended
		cumRewritten += op.BytesRemoved
		_, after, err := open(ctx, *dir)
		if err != nil {
			return err
		}
		q, err := qualityOf(after)
		if err != nil {
			return err
		}
		line := map[string]any{"step": "incr", "cycle": c, "s": round(wall), "appendedBytes": appended, "rewrittenBytes": op.BytesRemoved,
			"rewrittenPctOfTable": round(100 * float64(op.BytesRemoved) / float64(tableBytes)), "filesRemoved": op.FilesRemoved,
			"filesAdded": op.FilesAdded, "cumAppended": cumAppended, "cumRewritten": cumRewritten,
			"cumRatio": round(float64(cumRewritten) / float64(cumAppended)), "quality": q, "msg": op.Message}
		if op.Version != nil {
			line["version"] = *op.Version
		}
		if *dry {
			ref, err := dryReference(ctx, *dir, opts)
			if err != nil {
				return err
			}
			line["dry"] = ref
		}
		if *fullEvery > 0 && (c == 1 || c%*fullEvery == 0 || c == *cycles) {
			ref, err := fullReference(ctx, *dir, filepath.Join(*work, "fullref"), opts)
			if err != nil {
				return err
			}
			line["full"] = ref
		}
		emit(line)
	}
	return nil
}

// cmdRef is the FULL reference of one past cycle, for runs of incr with -full-every 0 (the record
// configuration, where a FULL per cycle is most of the cost): the table is cloned as of -version (the
// incr line's version; no data file is ever deleted by these runs) and clustered with FULL.
func cmdRef(args []string) error {
	fs := flag.NewFlagSet("ref", flag.ExitOnError)
	dir := fs.String("table", "", "table directory (the incr run's)")
	work := fs.String("work", "", "scratch directory for the copy")
	version := fs.Int64("version", -1, "the version to cluster with FULL")
	cycle := fs.Int("cycle", 0, "the cycle, echoed")
	mk := clusterOptions(fs)
	fs.Parse(args)
	copyDir := filepath.Join(*work, "fullref")
	defer os.RemoveAll(copyDir)
	if err := localfs.CloneTable(*dir, copyDir); err != nil {
		return err
	}
	logDir := filepath.Join(copyDir, "_delta_log")
	entries, err := os.ReadDir(logDir)
	if err != nil {
		return err
	}
	for _, e := range entries {
		name := e.Name()
		v, err := strconv.ParseInt(strings.SplitN(name, ".", 2)[0], 10, 64)
		if name == "_last_checkpoint" || (err == nil && v > *version) {
			if err := os.Remove(filepath.Join(logDir, name)); err != nil {
				return err
			}
		}
	}
	ctx := context.Background()
	tbl, snap, err := open(ctx, copyDir)
	if err != nil {
		return err
	}
	if int64(snap.Version()) != *version {
		return fmt.Errorf("the copy is at version %d, want %d", snap.Version(), *version)
	}
	opts := mk()
	opts.Full = true
	dryRef, err := dryReference(ctx, copyDir, opts)
	if err != nil {
		return err
	}
	start := time.Now()
	if _, err := cluster.Optimize(ctx, tbl, snap, opts, nil); err != nil {
		return err
	}
	_, after, err := open(ctx, copyDir)
	if err != nil {
		return err
	}
	q, err := qualityOf(after)
	if err != nil {
		return err
	}
	emit(map[string]any{"step": "ref", "cycle": *cycle, "version": *version, "s": round(time.Since(start).Seconds()), "full": q, "dry": dryRef})
	return nil
}

// dryReference is FULL's planned layout on the table as it is (cluster.PlanFull: the key columns are
// read, nothing is written) and its quality, with the CPU time it took.
func dryReference(ctx context.Context, dir string, opts cluster.Options) (map[string]any, error) {
	_, snap, err := open(ctx, dir)
	if err != nil {
		return nil, err
	}
	start, cpu := time.Now(), cpuSeconds()
	plan, err := cluster.PlanFull(ctx, snap, opts)
	if err != nil {
		return nil, err
	}
	qs, err := plan.Quality()
	if err != nil {
		return nil, err
	}
	k := float64(plan.Files)
	out := map[string]any{"files": plan.Files, "ideal": round((k - math.Sqrt(k)) / (k - 1)),
		"s": round(time.Since(start).Seconds()), "cpuS": round(cpuSeconds() - cpu)}
	for _, q := range qs {
		out[q.Column] = map[string]any{"skipping": round(q.SkippingEffectiveness), "measured": round(q.MeasuredSkipping),
			"avgDepth": round(q.AvgDepth), "maxDepth": q.MaxDepth}
	}
	return out, nil
}

// cpuSeconds is the process's user and system CPU time so far.
func cpuSeconds() float64 {
	var ru syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &ru); err != nil {
		return 0
	}
	return float64(ru.Utime.Sec+ru.Stime.Sec) + float64(ru.Utime.Usec+ru.Stime.Usec)/1e6
}

// fullReference clusters a copy of the table with FULL and returns its quality.
func fullReference(ctx context.Context, dir, copyDir string, opts cluster.Options) (map[string]any, error) {
	defer os.RemoveAll(copyDir)
	if err := localfs.CloneTable(dir, copyDir); err != nil {
		return nil, err
	}
	tbl, snap, err := open(ctx, copyDir)
	if err != nil {
		return nil, err
	}
	opts.Full = true
	if _, err := cluster.Optimize(ctx, tbl, snap, opts, nil); err != nil {
		return nil, err
	}
	_, after, err := open(ctx, copyDir)
	if err != nil {
		return nil, err
	}
	return qualityOf(after)
}
