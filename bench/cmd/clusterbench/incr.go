package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
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
	fullEvery := fs.Int("full-every", 1, "compare with FULL after the first cycle, every N cycles and after the last; 0 never")
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
	emit(map[string]any{"step": "ref", "cycle": *cycle, "version": *version, "s": round(time.Since(start).Seconds()), "full": q})
	return nil
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
