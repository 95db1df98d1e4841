package parquetio

import (
	"encoding/binary"
	"fmt"
	"runtime"
	"strings"
	"sync"

	"github.com/klauspost/compress/zstd"
	"github.com/parquet-go/parquet-go/compress/brotli"
	"github.com/parquet-go/parquet-go/compress/gzip"
	"github.com/parquet-go/parquet-go/compress/lz4"
	"github.com/parquet-go/parquet-go/compress/snappy"
	pqzstd "github.com/parquet-go/parquet-go/compress/zstd"
	"github.com/parquet-go/parquet-go/format"
	pierrec "github.com/pierrec/lz4/v4"
)

// codecFor maps Delta's delta.parquet.compression.codec values (case-insensitive; "" means zstd, the
// protocol's recommended default; "lz4" means LZ4_RAW, the only LZ4 framing every reader agrees on) to
// a compressor. level is the codec's own level (zstd 1–22, gzip 1–9, brotli 0–11); 0 keeps the
// default, which for zstd is level 1 with entropy coding of every block (see zstdCompressor): on the
// compaction benchmark it takes 30% less CPU than level 3 and writes 1.5% smaller files
// (bench/RESULTS.md). A nil compressor means uncompressed.
func codecFor(name string, level int) (pageCompressor, format.CompressionCodec, error) {
	switch strings.ToLower(strings.TrimSpace(name)) {
	case "", "zstd":
		l := zstd.SpeedFastest
		if level != 0 {
			l = zstd.EncoderLevelFromZstd(level)
		}
		return sharedZstdCompressor(l), format.Zstd, nil
	case "snappy":
		return codecCompressor{&snappy.Codec{}}, format.Snappy, nil
	case "gzip":
		c := &gzip.Codec{Level: gzip.DefaultCompression}
		if level != 0 {
			c.Level = level
		}
		return codecCompressor{c}, format.Gzip, nil
	case "lz4", "lz4_raw", "lz4raw":
		return codecCompressor{&lz4.Codec{}}, format.Lz4Raw, nil
	case "brotli":
		c := &brotli.Codec{Quality: 4}
		if level != 0 {
			c.Quality = level
		}
		return codecCompressor{c}, format.Brotli, nil
	case "uncompressed", "none":
		return nil, format.Uncompressed, nil
	}
	return nil, 0, fmt.Errorf("unsupported parquet compression codec %q; use zstd, snappy, gzip, lz4_raw, brotli or uncompressed", name)
}

// zstdCompressors are the process's zstd compressors, one per level: every writer and rewrite of a
// level shares its free list of encoders, so a merge that rewrites twenty files (or a compaction of
// many outputs) builds its encoders and their history buffers once, not once per file.
var zstdCompressors sync.Map // zstd.EncoderLevel → *zstdCompressor

func sharedZstdCompressor(l zstd.EncoderLevel) *zstdCompressor {
	if c, ok := zstdCompressors.Load(l); ok {
		return c.(*zstdCompressor)
	}
	c, _ := zstdCompressors.LoadOrStore(l, newZstdCompressor(l, 2*runtime.GOMAXPROCS(0)))
	return c.(*zstdCompressor)
}

// Decoders are stateless apart from their pools, so one of each serves every reader.
var (
	snappyDecoder snappy.Codec
	zstdDecoder   pqzstd.Codec
	gzipDecoder   gzip.Codec
	brotliDecoder brotli.Codec
)

// decompress inflates one page body of known uncompressed size into dst (reused when large enough).
func decompress(codec format.CompressionCodec, dst, src []byte, size int) ([]byte, error) {
	switch codec {
	case format.Uncompressed:
		return src, nil
	case format.Snappy:
		return snappyDecoder.Decode(dst[:cap(dst)], src)
	case format.Zstd:
		return zstdDecoder.Decode(dst[:0], src)
	case format.Gzip:
		return gzipDecoder.Decode(dst[:0], src)
	case format.Brotli:
		return brotliDecoder.Decode(dst[:0], src)
	case format.Lz4Raw:
		return lz4Block(dst, src, size)
	case format.Lz4:
		return lz4Hadoop(dst, src, size)
	}
	return nil, fmt.Errorf("unsupported compression codec %s", codec)
}

func lz4Block(dst, src []byte, size int) ([]byte, error) {
	dst = grow(dst, size)
	n, err := pierrec.UncompressBlock(src, dst)
	if err != nil {
		return nil, err
	}
	if n != size {
		return nil, fmt.Errorf("lz4 block inflated to %d bytes, header says %d", n, size)
	}
	return dst[:n], nil
}

// lz4Hadoop decodes the deprecated LZ4 codec: parquet-mr wrote Hadoop's framing (big-endian
// uncompressed and compressed lengths before each block), some other writers a bare block.
func lz4Hadoop(dst, src []byte, size int) ([]byte, error) {
	out := grow(dst, size)[:0]
	rest := src
	for len(rest) >= 8 {
		ulen := int(binary.BigEndian.Uint32(rest))
		clen := int(binary.BigEndian.Uint32(rest[4:]))
		if clen > len(rest)-8 || len(out)+ulen > size {
			break
		}
		n, err := pierrec.UncompressBlock(rest[8:8+clen], out[len(out):len(out)+ulen])
		if err != nil || n != ulen {
			break
		}
		out = out[:len(out)+ulen]
		rest = rest[8+clen:]
		if len(rest) == 0 && len(out) == size {
			return out, nil
		}
	}
	return lz4Block(dst, src, size)
}
