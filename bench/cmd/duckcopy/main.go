// Command duckcopy compacts a directory of Parquet files into one file with DuckDB — the reference side
// of the compaction benchmark:
//
//	duckcopy -in DIR -out FILE -threads N
//
// runs COPY (SELECT * FROM read_parquet([...])) TO FILE (FORMAT parquet, COMPRESSION zstd) with
// SET threads = N.
package main

import (
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"strings"
	"time"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/deltakeeper/deltakeeper/bench/internal/localfs"
)

func main() {
	in := flag.String("in", "", "input directory of .parquet files")
	out := flag.String("out", "", "output file")
	threads := flag.Int("threads", 2, "DuckDB threads")
	flag.Parse()
	if *in == "" || *out == "" {
		log.Fatal("duckcopy: -in and -out are required")
	}
	files, err := localfs.ParquetFiles(*in)
	if err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	if err := copyFiles(files, *out, *threads); err != nil {
		log.Fatalf("duckcopy: %v", err)
	}
	fmt.Fprintf(os.Stderr, "duckcopy: %d files, %s\n", len(files), time.Since(start).Round(time.Millisecond))
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func copyFiles(files []string, out string, threads int) error {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return err
	}
	defer db.Close()
	db.SetMaxOpenConns(1) // SET applies to the session
	if _, err := db.Exec(fmt.Sprintf("SET threads = %d", threads)); err != nil {
		return err
	}
	quoted := make([]string, len(files))
	for i, f := range files {
		quoted[i] = quote(f)
	}
	_, err = db.Exec(fmt.Sprintf("COPY (SELECT * FROM read_parquet([%s])) TO %s (FORMAT parquet, COMPRESSION zstd)", strings.Join(quoted, ","), quote(out)))
	return err
}
