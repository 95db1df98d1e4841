// Command replaybench measures loading the snapshot of a table with a million live files (a
// checkpoint plus JSON commits) with deltakeeper's log reader, next to DuckDB computing the same live
// file set from the same checkpoint Parquet and JSON commits. Each measurement runs in its own
// process so that wall time and peak RSS (getrusage) are the loader's alone.
//
//	replaybench gen  -dir D [-files 1000000 -commits 100]   write the table's log
//	replaybench run  -dir D [-runs 3]                        measure both, print a Markdown table
//	replaybench load|duck|duck-stats -dir D                  one measurement (used by run)
//	replaybench optimize -dir D [-small 20] [-only P] [-full] [-memprofile F]
//	                                                         plan and commit an OPTIMIZE on the table (it changes it)
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime/pprof"
	"sort"
	"strings"
	"syscall"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

type measurement struct {
	Files   int64   `json:"files"`
	Bytes   int64   `json:"bytes"`
	Seconds float64 `json:"seconds"` // measured inside the process, load only
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: replaybench gen|run|load|duck -dir DIR")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	dir := fs.String("dir", "", "table directory")
	files := fs.Int("files", 1_000_000, "live files at the latest version")
	commits := fs.Int("commits", 100, "JSON commits after the checkpoint")
	runs := fs.Int("runs", 3, "measurements per tool")
	only := fs.String("only", "", "optimize: plan | append | commit | commit-all (one group of phases per process)")
	small := fs.Int("small", 20, "optimize: real small files appended to a fresh partition and compacted")
	threads := fs.Int("duck-threads", 0, "DuckDB threads (0 = DuckDB's default, all cores)")
	cpuProfile := fs.String("cpuprofile", "", "write a CPU profile of the measurement (load) to this file")
	memProfile := fs.String("memprofile", "", "optimize: write a heap profile (live objects) after the plan or the commit to this file")
	full := fs.Bool("full", false, "optimize: load every file's statistics (delta.Table.Latest), not only row counts (optimize.LoadOptions)")
	fs.Parse(os.Args[2:])
	if *cpuProfile != "" {
		f, err := os.Create(*cpuProfile)
		if err == nil {
			err = pprof.StartCPUProfile(f)
		}
		if err != nil {
			fmt.Fprintln(os.Stderr, "replaybench:", err)
			os.Exit(1)
		}
		defer pprof.StopCPUProfile()
	}
	if *dir == "" {
		fmt.Fprintln(os.Stderr, "-dir is required")
		os.Exit(2)
	}
	ctx := context.Background()
	var err error
	switch os.Args[1] {
	case "gen":
		const perCommit, removes = 100, 20
		err = generate(ctx, *dir, *files-*commits*perCommit, *commits, perCommit, removes)
	case "load":
		err = emit(loadOurs(ctx, *dir))
	case "duck":
		err = emit(loadDuck(*dir, *threads, false))
	case "duck-stats":
		err = emit(loadDuck(*dir, *threads, true))
	case "optimize":
		err = runOptimize(ctx, *dir, *small, *only, optimizeRun{full: *full, memProfile: *memProfile})
	case "run":
		err = runAll(*dir, *runs, *threads)
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	if err != nil {
		pprof.StopCPUProfile()
		fmt.Fprintln(os.Stderr, "replaybench:", err)
		os.Exit(1)
	}
}

func emit(m measurement, err error) error {
	if err != nil {
		return err
	}
	return json.NewEncoder(os.Stdout).Encode(m)
}

// loadOurs loads the latest snapshot: log listing, checkpoint Parquet, JSON commits, reconciliation.
func loadOurs(ctx context.Context, dir string) (measurement, error) {
	start := time.Now()
	store, err := storage.NewLocal(dir)
	if err != nil {
		return measurement{}, err
	}
	snap, err := delta.NewTable(store).Latest(ctx)
	if err != nil {
		return measurement{}, err
	}
	return measurement{Files: int64(snap.NumFiles()), Bytes: snap.TotalBytes(), Seconds: time.Since(start).Seconds()}, nil
}

// loadDuck computes the same live set with DuckDB: the checkpoint's adds, then every add/remove of
// the JSON commits after it, keeping each path's last action (the protocol's reconciliation). With
// withStats it also carries each live file's modification time and statistics string through the
// reconciliation (closer to what a snapshot holds); otherwise only path and size.
func loadDuck(dir string, threads int, withStats bool) (measurement, error) {
	start := time.Now()
	logDir := filepath.Join(dir, "_delta_log")
	cps, _ := filepath.Glob(filepath.Join(logDir, "*.checkpoint.parquet"))
	if len(cps) != 1 {
		return measurement{}, fmt.Errorf("want one checkpoint in %s, found %d", logDir, len(cps))
	}
	cpVersion := versionOf(cps[0])
	all, _ := filepath.Glob(filepath.Join(logDir, "*.json"))
	var commits []string
	for _, c := range all {
		if versionOf(c) > cpVersion {
			commits = append(commits, "'"+c+"'")
		}
	}
	sort.Strings(commits)
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return measurement{}, err
	}
	defer db.Close()
	if threads > 0 {
		if _, err := db.Exec(fmt.Sprintf("SET threads = %d", threads)); err != nil {
			return measurement{}, err
		}
	}
	extra, extraJSON, extraAgg, extraSum := "", "", "", ""
	if withStats {
		extra = ", add.modificationTime AS mtime, add.stats AS stats"
		extraJSON = ", add.modificationTime, add.stats"
		extraAgg = ", arg_max(mtime, v) AS mtime, arg_max(stats, v) AS stats"
		extraSum = " + coalesce(sum(length(stats)), 0) * 0 + coalesce(sum(mtime), 0) * 0"
	}
	q := fmt.Sprintf(`
WITH actions AS (
  SELECT add.path AS path, -1 AS v, true AS live, add.size AS size%s
  FROM read_parquet('%s') WHERE add IS NOT NULL
  UNION ALL
  SELECT coalesce(add.path, remove.path), CAST(regexp_extract(filename, '(\d+)\.json$', 1) AS BIGINT),
         add IS NOT NULL, add.size%s
  FROM read_json_auto([%s], format = 'newline_delimited', filename = true, union_by_name = true)
  WHERE add IS NOT NULL OR remove IS NOT NULL
), last AS (
  SELECT path, arg_max(live, v) AS live, arg_max(size, v) AS size%s FROM actions GROUP BY path
)
SELECT count(*), coalesce(sum(size), 0)%s FROM last WHERE live`, extra, cps[0], extraJSON, strings.Join(commits, ", "), extraAgg, extraSum)
	var m measurement
	if err := db.QueryRow(q).Scan(&m.Files, &m.Bytes); err != nil {
		return measurement{}, err
	}
	m.Seconds = time.Since(start).Seconds()
	return m, nil
}

func versionOf(path string) int64 {
	var v int64
	fmt.Sscanf(filepath.Base(path), "%d", &v)
	return v
}

// runAll measures each tool in fresh processes and prints wall time and peak RSS.
func runAll(dir string, runs, threads int) error {
	self, err := os.Executable()
	if err != nil {
		return err
	}
	fmt.Printf("| tool | run | live files | load (in-process) | wall (process) | peak RSS |\n|---|---|---|---|---|---|\n")
	for _, tool := range []string{"load", "duck", "duck-stats"} {
		for r := 1; r <= runs; r++ {
			cmd := exec.Command(self, tool, "-dir", dir, "-duck-threads", fmt.Sprint(threads))
			cmd.Stderr = os.Stderr
			start := time.Now()
			out, err := cmd.Output()
			wall := time.Since(start)
			if err != nil {
				return fmt.Errorf("%s: %w", tool, err)
			}
			var m measurement
			if err := json.Unmarshal(out, &m); err != nil {
				return fmt.Errorf("%s printed %q: %w", tool, out, err)
			}
			ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
			name := map[string]string{"load": "deltakeeper (delta.Table.Latest)", "duck": "DuckDB, path+size",
				"duck-stats": "DuckDB, path+size+mtime+stats"}[tool]
			fmt.Printf("| %s | %d | %d | %.2f s | %.2f s | %d MiB |\n", name, r, m.Files, m.Seconds, wall.Seconds(), ru.Maxrss/1024)
		}
	}
	return nil
}
