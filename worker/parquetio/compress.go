package parquetio

import (
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/compress"
)

// pageCompressor compresses page bodies. Each call may run concurrently with others.
type pageCompressor interface {
	compress(dst, src []byte) ([]byte, error)
}

// codecCompressor adapts a parquet-go codec.
type codecCompressor struct{ codec compress.Codec }

func (c codecCompressor) compress(dst, src []byte) ([]byte, error) { return c.codec.Encode(dst, src) }

// zstdCompressor keeps zstd encoders on a free list of its own. parquet-go's codec pools them in a
// sync.Pool, which the GC empties: every collection then costs new encoders and their history buffers
// (a quarter of all allocations of a rewrite). The list is bounded so a burst of concurrency does not
// pin encoders forever.
type zstdCompressor struct {
	level zstd.EncoderLevel
	mu    sync.Mutex
	free  []*zstd.Encoder
	keep  int
}

func newZstdCompressor(level zstd.EncoderLevel, keep int) *zstdCompressor {
	return &zstdCompressor{level: level, keep: keep}
}

func (z *zstdCompressor) compress(dst, src []byte) ([]byte, error) {
	z.mu.Lock()
	var e *zstd.Encoder
	if n := len(z.free); n > 0 {
		e, z.free = z.free[n-1], z.free[:n-1]
	}
	z.mu.Unlock()
	if e == nil {
		var err error
		e, err = zstd.NewWriter(nil,
			zstd.WithEncoderLevel(z.level),
			zstd.WithEncoderConcurrency(1),
			zstd.WithZeroFrames(true),
			zstd.WithEncoderCRC(false),
			// Pages are compressed one by one and rarely exceed 1 MiB: a larger window (8 MiB by
			// default) would only grow every encoder's history buffer.
			zstd.WithWindowSize(1<<20),
			zstd.WithLowerEncoderMem(true),
			// The fastest level skips entropy coding of blocks without matches; Parquet pages of ids,
			// hashes and uuids are exactly that (few matches, skewed bytes): coding them anyway makes
			// level 1 files smaller than level 3's (uuid strings: 51% instead of 54% of PLAIN).
			zstd.WithAllLitEntropyCompression(true),
		)
		if err != nil {
			return nil, err
		}
	}
	out := e.EncodeAll(src, dst[:0])
	z.mu.Lock()
	if len(z.free) < z.keep {
		z.free = append(z.free, e)
	}
	z.mu.Unlock()
	return out, nil
}
