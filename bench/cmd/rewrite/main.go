// Command rewrite compacts a directory of Parquet files into one file with parquetio.Rewrite — the
// "ours" side of the compaction benchmark. It does not link DuckDB, so its peak RSS is the engine's.
//
//	rewrite -in DIR -out FILE -threads N [-level 3] [-rowgroup-mb 16] [-page-kb 1024] [-row-tracking] [-cpuprofile F] [-memprofile F]
//
// The schema comes from the first input file, as a table's schema would come from its log.
// -row-tracking preserves Delta row tracking as compaction of such a table does: two materialized
// long columns are added and filled from per-file base row ids and commit versions.
package main

import (
	"context"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime"
	"runtime/pprof"
	"time"

	"github.com/deltakeeper/deltakeeper/bench/internal/localfs"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func main() {
	in := flag.String("in", "", "input directory of .parquet files")
	out := flag.String("out", "", "output file")
	threads := flag.Int("threads", 2, "Parallelism")
	level := flag.Int("level", 0, "zstd level (0: parquetio's default)")
	rowGroupMB := flag.Int("rowgroup-mb", 0, "row group size in MB (0: parquetio's default)")
	pageKB := flag.Int("page-kb", 0, "page size in KiB (0: parquetio's default)")
	rowTracking := flag.Bool("row-tracking", false, "fill materialized row id / commit version columns")
	cpuprofile := flag.String("cpuprofile", "", "write a CPU profile")
	memprofile := flag.String("memprofile", "", "write an allocation profile")
	flag.Parse()
	if *in == "" || *out == "" {
		log.Fatal("rewrite: -in and -out are required")
	}
	files, err := localfs.ParquetFiles(*in)
	if err != nil {
		log.Fatal(err)
	}
	// Rewrite runs column tasks and page compression on separate goroutines: GOMAXPROCS, not
	// Parallelism, is what caps the cores used, so cap it like DuckDB's "SET threads".
	runtime.GOMAXPROCS(*threads)
	if *cpuprofile != "" {
		f, err := os.Create(*cpuprofile)
		if err != nil {
			log.Fatal(err)
		}
		pprof.StartCPUProfile(f)
		defer pprof.StopCPUProfile()
	}
	if at := os.Getenv("REWRITE_HEAPPROFILE_AT"); at != "" {
		// Diagnostics: the live heap in the middle of a run, where end-of-run profiles show nothing.
		d, err := time.ParseDuration(at)
		if err != nil {
			log.Fatal(err)
		}
		time.AfterFunc(d, func() {
			if f, err := os.Create(os.Getenv("REWRITE_HEAPPROFILE")); err == nil {
				pprof.Lookup("heap").WriteTo(f, 0)
				f.Close()
			}
		})
	}
	start := time.Now()
	opts := parquetio.WriterOptions{Codec: "zstd", CompressionLevel: *level, RowGroupBytes: int64(*rowGroupMB) << 20, PageBytes: *pageKB << 10}
	res, err := run(files, *out, *threads, opts, *rowTracking)
	if err != nil {
		log.Fatalf("rewrite: %v", err)
	}
	if *memprofile != "" {
		if f, err := os.Create(*memprofile); err == nil {
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	}
	fmt.Fprintf(os.Stderr, "rewrite: %d files, %d rows, %d bytes, %d inputs through the logical path, %s\n",
		len(files), res.Rows, res.Files[0].Bytes, res.GeneralInputs, time.Since(start).Round(time.Millisecond))
}

func run(files []string, out string, threads int, opts parquetio.WriterOptions, rowTracking bool) (*parquetio.RewriteResult, error) {
	ctx := context.Background()
	var inputs []parquetio.RewriteInput
	for _, p := range files {
		r, err := localfs.Open(p)
		if err != nil {
			return nil, err
		}
		defer r.Close()
		inputs = append(inputs, parquetio.RewriteInput{File: r})
	}
	first, err := parquetio.Open(ctx, inputs[0].File)
	if err != nil {
		return nil, err
	}
	schema, err := first.Schema()
	if err != nil {
		return nil, err
	}
	create := func(i int) (storage.Writer, error) {
		if i > 0 {
			return nil, fmt.Errorf("one output expected")
		}
		return localfs.Create(out)
	}
	ro := parquetio.RewriteOptions{Schema: schema, Parallelism: threads, Writer: opts}
	if rowTracking {
		// The inputs store no materialized values, so every id is computed: the most work.
		schema.Fields = append(schema.Fields,
			&types.StructField{Name: "_row-id-col", Type: types.Primitive(types.TypeLong), Nullable: true},
			&types.StructField{Name: "_row-commit-version-col", Type: types.Primitive(types.TypeLong), Nullable: true})
		ro.RowTracking = &parquetio.RowTrackingColumns{RowID: "_row-id-col", RowCommitVersion: "_row-commit-version-col"}
		for i := range inputs {
			base, version := int64(i)<<32, int64(i)
			inputs[i].RowTracking = parquetio.RowTrackingBase{BaseRowID: &base, DefaultRowCommitVersion: &version}
		}
	}
	return parquetio.Rewrite(ctx, inputs, create, ro)
}
