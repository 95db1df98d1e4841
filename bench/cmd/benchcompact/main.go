// Command benchcompact compares two compaction commands on the same input: each run is its own
// process, so that wall time, CPU time and peak RSS (rusage maxrss) belong to one tool. Runs alternate
// between the tools (ours first on even runs, DuckDB first on odd ones) so background load hits both
// alike; medians are reported. Afterwards DuckDB checks that both outputs hold the input's rows.
//
//	benchcompact -in DIR -work DIR -threads 2 -runs 5 \
//	    -ours   '/path/rewrite  -in {in} -out {out} -threads {threads}' \
//	    -duckdb '/path/duckcopy -in {in} -out {out} -threads {threads}'
//
// A command template is run through "sh -c 'exec …'" with {in}, {out} and {threads} substituted, so
// the "ours" side can be any command line (later: deltakeeper optimize) that leaves one Parquet file
// or a directory of them at {out}.
package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"time"

	"github.com/deltakeeper/deltakeeper/bench/internal/runstats"
)

type measurement struct {
	wall  time.Duration
	cpu   time.Duration // user + system
	rssKB int64
	bytes int64
}

type tool struct {
	name     string
	template string
	out      string
	runs     []measurement
}

func main() {
	in := flag.String("in", "", "input directory of .parquet files")
	work := flag.String("work", os.TempDir(), "directory for outputs")
	threads := flag.Int("threads", 2, "threads for both tools")
	runs := flag.Int("runs", 3, "runs per tool")
	label := flag.String("label", "", "label of this input in the report")
	oursCmd := flag.String("ours", "", "command template of our compaction")
	duckCmd := flag.String("duckdb", "", "command template of the DuckDB compaction")
	flag.Parse()
	if *in == "" || *oursCmd == "" || *duckCmd == "" {
		log.Fatal("benchcompact: -in, -ours and -duckdb are required")
	}
	inBytes, inFiles := dirSize(*in)
	tools := []*tool{
		{name: "ours", template: *oursCmd, out: filepath.Join(*work, "out-ours.parquet")},
		{name: "duckdb", template: *duckCmd, out: filepath.Join(*work, "out-duckdb.parquet")},
	}
	for r := range *runs {
		order := tools
		if r%2 == 1 {
			order = []*tool{tools[1], tools[0]}
		}
		for _, t := range order {
			m, err := runOnce(t, *in, *threads)
			if err != nil {
				log.Fatalf("benchcompact: %s run %d: %v", t.name, r, err)
			}
			t.runs = append(t.runs, m)
			fmt.Fprintf(os.Stderr, "run %d %-6s wall %6.2fs cpu %6.2fs rss %4d MiB out %.1f MB (load %s)\n",
				r, t.name, m.wall.Seconds(), m.cpu.Seconds(), m.rssKB/1024, float64(m.bytes)/1e6, runstats.LoadAvg())
		}
	}
	checks, err := verify(*in, tools[0].out, tools[1].out)
	if err != nil {
		log.Fatalf("benchcompact: verification: %v", err)
	}
	report(*label, *in, inBytes, inFiles, *threads, tools, checks)
}

func runOnce(t *tool, in string, threads int) (measurement, error) {
	os.RemoveAll(t.out)
	cmdline := strings.NewReplacer("{in}", in, "{out}", t.out, "{threads}", fmt.Sprint(threads)).Replace(t.template)
	cmd := exec.Command("sh", "-c", "exec "+cmdline)
	cmd.Stdout, cmd.Stderr = os.Stderr, os.Stderr
	start := time.Now()
	if err := cmd.Run(); err != nil {
		return measurement{}, fmt.Errorf("%s: %w", cmdline, err)
	}
	wall := time.Since(start)
	ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
	size, _ := dirSize(t.out)
	return measurement{
		wall:  wall,
		cpu:   time.Duration(ru.Utime.Nano() + ru.Stime.Nano()),
		rssKB: ru.Maxrss,
		bytes: size,
	}, nil
}

// dirSize is the size of a file, or the total size of the .parquet files of a directory.
func dirSize(path string) (int64, int) {
	st, err := os.Stat(path)
	if err != nil {
		return 0, 0
	}
	if !st.IsDir() {
		return st.Size(), 1
	}
	var total int64
	n := 0
	filepath.WalkDir(path, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			if info, err := d.Info(); err == nil {
				total += info.Size()
				n++
			}
		}
		return nil
	})
	return total, n
}

func report(label, in string, inBytes int64, inFiles, threads int, tools []*tool, checks string) {
	wall := func(m measurement) float64 { return m.wall.Seconds() }
	cpu := func(m measurement) float64 { return m.cpu.Seconds() }
	rss := func(m measurement) float64 { return float64(m.rssKB) / 1024 }
	size := func(m measurement) float64 { return float64(m.bytes) / 1e6 }
	fmt.Printf("### %s: %s (%d files, %.1f MB), %d threads, %d runs each (median)\n\n", label, in, inFiles, float64(inBytes)/1e6, threads, len(tools[0].runs))
	fmt.Println("| tool | wall s | CPU s (user+sys) | peak RSS MiB | output MB | wall min–max |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, t := range tools {
		lo, hi := 1e9, 0.0
		for _, m := range t.runs {
			lo, hi = min(lo, wall(m)), max(hi, wall(m))
		}
		fmt.Printf("| %s | %.2f | %.2f | %.0f | %.2f | %.2f–%.2f |\n", t.name, runstats.Median(t.runs, wall), runstats.Median(t.runs, cpu), runstats.Median(t.runs, rss), runstats.Median(t.runs, size), lo, hi)
	}
	o, d := tools[0].runs, tools[1].runs
	fmt.Printf("\nratios ours/DuckDB: wall %.2f×, CPU %.2f×, output size %.3f×, peak RSS %.2f×\n\n",
		runstats.Median(o, wall)/runstats.Median(d, wall), runstats.Median(o, cpu)/runstats.Median(d, cpu), runstats.Median(o, size)/runstats.Median(d, size), runstats.Median(o, rss)/runstats.Median(d, rss))
	fmt.Println(checks)
}
