// Command readerbench compares the text readers an ingest could use, on the benchmark's CSV and
// NDJSON sources (bench/ingest.sh generates them): apache/arrow-go's csv.Reader and JSONReader
// producing Arrow records, and deltakeeper's own readers (worker/ingest/format) producing the
// column vectors the Parquet encoder takes (NextColumns) and, for reference, logical rows (Next).
// Each reader parses every file of the directory on one goroutine; the figure is rows per CPU
// second (rusage of this process), so the machine's load matters little.
//
//	readerbench -src DIR/src1x [-files 10]
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"log"
	"os"
	"path/filepath"
	"runtime"
	"sort"
	"syscall"
	"time"

	"github.com/apache/arrow-go/v18/arrow"
	"github.com/apache/arrow-go/v18/arrow/array"
	"github.com/apache/arrow-go/v18/arrow/csv"

	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func cpuTime() time.Duration {
	var ru syscall.Rusage
	syscall.Getrusage(syscall.RUSAGE_SELF, &ru)
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// The benchmark's columns (cmd/gen's events).
var arrowSchema = arrow.NewSchema([]arrow.Field{
	{Name: "id", Type: arrow.PrimitiveTypes.Int64, Nullable: true},
	{Name: "ts", Type: &arrow.TimestampType{Unit: arrow.Microsecond}, Nullable: true},
	{Name: "region", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "user_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "event_id", Type: arrow.BinaryTypes.String, Nullable: true},
	{Name: "amount", Type: arrow.PrimitiveTypes.Float64, Nullable: true},
	{Name: "qty", Type: arrow.PrimitiveTypes.Int32, Nullable: true},
	{Name: "status", Type: arrow.BinaryTypes.String, Nullable: true},
}, nil)

func deltaSchema() *types.StructType {
	col := func(n, t string) *types.StructField {
		return &types.StructField{Name: n, Type: types.Primitive(t), Nullable: true}
	}
	return &types.StructType{Fields: []*types.StructField{col("id", types.TypeLong), col("ts", types.TypeTimestamp),
		col("region", types.TypeString), col("user_id", types.TypeString), col("event_id", types.TypeString),
		col("amount", types.TypeDouble), col("qty", types.TypeInteger), col("status", types.TypeString)}}
}

func main() {
	src := flag.String("src", "", "directory with csv/ and json/ from `ingestbench sources`")
	nfiles := flag.Int("files", 10, "files per format")
	flag.Parse()
	runtime.GOMAXPROCS(1)
	fmt.Println("| format | reader | output | rows | CPU s | rows per CPU-second |")
	fmt.Println("|---|---|---|---|---|---|")
	for _, f := range []string{"csv", "json"} {
		dir := filepath.Join(*src, f)
		names, err := filepath.Glob(filepath.Join(dir, "*"))
		if err != nil || len(names) == 0 {
			log.Fatalf("no %s files in %s", f, dir)
		}
		sort.Strings(names)
		names = names[:min(*nfiles, len(names))]
		for _, r := range []struct {
			name, out string
			read      func(path string) (int64, error)
		}{
			{"apache/arrow-go " + map[string]string{"csv": "csv.Reader", "json": "array.JSONReader"}[f], "Arrow records", func(p string) (int64, error) { return readArrow(f, p) }},
			{"deltakeeper format", "column vectors (NextColumns)", func(p string) (int64, error) { return readOurs(f, p, true) }},
			{"deltakeeper format", "logical rows (Next)", func(p string) (int64, error) { return readOurs(f, p, false) }},
		} {
			runtime.GC()
			start := cpuTime()
			var rows int64
			for _, p := range names {
				n, err := r.read(p)
				if err != nil {
					log.Fatalf("%s %s: %v", r.name, p, err)
				}
				rows += n
			}
			cpu := cpuTime() - start
			fmt.Printf("| %s | %s | %s | %d | %.2f | %.0f |\n", f, r.name, r.out, rows, cpu.Seconds(), float64(rows)/cpu.Seconds())
		}
	}
}

func readArrow(f, path string) (int64, error) {
	fh, err := os.Open(path)
	if err != nil {
		return 0, err
	}
	defer fh.Close()
	var rows int64
	if f == "csv" {
		r := csv.NewReader(fh, arrowSchema, csv.WithHeader(true), csv.WithChunk(4096), csv.WithNullReader(true, ""))
		defer r.Release()
		for r.Next() {
			rows += r.Record().NumRows()
		}
		return rows, r.Err()
	}
	r := array.NewJSONReader(fh, arrowSchema, array.WithChunk(4096))
	defer r.Release()
	for r.Next() {
		rows += r.Record().NumRows()
	}
	return rows, r.Err()
}

func readOurs(f, path string, columns bool) (int64, error) {
	ctx := context.Background()
	store, err := storage.NewLocal(filepath.Dir(path))
	if err != nil {
		return 0, err
	}
	info, err := os.Stat(path)
	if err != nil {
		return 0, err
	}
	kv := map[string]string{}
	if f == "csv" {
		kv["header"] = "true"
	}
	o, err := format.ParseOptions(f, kv, format.FailOnNewColumns)
	if err != nil {
		return 0, err
	}
	file := source.File{Key: filepath.Base(path), Size: info.Size(), ModTime: info.ModTime()}
	rd, err := format.Open(ctx, store, file, "file://"+path, deltaSchema(), &o)
	if err != nil {
		return 0, err
	}
	defer rd.Close()
	var rows int64
	cr, ok := rd.(format.ColumnReader)
	if columns && (!ok || !cr.Columnar()) {
		return 0, fmt.Errorf("the %s reader is not columnar", f)
	}
	for {
		if columns {
			b, err := cr.NextColumns()
			if err == io.EOF {
				return rows, nil
			}
			if err != nil {
				return 0, err
			}
			rows += int64(b.Rows)
			continue
		}
		rs, err := rd.Next()
		if err == io.EOF {
			return rows, nil
		}
		if err != nil {
			return 0, err
		}
		rows += int64(len(rs))
	}
}
