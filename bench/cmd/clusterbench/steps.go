package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
)

func clusterOptions(fs *flag.FlagSet) func() cluster.Options {
	target := fs.Int64("target", 16<<20, "target file size")
	threads := fs.Int("threads", 2, "threads (GOMAXPROCS and clustering parallelism)")
	mem := fs.Int64("memory-limit", 4<<30, "clustering memory limit")
	tmp := fs.String("tmp-dir", "", "spill directory")
	minOff := fs.Int("min-offending-files", cluster.DefaultMinOffendingFiles, "auto-recluster: smallest group")
	minOverlap := fs.Float64("min-overlap-threshold", cluster.DefaultMinOverlapThreshold, "auto-recluster: pair score threshold")
	maxGap := fs.Float64("max-quality-gap", cluster.DefaultMaxQualityGap, "escalate when the forecast gap to FULL exceeds it (1: never)")
	align := fs.Bool("align-new-data", true, "cut new data along the base ZCube's files (false: cluster it on its own)")
	fanout := fs.Int("region-fanout", cluster.DefaultRegionFanout, "aligned pieces per region and level before they merge")
	return func() cluster.Options {
		runtime.GOMAXPROCS(*threads)
		o := cluster.DefaultOptions()
		o.MinOffendingFiles, o.MinOverlapThreshold, o.MaxQualityGap = *minOff, *minOverlap, *maxGap
		o.NoRegions, o.RegionFanout = !*align, *fanout
		o.TargetFileSize, o.Parallelism, o.MemoryLimit, o.TempDir = *target, *threads, *mem, *tmp
		return o
	}
}

func cmdFull(args []string) error {
	fs := flag.NewFlagSet("full", flag.ExitOnError)
	dir := fs.String("table", "", "table directory")
	mk := clusterOptions(fs)
	fs.Parse(args)
	ctx := context.Background()
	tbl, snap, err := open(ctx, *dir)
	if err != nil {
		return err
	}
	opts := mk()
	opts.Full = true
	before, err := qualityOf(snap)
	if err != nil {
		return err
	}
	start := time.Now()
	op, err := cluster.Optimize(ctx, tbl, snap, opts, progressLog(start))
	if err != nil {
		return err
	}
	wall := time.Since(start).Seconds()
	_, after, err := open(ctx, *dir)
	if err != nil {
		return err
	}
	q, err := qualityOf(after)
	if err != nil {
		return err
	}
	emit(map[string]any{"step": "full", "s": round(wall), "bytesIn": op.BytesRemoved, "bytesOut": op.BytesAdded,
		"filesOut": op.FilesAdded, "threads": opts.Parallelism, "before": before, "after": q})
	return nil
}

func cmdDuck(args []string) error {
	fs := flag.NewFlagSet("duck", flag.ExitOnError)
	dir := fs.String("table", "", "table directory")
	out := fs.String("out", "", "output directory (created)")
	threads := fs.Int("threads", 2, "DuckDB threads")
	target := fs.Int64("target", 16<<20, "output file size (FILE_SIZE_BYTES)")
	fs.Parse(args)
	ctx := context.Background()
	_, snap, err := open(ctx, *dir)
	if err != nil {
		return err
	}
	quoted := make([]string, 0, snap.NumFiles())
	for _, f := range snap.Files() {
		key, err := delta.ObjectKey(snap.Table().Location(), f.Path)
		if err != nil {
			return err
		}
		quoted = append(quoted, quote(filepath.Join(*dir, key)))
	}
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(fmt.Sprintf("SET threads = %d", *threads)); err != nil {
		return err
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		return err
	}
	tmp := filepath.Join(*out, ".tmp")
	if _, err := db.Exec("SET temp_directory = " + quote(tmp)); err != nil {
		return err
	}
	start := time.Now()
	q := fmt.Sprintf("COPY (SELECT * FROM read_parquet([%s]) ORDER BY k1, k2) TO %s (FORMAT parquet, COMPRESSION zstd, FILE_SIZE_BYTES %d)",
		strings.Join(quoted, ","), quote(filepath.Join(*out, "sorted")), *target)
	if _, err := db.Exec(q); err != nil {
		return err
	}
	wall := time.Since(start).Seconds()
	files, _ := filepath.Glob(filepath.Join(*out, "sorted", "*.parquet"))
	var bytes int64
	for _, f := range files {
		if st, err := os.Stat(f); err == nil {
			bytes += st.Size()
		}
	}
	emit(map[string]any{"step": "duckdb", "s": round(wall), "threads": *threads, "filesOut": len(files), "bytesOut": bytes})
	return nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// progressLog prints progress with elapsed time to stderr when VERBOSE is set.
func progressLog(start time.Time) func(string) {
	if os.Getenv("VERBOSE") == "" {
		return nil
	}
	at, done := os.Getenv("MEMPROFILE_AT"), false
	return func(msg string) {
		fmt.Fprintf(os.Stderr, "%6.2fs %s\n", time.Since(start).Seconds(), msg)
		if at != "" && !done && strings.Contains(msg, at) {
			done = true
			if f, err := os.Create(os.Getenv("MEMPROFILE")); err == nil {
				pprof.WriteHeapProfile(f)
				f.Close()
			}
		}
	}
}
