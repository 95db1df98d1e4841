// Command colbench is the prototype that evaluates apache/arrow-go's typed column readers
// (github.com/apache/arrow-go/v18/parquet/file) against deltakeeper's columnar reader
// (parquetio.File.Columns) on a checkpoint: both decode add.path, add.size and add.stats of every
// row, one goroutine, row group by row group, and print what they decoded so that the two can be
// checked against each other. Run each mode in its own process under /usr/bin/time for CPU time
// and peak RSS (bench/RESULTS.md, "arrow-go typed column readers").
//
//	colbench ours|arrow -file CHECKPOINT.parquet [-keep] [-checksum] [-buffered]
//
// -buffered makes arrow-go read column chunks through a 1 MiB buffered stream rather than whole;
// -checksum adds a CRC-32 of every decoded string to the output (equal output: equal values);
// -keep copies every path and stats string into memory that is kept until the end, as a snapshot
// keeps them; without it the bytes are only counted.
package main

import (
	"context"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"hash/crc32"
	"io"
	"os"
	"path/filepath"
	"time"

	"github.com/apache/arrow-go/v18/arrow/memory"
	"github.com/apache/arrow-go/v18/parquet"
	"github.com/apache/arrow-go/v18/parquet/file"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

const batchSize = 4096

// summary is what a decoder saw: equal summaries mean both decoded the same values.
type summary struct {
	Adds       int64    `json:"adds"`      // rows with a non-null add.path
	SizeSum    int64    `json:"sizeSum"`   // sum of add.size
	PathBytes  int64    `json:"pathBytes"` // total length of add.path
	StatsBytes int64    `json:"statsBytes"`
	StatsNull  int64    `json:"statsNull"`
	Checksum   uint32   `json:"checksum"` // CRC-32 of every path and stats, in row order (-checksum)
	Seconds    float64  `json:"seconds"`  // in-process, decoding only
	keep       [][]byte // chunks of keepChunk bytes, as a snapshot's string arenas
	doKeep     bool
	doCRC      bool
}

const keepChunk = 1 << 20

// retain copies b into the current chunk, starting a new one when it is full.
func (s *summary) retain(b []byte) {
	n := len(s.keep)
	if n == 0 || len(s.keep[n-1])+len(b) > cap(s.keep[n-1]) {
		s.keep = append(s.keep, make([]byte, 0, max(keepChunk, len(b))))
		n++
	}
	s.keep[n-1] = append(s.keep[n-1], b...)
}

func (s *summary) path(b []byte) {
	s.Adds++
	s.PathBytes += int64(len(b))
	if s.doCRC {
		s.Checksum = crc32.Update(s.Checksum, crc32.IEEETable, b)
	}
	if s.doKeep {
		s.retain(b)
	}
}

func (s *summary) stats(b []byte, null bool) {
	if null {
		s.StatsNull++
		return
	}
	s.StatsBytes += int64(len(b))
	if s.doCRC {
		s.Checksum = crc32.Update(s.Checksum, crc32.IEEETable, b)
	}
	if s.doKeep {
		s.retain(b)
	}
}

func main() {
	if len(os.Args) < 2 {
		fmt.Fprintln(os.Stderr, "usage: colbench ours|arrow -file CHECKPOINT.parquet [-keep]")
		os.Exit(2)
	}
	fs := flag.NewFlagSet(os.Args[1], flag.ExitOnError)
	path := fs.String("file", "", "checkpoint Parquet file")
	keep := fs.Bool("keep", false, "keep a copy of every path and stats string")
	buffered := fs.Bool("buffered", false, "arrow: read column chunks through a buffered stream instead of whole")
	check := fs.Bool("checksum", false, "CRC-32 every path and stats string (to compare the decoders; costs time)")
	fs.Parse(os.Args[2:])
	s := &summary{doKeep: *keep, doCRC: *check}
	start := time.Now()
	var err error
	switch os.Args[1] {
	case "ours":
		err = decodeOurs(context.Background(), *path, s)
	case "arrow":
		err = decodeArrow(*path, *buffered, s)
	default:
		err = fmt.Errorf("unknown mode %q", os.Args[1])
	}
	s.Seconds = time.Since(start).Seconds()
	if err != nil {
		fmt.Fprintln(os.Stderr, "colbench:", err)
		os.Exit(1)
	}
	json.NewEncoder(os.Stdout).Encode(s)
}

func decodeOurs(ctx context.Context, path string, s *summary) error {
	store, err := storage.NewLocal(filepath.Dir(path))
	if err != nil {
		return err
	}
	r, err := store.Open(ctx, filepath.Base(path))
	if err != nil {
		return err
	}
	defer r.Close()
	f, err := parquetio.Open(ctx, r)
	if err != nil {
		return err
	}
	str, long := types.Primitive(types.TypeString), types.Primitive(types.TypeLong)
	schema := &types.StructType{Fields: []*types.StructField{{Name: "add", Nullable: true, Type: &types.StructType{Fields: []*types.StructField{
		{Name: "path", Type: str, Nullable: true}, {Name: "size", Type: long, Nullable: true}, {Name: "stats", Type: str, Nullable: true},
	}}}}}
	cr, err := f.Columns(ctx, schema, parquetio.ColumnOptions{BatchSize: batchSize})
	if err != nil {
		return err
	}
	defer cr.Close()
	for {
		b, err := cr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		add := b.Column(0)
		p, size, stats := add.Field(0), add.Field(1), add.Field(2)
		for i := range b.Len() {
			if p.IsNull(i) {
				continue
			}
			s.path(p.Bytes(i))
			s.SizeSum += size.Long(i)
			s.stats(stats.Bytes(i), stats.IsNull(i))
		}
	}
}

// decodeArrow reads the same three leaf columns with arrow-go's typed column chunk readers. The
// columns are read in step, batch by batch, so that each row's path, size and stats meet as they
// do in a decoder that builds actions.
func decodeArrow(path string, buffered bool, s *summary) error {
	props := parquet.NewReaderProperties(memory.DefaultAllocator)
	if buffered {
		props.BufferedStreamEnabled = true
		props.BufferSize = 1 << 20
	}
	rdr, err := file.OpenParquetFile(path, false, file.WithReadProps(props))
	if err != nil {
		return err
	}
	defer rdr.Close()
	sch := rdr.MetaData().Schema
	cols := [3]int{sch.ColumnIndexByName("add.path"), sch.ColumnIndexByName("add.size"), sch.ColumnIndexByName("add.stats")}
	for _, c := range cols {
		if c < 0 {
			return fmt.Errorf("%s lacks add.path, add.size or add.stats", path)
		}
	}
	var (
		paths, statsVals        = make([]parquet.ByteArray, batchSize), make([]parquet.ByteArray, batchSize)
		sizes                   = make([]int64, batchSize)
		pathDefs, sizeDefs      = make([]int16, batchSize), make([]int16, batchSize)
		statsDefs               = make([]int16, batchSize)
		maxPath, maxSize, maxSt = sch.Column(cols[0]).MaxDefinitionLevel(), sch.Column(cols[1]).MaxDefinitionLevel(), sch.Column(cols[2]).MaxDefinitionLevel()
	)
	for rg := range rdr.NumRowGroups() {
		g := rdr.RowGroup(rg)
		pc, err := g.Column(cols[0])
		if err != nil {
			return err
		}
		sc, err := g.Column(cols[1])
		if err != nil {
			return err
		}
		tc, err := g.Column(cols[2])
		if err != nil {
			return err
		}
		pr, ok1 := pc.(*file.ByteArrayColumnChunkReader)
		sr, ok2 := sc.(*file.Int64ColumnChunkReader)
		tr, ok3 := tc.(*file.ByteArrayColumnChunkReader)
		if !ok1 || !ok2 || !ok3 {
			return fmt.Errorf("unexpected physical types of add.path, add.size, add.stats")
		}
		for left := g.NumRows(); left > 0; {
			n := min(int64(batchSize), left)
			pn, _, err := pr.ReadBatch(n, paths, pathDefs, nil)
			if err != nil {
				return err
			}
			sn, _, err := sr.ReadBatch(n, sizes, sizeDefs, nil)
			if err != nil {
				return err
			}
			tn, _, err := tr.ReadBatch(n, statsVals, statsDefs, nil)
			if err != nil {
				return err
			}
			if pn != n || sn != n || tn != n {
				return fmt.Errorf("row group %d: read %d, %d, %d levels of %d", rg, pn, sn, tn, n)
			}
			// values are packed (nulls take no slot): walk the levels
			pi, si, ti := 0, 0, 0
			for i := range int(n) {
				pPresent := pathDefs[i] == maxPath
				sPresent := sizeDefs[i] == maxSize
				tPresent := statsDefs[i] == maxSt
				if pPresent {
					s.path(paths[pi])
					pi++
					if sPresent {
						s.SizeSum += sizes[si]
					}
					if tPresent {
						s.stats(statsVals[ti], false)
					} else {
						s.stats(nil, true)
					}
				}
				if sPresent && !pPresent || tPresent && !pPresent {
					return fmt.Errorf("row group %d: add.size or add.stats without add.path", rg)
				}
				if sPresent {
					si++
				}
				if tPresent {
					ti++
				}
			}
			left -= n
		}
	}
	return nil
}
