// Command compact compacts a directory of Parquet files into one file, with our engine or with DuckDB,
// so that the benchmark driver can run and measure each in its own process:
//
//	compact ours   -in DIR -out FILE -threads N [-cpuprofile F]
//	compact duckdb -in DIR -out FILE -threads N
//
// Both write zstd (level 3). "ours" reads the schema from the first input file, as a table's schema
// would come from its log.
package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"runtime/pprof"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/deltakeeper/deltakeeper/bench/internal/localfs"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func main() {
	if len(os.Args) < 2 {
		log.Fatal("usage: compact ours|duckdb -in DIR -out FILE -threads N")
	}
	tool := os.Args[1]
	fs := flag.NewFlagSet(tool, flag.ExitOnError)
	in := fs.String("in", "", "input directory of .parquet files")
	out := fs.String("out", "", "output file")
	threads := fs.Int("threads", 2, "threads")
	cpuprofile := fs.String("cpuprofile", "", "write a CPU profile (ours)")
	memprofile := fs.String("memprofile", "", "write an allocation profile (ours)")
	rowGroupMB := fs.Int("rowgroup-mb", 0, "target row group size in MB (ours; 0 = default)")
	level := fs.Int("level", 0, "zstd level (ours; 0 = default 3)")
	fs.Parse(os.Args[2:])
	if *in == "" || *out == "" {
		log.Fatal("compact: -in and -out are required")
	}
	files, err := localfs.ParquetFiles(*in)
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	switch tool {
	case "ours":
		if *cpuprofile != "" {
			f, err := os.Create(*cpuprofile)
			if err != nil {
				log.Fatal(err)
			}
			pprof.StartCPUProfile(f)
			defer pprof.StopCPUProfile()
		}
		err = ours(files, *out, *threads, int64(*rowGroupMB)<<20, *level)
		if *memprofile != "" {
			f, err := os.Create(*memprofile)
			if err != nil {
				log.Fatal(err)
			}
			pprof.Lookup("allocs").WriteTo(f, 0)
			f.Close()
		}
	case "duckdb":
		err = duck(files, *out, *threads)
	default:
		log.Fatalf("compact: unknown tool %q", tool)
	}
	if err != nil {
		log.Fatalf("compact %s: %v", tool, err)
	}
	fmt.Fprintf(os.Stderr, "compact %s: %d files in %s\n", tool, len(files), time.Since(start).Round(time.Millisecond))
}

func ours(files []string, out string, threads int, rowGroupBytes int64, level int) error {
	ctx := context.Background()
	var inputs []parquetio.RewriteInput
	for _, p := range files {
		r, err := localfs.Open(p)
		if err != nil {
			return err
		}
		defer r.Close()
		inputs = append(inputs, parquetio.RewriteInput{File: r})
	}
	first, err := parquetio.Open(ctx, inputs[0].File)
	if err != nil {
		return err
	}
	schema, err := first.Schema()
	if err != nil {
		return err
	}
	create := func(i int) (storage.Writer, error) {
		if i > 0 {
			return nil, fmt.Errorf("single output expected")
		}
		return localfs.Create(out)
	}
	res, err := parquetio.Rewrite(ctx, inputs, create, parquetio.RewriteOptions{
		Schema:      schema,
		Parallelism: threads,
		Writer:      parquetio.WriterOptions{Codec: "zstd", CompressionLevel: level, RowGroupBytes: rowGroupBytes},
	})
	if err != nil {
		return err
	}
	fmt.Fprintf(os.Stderr, "ours: %d rows, %d bytes, %d inputs through the logical path\n", res.Rows, res.Files[0].Bytes, res.GeneralInputs)
	return nil
}

func duck(files []string, out string, threads int) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	// one connection: SET applies to the session
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(fmt.Sprintf("SET threads = %d", threads)); err != nil {
		return err
	}
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = "'" + strings.ReplaceAll(f, "'", "''") + "'"
	}
	q := fmt.Sprintf("COPY (SELECT * FROM read_parquet([%s])) TO '%s' (FORMAT parquet, COMPRESSION zstd)", strings.Join(quoted, ","), strings.ReplaceAll(out, "'", "''"))
	_, err = db.Exec(q)
	return err
}
