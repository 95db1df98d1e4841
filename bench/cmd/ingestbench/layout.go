package main

import (
	"encoding/json"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"strconv"

	"github.com/deltakeeper/deltakeeper/bench/internal/localfs"
	"github.com/deltakeeper/deltakeeper/bench/internal/runstats"
	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// layoutCmd ingests the Parquet source, in one batch, into a table partitioned by region (20 regions
// and a null one) with optimized writes, and reports how many data files are within 0.75–1.25× the
// target size. The target defaults to a twelfth of a partition's share of the output, so that each
// partition gets about a dozen files (a partition's last file is a remainder of any size). The output
// is estimated as half the input: the source is snappy, the table zstd, and the measured ratio is
// 69.3 MB out of 135.8 MB (sizing from the input gave about seven files a partition, of which the
// remainder is one in seven).
func layoutCmd(args []string) {
	fs := flag.NewFlagSet("layout", flag.ExitOnError)
	src := fs.String("src", "", "directory from `ingestbench sources`")
	work := fs.String("work", os.TempDir(), "work directory")
	bin := fs.String("bin", "deltakeeper", "deltakeeper binary")
	threads := fs.Int("threads", 2, "GOMAXPROCS")
	target := fs.Int64("target", 0, "delta.targetFileSize (default: input bytes / 2 / 21 partitions / 12)")
	fs.Parse(args)
	pq := filepath.Join(*src, "parquet")
	if *target == 0 {
		*target = dirBytes(pq) / 2 / 21 / 12
	}
	table := filepath.Join(*work, "t-layout")
	os.RemoveAll(table)
	if err := createTable(table, pq, func(o *delta.CreateOptions) {
		o.PartitionColumns = []string{"region"}
		o.Configuration = map[string]string{delta.PropTargetFileSize: strconv.FormatInt(*target, 10), "delta.autoOptimize.optimizeWrite": "true"}
	}); err != nil {
		log.Fatal(err)
	}
	m, out, err := runstats.Measure(ingestArgs(*bin, table, pq, "parquet", *threads, "--max-files-per-trigger", "100000"))
	if err != nil {
		log.Fatal(err)
	}
	var res ingestResult
	if err := json.Unmarshal(out, &res); err != nil || len(res.Ingest.Batches) != 1 {
		log.Fatalf("ingest result %s (%v): want one batch", out, err)
	}
	live, err := localfs.LiveFiles(table)
	if err != nil {
		log.Fatal(err)
	}
	within := 0
	var smallest, largest int64 = 1 << 62, 0
	// The result lists files per partition only up to 16 partitions: count them from the files.
	partitions := map[string]bool{}
	for _, f := range live {
		partitions[filepath.Dir(f)] = true
		st, err := os.Stat(f)
		if err != nil {
			log.Fatal(err)
		}
		if r := float64(st.Size()) / float64(*target); r >= 0.75 && r <= 1.25 {
			within++
		}
		smallest, largest = min(smallest, st.Size()), max(largest, st.Size())
	}
	fmt.Printf("layout: one batch of %d rows over %d partitions, target %d bytes: %d data files, %d (%.1f %%) within 0.75–1.25× the target; sizes %d–%d bytes; %.2f s, peak RSS %d MiB\n",
		res.Ingest.Rows, len(partitions), *target, len(live), within, 100*float64(within)/float64(len(live)), smallest, largest, m.Wall.Seconds(), m.RSSKB/1024)
	check, err := verify(table, pq)
	if err != nil {
		log.Fatal(err)
	}
	fmt.Println(check)
}
