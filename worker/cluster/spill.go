package cluster

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"sync"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// spiller holds the rows of the waves after the first on local disk: one Parquet file per wave
// (lz4, no dictionaries: written once, read once), each row followed by its rank, so that loading a
// wave places every row without sorting.
type spiller struct {
	dir    string
	schema *types.StructType
	waves  []*spillWave
	bytes  int64
}

type spillWave struct {
	mu   sync.Mutex
	path string
	f    *os.File
	w    *parquetio.Writer
}

// rankColumn is appended to spilled rows.
const rankColumn = "__deltakeeper_rank"

func newSpiller(tmp string, schema *types.StructType, waves int, memoryLimit int64) (*spiller, error) {
	dir, err := os.MkdirTemp(tmp, "deltakeeper-cluster-")
	if err != nil {
		return nil, fmt.Errorf("spill directory in %s (set --tmp-dir to a writable local directory): %w", tmp, err)
	}
	s := &spiller{dir: dir, schema: &types.StructType{Fields: append(append([]*types.StructField{}, schema.Fields...),
		&types.StructField{Name: rankColumn, Type: types.Primitive(types.TypeLong)})}}
	s.waves = make([]*spillWave, waves)
	// Every wave's file is open at once and holds its current row group (encoded, plus the rows being
	// shredded) and a page per column in memory: keep each small, all of them within a few percent of
	// the memory limit.
	perFile := memoryLimit / 32 / int64(waves)
	opts := parquetio.WriterOptions{Codec: "lz4", DictionaryBytes: -1,
		RowGroupBytes: min(max(perFile, 256<<10), 4<<20), PageBytes: int(min(max(perFile/int64(max(len(schema.Fields), 1)), 16<<10), 256<<10))}
	for i := 1; i < waves; i++ {
		p := filepath.Join(dir, fmt.Sprintf("wave-%05d.parquet", i))
		f, err := os.Create(p)
		if err != nil {
			s.remove()
			return nil, fmt.Errorf("create spill file: %w", err)
		}
		w, err := parquetio.NewWriter(f, s.schema, opts)
		if err != nil {
			f.Close()
			s.remove()
			return nil, err
		}
		s.waves[i] = &spillWave{path: p, f: f, w: w}
	}
	return s, nil
}

// spillRouter buffers one reader's rows per wave and hands them to the wave's file in batches.
type spillRouter struct {
	s   *spiller
	buf [][]types.Struct
}

func (s *spiller) router() *spillRouter {
	return &spillRouter{s: s, buf: make([][]types.Struct, len(s.waves))}
}

func (r *spillRouter) add(wave int, row types.Struct, rank int) error {
	r.buf[wave] = append(r.buf[wave], append(row, int64(rank)))
	if len(r.buf[wave]) >= writeBatch {
		return r.flushWave(wave)
	}
	return nil
}

func (r *spillRouter) flushWave(wave int) error {
	if len(r.buf[wave]) == 0 {
		return nil
	}
	sw := r.s.waves[wave]
	sw.mu.Lock()
	err := sw.w.Write(r.buf[wave])
	sw.mu.Unlock()
	r.buf[wave] = r.buf[wave][:0]
	if err != nil {
		return fmt.Errorf("spill to %s: %w", sw.path, err)
	}
	return nil
}

func (r *spillRouter) flush() error {
	for w := range r.buf {
		if err := r.flushWave(w); err != nil {
			return err
		}
	}
	return nil
}

// finish closes every spill file.
func (s *spiller) finish() error {
	for _, sw := range s.waves[1:] {
		res, err := sw.w.Close()
		if err == nil {
			s.bytes += res.Bytes
		}
		err = errors.Join(err, sw.f.Close())
		if err != nil {
			return fmt.Errorf("spill file %s: %w", sw.path, err)
		}
	}
	return nil
}

// load reads wave i back: n rows, each placed at its rank minus base.
func (s *spiller) load(ctx context.Context, i, base, n int) ([]types.Struct, error) {
	sw := s.waves[i]
	f, err := os.Open(sw.path)
	if err != nil {
		return nil, fmt.Errorf("open spill file: %w", err)
	}
	defer f.Close()
	fi, err := f.Stat()
	if err != nil {
		return nil, err
	}
	pf, err := parquetio.Open(ctx, localFile{f, fi.Size()})
	if err != nil {
		return nil, fmt.Errorf("spill file %s: %w", sw.path, err)
	}
	rr, err := pf.Rows(ctx, s.schema, parquetio.ReadOptions{})
	if err != nil {
		return nil, err
	}
	defer rr.Close()
	rows := make([]types.Struct, n)
	last := len(s.schema.Fields) - 1
	got := 0
	for {
		b, err := rr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil, fmt.Errorf("spill file %s: %w", sw.path, err)
		}
		for _, row := range b.Rows {
			r, _ := row[last].(int64)
			at := int(r) - base
			if at < 0 || at >= n || rows[at] != nil {
				return nil, fmt.Errorf("spill file %s: rank %d is outside wave %d or repeated", sw.path, r, i)
			}
			rows[at] = row[:last]
			got++
		}
	}
	if got != n {
		return nil, fmt.Errorf("spill file %s: %d rows, expected %d", sw.path, got, n)
	}
	// The file is no longer needed: free the disk early.
	os.Remove(sw.path)
	return rows, nil
}

// remove deletes the spill directory.
func (s *spiller) remove() { os.RemoveAll(s.dir) }

// localFile is a storage.ReaderAt over an open local file.
type localFile struct {
	*os.File
	size int64
}

func (l localFile) Size() int64 { return l.size }
