// Command mergebench measures `deltakeeper merge --mode upsert` (the real CLI, a subprocess) upserting 1 % of
// the keys of a table, against DuckDB computing the same new files:
//
//	mergebench run -work DIR -bin PATH/deltakeeper -rows 10000000 -files 200 -runs 3 -label 1x
//	mergebench duck -files LIST -batch FILE -out FILE -threads N   (the DuckDB side, one process per run)
//
// run builds (once, kept in -work) three tables — clustered on the key with deletion vectors, random keys
// with deletion vectors, clustered copy-on-write — and a batch for each layout (prepare.go). Each run merges
// the batch into a fresh clone of the table and reads the CLI's JSON result; DuckDB then reads exactly the
// files that really hold a matched key, anti-joins them with the batch, adds the batch and writes one
// Parquet file: what a copy-on-write engine that knew the touched files up front would do. Wall and CPU
// time and peak RSS come from rusage (GNU time for the RSS). Reported: files scanned against the files that
// really hold a matched key (DuckDB counts them), bytes written (the table directory's growth: data, DV and
// log files) against the bytes of the changed rows (the batch as zstd Parquet, the table's codec), and the
// times.
package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/deltakeeper/deltakeeper/bench/internal/localfs"
	"github.com/deltakeeper/deltakeeper/bench/internal/runstats"
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: mergebench run|duck [flags]")
	}
	switch os.Args[1] {
	case "run":
		runCmd(os.Args[2:])
	case "duck":
		duckCmd(os.Args[2:])
	default:
		log.Fatalf("mergebench: unknown command %q", os.Args[1])
	}
}

// mergeResult is what the benchmark reads from the CLI's JSON result (worker/result.Merge).
type mergeResult struct {
	Outcome string `json:"outcome"`
	Message string `json:"msg"`
	Merge   struct {
		FilesTotal         int   `json:"filesTotal"`
		FilesPrunedByStats int   `json:"filesPrunedByStats"`
		FilesScanned       int   `json:"filesScanned"`
		FilesTouched       int   `json:"filesTouched"`
		FilesRewritten     int   `json:"filesRewritten"`
		DVsWritten         int   `json:"dvsWritten"`
		RowsMatched        int64 `json:"rowsMatched"`
		RowsUpdated        int64 `json:"rowsUpdated"`
		RowsInserted       int64 `json:"rowsInserted"`
		BytesWritten       int64 `json:"bytesWritten"`
	} `json:"merge"`
}

type config struct {
	layout string
	dv     bool
}

func (c config) name() string {
	if c.dv {
		return c.layout + "-dv"
	}
	return c.layout + "-cow"
}

func runCmd(args []string) {
	fs := flag.NewFlagSet("run", flag.ExitOnError)
	work := fs.String("work", os.TempDir(), "work directory (tables are kept there between runs)")
	bin := fs.String("bin", "deltakeeper", "deltakeeper binary")
	rows := fs.Int64("rows", 10_000_000, "table rows")
	files := fs.Int64("files", 200, "table files")
	runs := fs.Int("runs", 3, "merges per table (each on a fresh clone)")
	threads := fs.Int("threads", 2, "threads for both tools (GOMAXPROCS; DuckDB SET threads)")
	label := fs.String("label", "", "label of the table size in the report")
	only := fs.String("only", "", "comma-separated tables to run (clustered-dv, random-dv, clustered-cow); default all")
	prepareOnly := fs.Bool("prepare", false, "only build the tables and batches (to measure later, or other binaries)")
	fs.Parse(args)
	self, _ := os.Executable()
	configs := []config{{"clustered", true}, {"random", true}, {"clustered", false}}
	fmt.Printf("### %s: %d rows in %d files, upsert of 1 %% of the keys (9/10 existing, 1/10 new), %d threads, median of %d runs\n\n",
		*label, *rows, *files, *threads, *runs)
	fmt.Println("| table | files | hold a match | scanned | touched | scanned ÷ holding | DVs | rewritten | rows updated + inserted | " +
		"written MB | changed rows MB | written ÷ changed | wall s | CPU s | peak RSS MiB | DuckDB wall s | DuckDB CPU s | DuckDB RSS MiB | wall ÷ DuckDB | CPU ÷ DuckDB |")
	fmt.Println("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
	for _, c := range configs {
		if *only != "" && !strings.Contains(","+*only+",", ","+c.name()+",") {
			continue
		}
		base := filepath.Join(*work, fmt.Sprintf("t-%s-%s", *label, c.name()))
		if err := prepareTable(base, *bin, *rows, *files, c.layout, c.dv); err != nil {
			log.Fatalf("mergebench: preparing %s: %v", base, err)
		}
		batch := filepath.Join(*work, fmt.Sprintf("batch-%s-%s.parquet", *label, c.layout))
		if _, err := os.Stat(batch); err != nil {
			if err := writeBatch(batch, *rows, c.layout, 13); err != nil {
				log.Fatalf("mergebench: writing the batch: %v", err)
			}
		}
		if *prepareOnly {
			continue
		}
		truth, err := matchedFiles(base, batch)
		if err != nil {
			log.Fatalf("mergebench: %v", err)
		}
		list := filepath.Join(*work, "touched-"+c.name()+".txt")
		if err := os.WriteFile(list, []byte(strings.Join(truth.holding, "\n")), 0o644); err != nil {
			log.Fatal(err)
		}
		st, err := os.Stat(batch)
		if err != nil {
			log.Fatal(err)
		}
		changedBytes := st.Size()
		var ours, duck []runstats.Measurement
		var res mergeResult
		var written []float64
		for r := range *runs {
			clone := filepath.Join(*work, "run-"+c.name())
			if err := localfs.CloneTable(base, clone); err != nil {
				log.Fatal(err)
			}
			before := dirBytes(clone)
			cmd := exec.Command(*bin, "merge", clone, "--source", batch, "--format", "parquet", "--mode", "upsert", "--keys", "id", "-o", "json")
			cmd.Env = append(os.Environ(), fmt.Sprintf("GOMAXPROCS=%d", *threads))
			m, stdout, err := runstats.Measure(cmd)
			if err != nil {
				log.Fatalf("mergebench: %s run %d: %v", c.name(), r, err)
			}
			if err := json.Unmarshal([]byte(runstats.LastLine(string(stdout))), &res); err != nil || res.Outcome != "succeeded" {
				log.Fatalf("mergebench: %s run %d: result %s (%v)", c.name(), r, stdout, err)
			}
			if res.Merge.RowsUpdated != truth.matchedRows || res.Merge.RowsInserted != truth.batchRows-truth.matchedRows {
				log.Fatalf("mergebench: %s: the merge updated %d and inserted %d rows; DuckDB says %d match and %d are new",
					c.name(), res.Merge.RowsUpdated, res.Merge.RowsInserted, truth.matchedRows, truth.batchRows-truth.matchedRows)
			}
			if !c.dv && r == *runs-1 {
				if err := checkCopyOnWrite(clone, batch, truth); err != nil {
					log.Fatalf("mergebench: %s: DuckDB check: %v", c.name(), err)
				}
			}
			written = append(written, float64(dirBytes(clone)-before))
			ours = append(ours, m)
			out := filepath.Join(*work, "duck-"+c.name()+".parquet")
			os.Remove(out)
			dm, _, err := runstats.Measure(exec.Command(self, "duck", "-files", list, "-batch", batch, "-out", out, "-threads", fmt.Sprint(*threads)))
			if err != nil {
				log.Fatalf("mergebench: DuckDB %s run %d: %v", c.name(), r, err)
			}
			duck = append(duck, dm)
			fmt.Fprintf(os.Stderr, "%s run %d: ours %.2fs (CPU %.2fs, %d MiB), DuckDB %.2fs (CPU %.2fs, %d MiB), load %s\n", c.name(), r,
				m.Wall.Seconds(), m.CPU.Seconds(), m.RSSKB/1024, dm.Wall.Seconds(), dm.CPU.Seconds(), dm.RSSKB/1024, m.Load)
			os.RemoveAll(clone)
			os.Remove(out)
		}
		wall := func(m runstats.Measurement) float64 { return m.Wall.Seconds() }
		cpu := func(m runstats.Measurement) float64 { return m.CPU.Seconds() }
		rss := func(m runstats.Measurement) float64 { return float64(m.RSSKB) / 1024 }
		w := runstats.Median(written, func(f float64) float64 { return f })
		mg := res.Merge
		fmt.Printf("| %s | %d | %d | %d | %d | %.2f | %d | %d | %d + %d | %.1f | %.1f | %.2f | %.2f | %.2f | %.0f | %.2f | %.2f | %.0f | %.2f | %.2f |\n",
			c.name(), mg.FilesTotal, len(truth.holding), mg.FilesScanned, mg.FilesTouched, float64(mg.FilesScanned)/float64(max(1, len(truth.holding))),
			mg.DVsWritten, mg.FilesRewritten, mg.RowsUpdated, mg.RowsInserted, w/1e6, float64(changedBytes)/1e6, w/float64(changedBytes),
			runstats.Median(ours, wall), runstats.Median(ours, cpu), runstats.Median(ours, rss),
			runstats.Median(duck, wall), runstats.Median(duck, cpu), runstats.Median(duck, rss), runstats.Median(ours, wall)/runstats.Median(duck, wall),
			runstats.Median(ours, cpu)/runstats.Median(duck, cpu))
	}
	fmt.Printf("\nload average at the end: %s\n\n", runstats.LoadAvg())
}

func dirBytes(dir string) int64 {
	var n int64
	filepath.Walk(dir, func(p string, info os.FileInfo, err error) error {
		if err == nil && !info.IsDir() {
			n += info.Size()
		}
		return nil
	})
	return n
}
