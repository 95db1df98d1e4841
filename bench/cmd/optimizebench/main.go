// Command optimizebench compares `deltakeeper optimize` (the real CLI, a subprocess) with DuckDB
// compacting the same Delta table's live files, with the same thread count:
//
//	optimizebench run  -in DIR -work DIR -bin PATH/deltakeeper -threads 2 -runs 3 -label 1x
//	optimizebench duck -list FILE -out FILE -threads N   (the DuckDB side, one process per run)
//	optimizebench profile -table DIR -threads N -cpuprofile FILE   (optimize in-process, profiled)
//
// run turns the Parquet files of -in (Spark-like event files from cmd/gen) into a Delta table —
// one WRITE commit per file, as an ingest would leave it — and then, for every run, in a fresh copy
// of that table (data files hard-linked, log copied): times `deltakeeper optimize <copy>` and
// `optimizebench duck` over the table's live files, each its own process, alternating which goes first.
// Wall time, CPU time and peak RSS (rusage) are per process; the output size is what each wrote (the
// files optimize added, DuckDB's file). Finally DuckDB checks the compacted table independently: the
// live files after optimize hold exactly the rows of the live files before (EXCEPT ALL both ways).
package main

import (
	"context"
	"database/sql"
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"runtime/pprof"
	"strings"
	"syscall"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/deltakeeper/deltakeeper/bench/internal/localfs"
	"github.com/deltakeeper/deltakeeper/bench/internal/runstats"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: optimizebench run|duck [flags]")
	}
	switch os.Args[1] {
	case "run":
		runCmd(os.Args[2:])
	case "duck":
		duckCmd(os.Args[2:])
	case "profile":
		profileCmd(os.Args[2:])
	default:
		log.Fatalf("optimizebench: unknown command %q", os.Args[1])
	}
}

type measurement struct {
	wall  time.Duration
	cpu   time.Duration
	rssKB int64
	bytes int64
	load  string
}

func runCmd(args []string) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	in := fs.String("in", "", "directory of input .parquet files")
	work := fs.String("work", os.TempDir(), "work directory")
	bin := fs.String("bin", "deltakeeper", "deltakeeper binary")
	threads := fs.Int("threads", 2, "threads for both tools (GOMAXPROCS and --parallelism; DuckDB SET threads)")
	runs := fs.Int("runs", 3, "runs per tool")
	label := fs.String("label", "", "label of the input in the report")
	fs.Parse(args)
	if *in == "" {
		log.Fatal("optimizebench run: -in is required")
	}
	self, err := os.Executable()
	if err != nil {
		log.Fatal(err)
	}
	template := filepath.Join(*work, "table-"+*label)
	inBytes, inFiles, err := makeTable(*in, template)
	if err != nil {
		log.Fatalf("optimizebench: make table: %v", err)
	}
	live, err := localfs.LiveFiles(template)
	if err != nil {
		log.Fatal(err)
	}
	list := filepath.Join(*work, "live-"+*label+".txt")
	if err := os.WriteFile(list, []byte(strings.Join(live, "\n")+"\n"), 0o644); err != nil {
		log.Fatal(err)
	}
	var ours, duck []measurement
	var lastCopy string
	for r := range *runs {
		copyDir := filepath.Join(*work, fmt.Sprintf("run-%s-%d", *label, r))
		if err := localfs.CloneTable(template, copyDir); err != nil {
			log.Fatal(err)
		}
		duckOut := filepath.Join(*work, "duck-"+*label+".parquet")
		sides := []func() (measurement, error){
			func() (measurement, error) {
				cmd := exec.Command(*bin, "optimize", copyDir, "--parallelism", fmt.Sprint(*threads), "-o", "json")
				cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", *threads))
				m, out, err := measure(cmd)
				if err == nil {
					m.bytes, err = bytesAdded(out)
				}
				ours = append(ours, m)
				return m, err
			},
			func() (measurement, error) {
				os.Remove(duckOut)
				m, _, err := measure(exec.Command(self, "duck", "-list", list, "-out", duckOut, "-threads", fmt.Sprint(*threads)))
				if st, serr := os.Stat(duckOut); serr == nil {
					m.bytes = st.Size()
				}
				duck = append(duck, m)
				return m, err
			},
		}
		if r%2 == 1 {
			sides[0], sides[1] = sides[1], sides[0]
		}
		for _, side := range sides {
			if _, err := side(); err != nil {
				log.Fatalf("optimizebench: run %d: %v", r, err)
			}
		}
		fmt.Fprintf(os.Stderr, "run %d: ours %.2fs %d MiB, duckdb %.2fs %d MiB (load %s)\n", r,
			ours[r].wall.Seconds(), ours[r].rssKB/1024, duck[r].wall.Seconds(), duck[r].rssKB/1024, ours[r].load)
		if lastCopy != "" {
			os.RemoveAll(lastCopy)
		}
		lastCopy = copyDir
	}
	after, err := localfs.LiveFiles(lastCopy)
	if err != nil {
		log.Fatal(err)
	}
	check, err := verify(live, after)
	if err != nil {
		log.Fatalf("optimizebench: verification: %v", err)
	}
	report(*label, inFiles, inBytes, *threads, ours, duck, check)
}

// measure runs a command and returns its wall time, CPU time, peak RSS and stdout.
func measure(cmd *exec.Cmd) (measurement, []byte, error) {
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	start := time.Now()
	err := cmd.Run()
	wall := time.Since(start)
	m := measurement{wall: wall, load: runstats.LoadAvg()}
	if cmd.ProcessState != nil {
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		m.cpu = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		m.rssKB = ru.Maxrss
	}
	if err != nil {
		return m, nil, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, out.String())
	}
	return m, []byte(out.String()), nil
}

// bytesAdded reads the size of the files optimize wrote from its JSON result.
func bytesAdded(out []byte) (int64, error) {
	var res struct {
		Outcome string `json:"outcome"`
		Ops     []struct {
			BytesAdded int64 `json:"bytesAdded"`
		} `json:"ops"`
	}
	if err := json.Unmarshal(out, &res); err != nil || len(res.Ops) != 1 || res.Outcome != "succeeded" {
		return 0, fmt.Errorf("unexpected optimize result %q (%v)", out, err)
	}
	return res.Ops[0].BytesAdded, nil
}

// makeTable creates a Delta table at dir whose data files are copies of the input files, one blind
// append commit per file (statistics: numRecords). It is reused when it exists.
func makeTable(in, dir string) (int64, int, error) {
	files, err := localfs.ParquetFiles(in)
	if err != nil {
		return 0, 0, err
	}
	var total int64
	for _, f := range files {
		st, err := os.Stat(f)
		if err != nil {
			return 0, 0, err
		}
		total += st.Size()
	}
	if _, err := os.Stat(filepath.Join(dir, "_delta_log")); err == nil {
		return total, len(files), nil
	}
	ctx := context.Background()
	store, err := storage.NewLocal(dir)
	if err != nil {
		return 0, 0, err
	}
	tbl := delta.NewTable(store)
	var snap *delta.Snapshot
	for i, f := range files {
		r, err := localfs.Open(f)
		if err != nil {
			return 0, 0, err
		}
		pf, err := parquetio.Open(ctx, r)
		if err != nil {
			r.Close()
			return 0, 0, fmt.Errorf("%s: %w", f, err)
		}
		if snap == nil {
			schema, err := pf.Schema()
			if err != nil {
				r.Close()
				return 0, 0, err
			}
			if snap, err = tbl.Create(ctx, delta.CreateOptions{Schema: schema}); err != nil {
				r.Close()
				return 0, 0, err
			}
		}
		rows := pf.NumRows()
		r.Close()
		name := fmt.Sprintf("part-%05d-%08d.c000.snappy.parquet", i, i)
		if err := localfs.CopyFile(f, filepath.Join(dir, name)); err != nil {
			return 0, 0, err
		}
		st, _ := os.Stat(filepath.Join(dir, name))
		stats, err := snap.BuildStats(rows, nil)
		if err != nil {
			return 0, 0, err
		}
		tx, err := snap.Begin(delta.OpAppend, delta.TxnOptions{Operation: "WRITE", OperationParameters: map[string]string{"mode": "Append"}})
		if err != nil {
			return 0, 0, err
		}
		tx.Add(&delta.AddFile{Path: name, Size: st.Size(), ModificationTime: st.ModTime().UnixMilli(), DataChange: true, Stats: stats})
		if _, err := tx.Commit(ctx); err != nil {
			return 0, 0, err
		}
		if snap, err = tbl.Latest(ctx); err != nil {
			return 0, 0, err
		}
	}
	return total, len(files), nil
}

// profileCmd compacts a copy of a table in-process under the CPU profiler: the same optimize.Run the
// CLI calls, for "where does the time go".
func profileCmd(args []string) {
	fs := flag.NewFlagSet("profile", flag.ExitOnError)
	src := fs.String("table", "", "table to copy and compact")
	threads := fs.Int("threads", 2, "GOMAXPROCS and parallelism")
	out := fs.String("cpuprofile", "cpu.pprof", "CPU profile file")
	fs.Parse(args)
	runtime.GOMAXPROCS(*threads)
	dir := *src + "-profile"
	if err := localfs.CloneTable(*src, dir); err != nil {
		log.Fatal(err)
	}
	defer os.RemoveAll(dir)
	store, err := storage.NewLocal(dir)
	if err != nil {
		log.Fatal(err)
	}
	f, err := os.Create(*out)
	if err != nil {
		log.Fatal(err)
	}
	if err := pprof.StartCPUProfile(f); err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	rep, err := optimize.Run(context.Background(), delta.NewTable(store), optimize.Options{Parallelism: *threads, MaxDeletedRowsRatio: optimize.DefaultMaxDeletedRowsRatio}, nil)
	pprof.StopCPUProfile()
	f.Close()
	if err != nil {
		log.Fatal(err)
	}
	fmt.Fprintf(os.Stderr, "optimize: %d → %d files in %s; profile in %s\n", rep.FilesRemoved, rep.FilesAdded, time.Since(start).Round(time.Millisecond), *out)
}

func duckCmd(args []string) {
	fs := flag.NewFlagSet("duck", flag.ExitOnError)
	list := fs.String("list", "", "file listing the input files, one per line")
	out := fs.String("out", "", "output file")
	threads := fs.Int("threads", 2, "DuckDB threads")
	fs.Parse(args)
	data, err := os.ReadFile(*list)
	if err != nil {
		log.Fatal(err)
	}
	files := strings.Fields(string(data))
	db, err := openDuck(*threads)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf("COPY (SELECT * FROM %s) TO %s (FORMAT parquet, COMPRESSION zstd)", readParquet(files), quote(*out))); err != nil {
		log.Fatalf("duckdb: %v", err)
	}
}

func openDuck(threads int) (*sql.DB, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1) // SET applies to the session
	if _, err := db.Exec(fmt.Sprintf("SET threads = %d", threads)); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func readParquet(files []string) string {
	q := make([]string, len(files))
	for i, f := range files {
		q[i] = quote(f)
	}
	return "read_parquet([" + strings.Join(q, ",") + "], hive_partitioning = false)"
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// verify has DuckDB compare the rows of the live files before and after compaction as multisets.
func verify(before, after []string) (string, error) {
	db, err := openDuck(2)
	if err != nil {
		return "", err
	}
	defer db.Close()
	b, a := readParquet(before), readParquet(after)
	var nb, na, missing, extra int64
	q := fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s), (SELECT count(*) FROM %[2]s),
		(SELECT count(*) FROM (SELECT * FROM %[1]s EXCEPT ALL SELECT * FROM %[2]s)),
		(SELECT count(*) FROM (SELECT * FROM %[2]s EXCEPT ALL SELECT * FROM %[1]s))`, b, a)
	if err := db.QueryRow(q).Scan(&nb, &na, &missing, &extra); err != nil {
		return "", err
	}
	if nb != na || missing != 0 || extra != 0 {
		return "", fmt.Errorf("before %d rows, after %d; %d rows missing, %d extra", nb, na, missing, extra)
	}
	return fmt.Sprintf("DuckDB check: the %d live files after optimize hold exactly the %d rows of the %d live files before (EXCEPT ALL both ways: 0 and 0)",
		len(after), na, len(before)), nil
}

func report(label string, inFiles int, inBytes int64, threads int, ours, duck []measurement, check string) {
	wall := func(m measurement) float64 { return m.wall.Seconds() }
	cpu := func(m measurement) float64 { return m.cpu.Seconds() }
	rss := func(m measurement) float64 { return float64(m.rssKB) / 1024 }
	size := func(m measurement) float64 { return float64(m.bytes) / 1e6 }
	var loads []string
	for _, m := range ours {
		loads = append(loads, m.load)
	}
	fmt.Printf("### %s: %d files, %.1f MB, %d threads, %d runs each (median; load average %s)\n\n", label, inFiles, float64(inBytes)/1e6, threads, len(ours), strings.Join(loads, ", "))
	fmt.Println("| tool | wall s | CPU s | peak RSS MiB | output MB | wall min–max |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, t := range []struct {
		name string
		ms   []measurement
	}{{"deltakeeper optimize", ours}, {"DuckDB COPY", duck}} {
		lo, hi := 1e9, 0.0
		for _, m := range t.ms {
			lo, hi = min(lo, wall(m)), max(hi, wall(m))
		}
		fmt.Printf("| %s | %.2f | %.2f | %.0f | %.2f | %.2f–%.2f |\n", t.name, runstats.Median(t.ms, wall), runstats.Median(t.ms, cpu), runstats.Median(t.ms, rss), runstats.Median(t.ms, size), lo, hi)
	}
	fmt.Printf("\nratios deltakeeper/DuckDB: wall %.2f×, CPU %.2f×, output size %.3f×, peak RSS %.2f×\n\n%s\n\n",
		runstats.Median(ours, wall)/runstats.Median(duck, wall), runstats.Median(ours, cpu)/runstats.Median(duck, cpu), runstats.Median(ours, size)/runstats.Median(duck, size), runstats.Median(ours, rss)/runstats.Median(duck, rss), check)
}
