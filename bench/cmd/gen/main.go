// Command gen writes the compaction benchmark's input: Spark-like event files (all columns nullable,
// snappy, data page v1, INT96 timestamps as Spark writes by default, dictionary encoding except for the
// uuid column, whose 1.8 MB dictionary per file exceeds parquet-mr's 1 MiB limit so that Spark writes it
// PLAIN), deterministic for a given seed.
//
//	gen -out DIR -files 40 -rows 50000
package main

import (
	"flag"
	"fmt"
	"log"
	"math/rand/v2"
	"os"
	"path/filepath"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/deprecated"
)

// event is one row. Field order is the file's column order.
type event struct {
	ID      *int64            `parquet:"id,optional"`
	TS      *deprecated.Int96 `parquet:"ts,optional"`
	Region  *string           `parquet:"region,optional"`
	UserID  *string           `parquet:"user_id,optional"`
	EventID *string           `parquet:"event_id,optional,plain"`
	Amount  *float64          `parquet:"amount,optional"`
	Qty     *int32            `parquet:"qty,optional"`
	Status  *string           `parquet:"status,optional"`
}

var statuses = []string{"ok", "error", "pending", "cancelled", "refunded"}

// int96 encodes microseconds since the epoch as Spark does: nanoseconds of the day, then the Julian day.
func int96(micros int64) deprecated.Int96 {
	day := micros / 86_400_000_000
	rem := micros % 86_400_000_000
	if rem < 0 {
		rem += 86_400_000_000
		day--
	}
	nanos := uint64(rem * 1000)
	return deprecated.Int96{uint32(nanos), uint32(nanos >> 32), uint32(day + 2_440_588)}
}

func uuidLike(r *rand.Rand) string {
	const hex = "0123456789abcdef"
	b := make([]byte, 36)
	for i := range b {
		switch i {
		case 8, 13, 18, 23:
			b[i] = '-'
		default:
			b[i] = hex[r.IntN(16)]
		}
	}
	return string(b)
}

func ptr[T any](v T) *T { return &v }

func main() {
	out := flag.String("out", "", "output directory")
	files := flag.Int("files", 40, "number of files")
	rows := flag.Int("rows", 50_000, "rows per file")
	seed := flag.Uint64("seed", 1, "random seed")
	flag.Parse()
	if *out == "" {
		log.Fatal("gen: -out is required")
	}
	if err := os.MkdirAll(*out, 0o755); err != nil {
		log.Fatal(err)
	}
	start := time.Now()
	base := time.Date(2024, 1, 1, 0, 0, 0, 0, time.UTC).UnixMicro()
	var total int64
	for f := range *files {
		r := rand.New(rand.NewPCG(*seed, uint64(f)))
		batch := make([]event, 0, *rows)
		for i := range *rows {
			id := int64(f)*int64(*rows) + int64(i)
			e := event{
				ID:      ptr(id),
				TS:      ptr(int96(base + id*1_000 + r.Int64N(1_000_000))),
				UserID:  ptr(fmt.Sprintf("user-%07d", r.IntN(500_000))),
				EventID: ptr(uuidLike(r)),
				Qty:     ptr(int32(1 + r.IntN(1000))),
			}
			if r.IntN(100) != 0 {
				e.Region = ptr(fmt.Sprintf("region-%02d", r.IntN(20)))
			}
			if id%97 != 0 {
				e.Amount = ptr(float64(r.IntN(10_000_000)) / 100)
			}
			if r.IntN(20) != 0 {
				e.Status = ptr(statuses[r.IntN(len(statuses))])
			}
			batch = append(batch, e)
		}
		path := filepath.Join(*out, fmt.Sprintf("part-%05d-%08x.c000.snappy.parquet", f, r.Uint32()))
		n, err := write(path, batch)
		if err != nil {
			log.Fatal(err)
		}
		total += n
	}
	fmt.Printf("gen: %d files, %d rows, %.1f MB in %s\n", *files, *files**rows, float64(total)/1e6, time.Since(start).Round(time.Millisecond))
}

func write(path string, rows []event) (int64, error) {
	f, err := os.Create(path)
	if err != nil {
		return 0, err
	}
	w := parquet.NewGenericWriter[event](f,
		parquet.Compression(&parquet.Snappy),
		parquet.DataPageVersion(1),
		parquet.DefaultEncoding(&parquet.RLEDictionary),
		parquet.DictionaryMaxBytes(1<<20),
		parquet.PageBufferSize(1<<20),
	)
	if _, err := w.Write(rows); err != nil {
		f.Close()
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	if err := w.Close(); err != nil {
		f.Close()
		return 0, fmt.Errorf("write %s: %w", path, err)
	}
	st, err := f.Stat()
	if err != nil {
		f.Close()
		return 0, err
	}
	return st.Size(), f.Close()
}
