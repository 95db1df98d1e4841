// Command ingestbench compares `deltakeeper ingest` (the real CLI, a subprocess) with DuckDB writing
// the same source files to Parquet, with the same thread count, for NDJSON, CSV and Parquet sources:
//
//	ingestbench sources -in DIR -out DIR        (DuckDB turns cmd/gen's Parquet files into CSV and NDJSON)
//	ingestbench run -src DIR -work DIR -bin PATH/deltakeeper -threads 2 -runs 3 -label 1x
//	ingestbench duck -format F -src DIR -out FILE -threads N   (the DuckDB side, one process per run)
//	ingestbench layout -src DIR -work DIR -bin PATH -partitions 20   (optimized-write file sizes)
//	ingestbench state -work DIR -files 1000000   (the taken-files state of a million files)
//
// run creates, for every format and run, an empty table with the source's schema (id long, ts
// timestamp, region, user_id, event_id, status strings, amount double, qty integer) and times
// `deltakeeper ingest <table> --source <dir> --format F --available-now` against
// `COPY (SELECT * FROM read_F(...)) TO … (FORMAT parquet, COMPRESSION zstd)`, each its own process,
// alternating which goes first; wall and CPU time and peak RSS come from rusage. DuckDB then checks
// the last table of every format independently: its live files hold exactly the rows of the Parquet
// source (EXCEPT ALL both ways).
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"sort"
	"strings"

	"github.com/deltakeeper/deltakeeper/bench/internal/duckconn"
	"github.com/deltakeeper/deltakeeper/bench/internal/localfs"
	"github.com/deltakeeper/deltakeeper/bench/internal/runstats"
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: ingestbench sources|run|duck|layout|state [flags]")
	}
	switch os.Args[1] {
	case "sources":
		sourcesCmd(os.Args[2:])
	case "run":
		runCmd(os.Args[2:])
	case "duck":
		duckCmd(os.Args[2:])
	case "layout":
		layoutCmd(os.Args[2:])
	case "state":
		stateCmd(os.Args[2:])
	case "state-load":
		stateLoadCmd(os.Args[2:])
	default:
		log.Fatalf("ingestbench: unknown command %q", os.Args[1])
	}
}

var formats = []string{"json", "csv", "parquet"}

// sourcesCmd writes DIR/parquet (copies), DIR/csv and DIR/json: one file per input file, same rows.
func sourcesCmd(args []string) {
	fs := flag.NewFlagSet("sources", flag.ExitOnError)
	in := fs.String("in", "", "cmd/gen output directory")
	out := fs.String("out", "", "output directory")
	fs.Parse(args)
	files, err := localfs.ParquetFiles(*in)
	if err != nil {
		log.Fatal(err)
	}
	db, err := duckconn.Open(2)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	for _, f := range formats {
		os.MkdirAll(filepath.Join(*out, f), 0o755)
	}
	for i, f := range files {
		base := fmt.Sprintf("f%05d", i)
		if err := localfs.CopyFile(f, filepath.Join(*out, "parquet", base+".parquet")); err != nil {
			log.Fatal(err)
		}
		if _, err := db.Exec(fmt.Sprintf("COPY (SELECT * FROM read_parquet(%s)) TO %s (FORMAT csv, HEADER)", duckconn.Quote(f), duckconn.Quote(filepath.Join(*out, "csv", base+".csv")))); err != nil {
			log.Fatal(err)
		}
		if _, err := db.Exec(fmt.Sprintf("COPY (SELECT * FROM read_parquet(%s)) TO %s (FORMAT json)", duckconn.Quote(f), duckconn.Quote(filepath.Join(*out, "json", base+".json")))); err != nil {
			log.Fatal(err)
		}
	}
	fmt.Printf("sources: %d files per format in %s\n", len(files), *out)
}

// ingestResult is what the benchmark reads from the CLI's JSON result.
type ingestResult struct {
	Outcome string `json:"outcome"`
	Ingest  struct {
		Rows    int64 `json:"rows"`
		Batches []struct {
			Written map[string]int `json:"written"`
		} `json:"batches"`
	} `json:"ingest"`
}

func ingestArgs(bin, table, src, format string, threads int, extra ...string) *exec.Cmd {
	args := []string{"ingest", table, "--source", src, "--format", format, "--available-now", "-o", "json", "--optimize-write", "true"}
	if format == "csv" {
		args = append(args, "--option", "header=true")
	}
	cmd := exec.Command(bin, append(args, extra...)...)
	cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", threads))
	return cmd
}

func runCmd(args []string) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	src := fs.String("src", "", "directory from `ingestbench sources`")
	work := fs.String("work", os.TempDir(), "work directory")
	bin := fs.String("bin", "deltakeeper", "deltakeeper binary")
	threads := fs.Int("threads", 2, "threads for both tools (GOMAXPROCS; DuckDB SET threads)")
	runs := fs.Int("runs", 3, "runs per tool and format")
	label := fs.String("label", "", "label of the input in the report")
	fs.Parse(args)
	self, _ := os.Executable()
	rows, err := countRows(filepath.Join(*src, "parquet"))
	if err != nil {
		log.Fatal(err)
	}
	fmt.Printf("### %s: %d rows, %d threads, %d runs each (median)\n\n", *label, rows, *threads, *runs)
	fmt.Println("| source | input MB | tool | wall s | rows/s | CPU s | peak RSS MiB | output MB |")
	fmt.Println("|---|---|---|---|---|---|---|---|")
	var checks []string
	for _, format := range formats {
		dir := filepath.Join(*src, format)
		inBytes := dirBytes(dir)
		var ours, duck []runstats.Measurement
		var oursOut, duckOut []float64
		var lastTable string
		for r := range *runs {
			table := filepath.Join(*work, fmt.Sprintf("t-%s-%s-%d", *label, format, r))
			os.RemoveAll(table)
			if err := createTable(table, filepath.Join(*src, "parquet")); err != nil {
				log.Fatal(err)
			}
			out := filepath.Join(*work, "duck-"+format+".parquet")
			sides := []func() error{
				func() error {
					m, stdout, err := runstats.Measure(ingestArgs(*bin, table, dir, format, *threads))
					if err != nil {
						return err
					}
					var res ingestResult
					if err := json.Unmarshal(stdout, &res); err != nil || res.Outcome != "succeeded" || res.Ingest.Rows != rows {
						return fmt.Errorf("ingest result %s (%v), want %d rows", stdout, err, rows)
					}
					ours, oursOut = append(ours, m), append(oursOut, float64(dirBytes(table))/1e6)
					return nil
				},
				func() error {
					os.Remove(out)
					m, _, err := runstats.Measure(exec.Command(self, "duck", "-format", format, "-src", dir, "-out", out, "-threads", fmt.Sprint(*threads)))
					if err != nil {
						return err
					}
					st, _ := os.Stat(out)
					duck, duckOut = append(duck, m), append(duckOut, float64(st.Size())/1e6)
					return nil
				},
			}
			if r%2 == 1 {
				sides[0], sides[1] = sides[1], sides[0]
			}
			for _, s := range sides {
				if err := s(); err != nil {
					log.Fatalf("ingestbench: %s run %d: %v", format, r, err)
				}
			}
			fmt.Fprintf(os.Stderr, "%s run %d: ours %.2fs %d MiB, duckdb %.2fs %d MiB (load %s)\n", format, r, ours[r].Wall.Seconds(), ours[r].RSSKB/1024,
				duck[r].Wall.Seconds(), duck[r].RSSKB/1024, ours[r].Load)
			if lastTable != "" {
				os.RemoveAll(lastTable)
			}
			lastTable = table
		}
		wall := func(m runstats.Measurement) float64 { return m.Wall.Seconds() }
		cpu := func(m runstats.Measurement) float64 { return m.CPU.Seconds() }
		rss := func(m runstats.Measurement) float64 { return float64(m.RSSKB) / 1024 }
		ident := func(f float64) float64 { return f }
		for _, t := range []struct {
			name string
			ms   []runstats.Measurement
			out  []float64
		}{{"deltakeeper ingest", ours, oursOut}, {"DuckDB COPY", duck, duckOut}} {
			w := runstats.Median(t.ms, wall)
			fmt.Printf("| %s | %.1f | %s | %.2f | %.0f | %.2f | %.0f | %.1f |\n", format, float64(inBytes)/1e6, t.name, w, float64(rows)/w,
				runstats.Median(t.ms, cpu), runstats.Median(t.ms, rss), runstats.Median(t.out, ident))
		}
		ratio := runstats.Median(duck, wall) / runstats.Median(ours, wall)
		checks = append(checks, fmt.Sprintf("%s: deltakeeper throughput %.2f× DuckDB's", format, ratio))
		check, err := verify(lastTable, filepath.Join(*src, "parquet"))
		if err != nil {
			log.Fatalf("ingestbench: %s: DuckDB check: %v", format, err)
		}
		checks = append(checks, "  "+check)
		os.RemoveAll(lastTable)
	}
	fmt.Println()
	for _, c := range checks {
		fmt.Println(c)
	}
	fmt.Println()
}

func duckCmd(args []string) {
	fs := flag.NewFlagSet("duck", flag.ExitOnError)
	format := fs.String("format", "", "json, csv or parquet")
	src := fs.String("src", "", "source directory")
	out := fs.String("out", "", "output file")
	threads := fs.Int("threads", 2, "DuckDB threads")
	fs.Parse(args)
	db, err := duckconn.Open(*threads)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf("COPY (SELECT * FROM %s) TO %s (FORMAT parquet, COMPRESSION zstd)", reader(*format, *src), duckconn.Quote(*out))); err != nil {
		log.Fatalf("duckdb: %v", err)
	}
}

// duckColumns is the table's schema for DuckDB's text readers: both tools convert into the same
// typed columns (and DuckDB's sampling cannot guess a column that is null in its sample).
const duckColumns = "columns = {'id': 'BIGINT', 'ts': 'TIMESTAMP', 'region': 'VARCHAR', 'user_id': 'VARCHAR', " +
	"'event_id': 'VARCHAR', 'amount': 'DOUBLE', 'qty': 'INTEGER', 'status': 'VARCHAR'}"

// reader is DuckDB's reader of every file of a format under dir.
func reader(format, dir string) string {
	glob := duckconn.Quote(filepath.Join(dir, "*."+format))
	switch format {
	case "csv":
		return "read_csv(" + glob + ", header = true, " + duckColumns + ")"
	case "json":
		return "read_json(" + glob + ", format = 'newline_delimited', " + duckColumns + ")"
	}
	return "read_parquet(" + glob + ")"
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() && !strings.Contains(p, "/_") {
			n += info.Size()
		}
		return nil
	})
	return n
}

func countRows(parquetDir string) (int64, error) {
	db, err := duckconn.Open(2)
	if err != nil {
		return 0, err
	}
	defer db.Close()
	var n int64
	err = db.QueryRow("SELECT count(*) FROM " + reader("parquet", parquetDir)).Scan(&n)
	return n, err
}

// verify has DuckDB compare the table's live files with the Parquet source as multisets.
func verify(table, parquetDir string) (string, error) {
	live, err := localfs.LiveFiles(table)
	if err != nil {
		return "", err
	}
	q := make([]string, len(live))
	for i, f := range live {
		q[i] = duckconn.Quote(f)
	}
	db, err := duckconn.Open(2)
	if err != nil {
		return "", err
	}
	defer db.Close()
	cols := "id, ts, region, user_id, event_id, amount, qty, status"
	t := "(SELECT " + cols + " FROM read_parquet([" + strings.Join(q, ",") + "], hive_partitioning = true))"
	s := "(SELECT " + cols + " FROM " + reader("parquet", parquetDir) + ")"
	var nt, ns, missing, extra int64
	query := fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s), (SELECT count(*) FROM %[2]s),
		(SELECT count(*) FROM (SELECT * FROM %[2]s EXCEPT ALL SELECT * FROM %[1]s)),
		(SELECT count(*) FROM (SELECT * FROM %[1]s EXCEPT ALL SELECT * FROM %[2]s))`, t, s)
	if err := db.QueryRow(query).Scan(&nt, &ns, &missing, &extra); err != nil {
		return "", err
	}
	if nt != ns || missing != 0 || extra != 0 {
		return "", fmt.Errorf("table %d rows, source %d; %d source rows missing, %d extra", nt, ns, missing, extra)
	}
	sort.Strings(live)
	return fmt.Sprintf("DuckDB check: the table's %d live files hold exactly the %d rows of the Parquet source (EXCEPT ALL both ways: 0 and 0)", len(live), nt), nil
}
