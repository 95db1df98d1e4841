package parquetio

import (
	"encoding/binary"
	"fmt"
	"math/bits"

	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// encoderConfig is shared by the encoders of one output file.
type encoderConfig struct {
	codec     pageCompressor // nil for uncompressed
	codecID   format.CompressionCodec
	pageBytes int   // target uncompressed size of a data page
	pageRows  int64 // rows after which a data page is cut; negative for no cap
	dict      dictConfig
	pool      *compressPool // compresses data pages concurrently; nil compresses inline
}

// pageInfo is what the page index and the chunk statistics need from one data page.
type pageInfo struct {
	size      int // header + compressed body
	firstRow  int64
	numValues int
	nulls     int
	bounds    pageBounds
}

// encodedChunk is a finished column chunk held in memory until its row group is written.
type encodedChunk struct {
	leaf         *leafDesc
	dictPage     []byte // header + body, nil without dictionary
	jobs         []*pageJob
	pages        [][]byte
	infos        []pageInfo
	numValues    int64
	nulls        int64
	rows         int64
	uncompressed int64
	compressed   int64
	bounds       pageBounds
	encodings    []format.Encoding
	encStats     []format.PageEncodingStats
}

// columnEncoder turns batches of one leaf column into compressed data pages (data page v1, cut at record
// boundaries) and a dictionary page, one column chunk per row group.
type columnEncoder struct {
	leaf *leafDesc
	cfg  *encoderConfig
	vals valueEncoder

	defs, reps  []byte
	pageVals    int
	pageNulls   int
	pageRows    int64
	pending     bool // the page is full but the last batch may have ended inside a record
	chunkRows   int64
	chunk       *encodedChunk
	bodyScratch []byte
	lvlScratch  []byte
	zScratch    []byte
	hw          *headerWriter
}

func newColumnEncoder(leaf *leafDesc, cfg *encoderConfig) *columnEncoder {
	e := &columnEncoder{leaf: leaf, cfg: cfg}
	switch leaf.phys {
	case format.Boolean:
		e.vals = &boolEncoder{}
	case format.Int32:
		e.vals = newFixedEncoder[int32, uint32](cfg.dict, leaf.order)
	case format.Int64:
		e.vals = newFixedEncoder[int64, uint64](cfg.dict, leaf.order)
	case format.Float:
		e.vals = newFixedEncoder[float32, uint32](cfg.dict, leaf.order)
	case format.Double:
		e.vals = newFixedEncoder[float64, uint64](cfg.dict, leaf.order)
	case format.FixedLenByteArray:
		e.vals = newBytesEncoder(cfg.dict, leaf.order, leaf.typeLen)
	default:
		e.vals = newBytesEncoder(cfg.dict, leaf.order, 0)
	}
	e.chunk = &encodedChunk{leaf: leaf}
	return e
}

// writeStep bounds how many triplets are appended before the page size is checked, so pages overshoot
// their target by at most one step.
const writeStep = 4096

func countEqual(levels []byte, v byte) int {
	n := 0
	for _, l := range levels {
		if l == v {
			n++
		}
	}
	return n
}

// write appends a batch to the current row group's chunk. A batch may end inside a record (its next
// triplets come in the next batch); pages are only ever cut where a record starts.
func (e *columnEncoder) write(b *columnBatch) error {
	if b.n == 0 {
		return nil
	}
	if e.pending && (e.leaf.maxRep == 0 || b.reps[0] == 0) {
		if err := e.cut(); err != nil {
			return err
		}
	}
	maxDef := byte(e.leaf.maxDef)
	pos, vpos := 0, 0
	for pos < b.n {
		end := min(b.n, pos+writeStep)
		if e.cfg.pageRows > 0 && e.leaf.maxRep == 0 {
			end = min(end, pos+int(max(e.cfg.pageRows-e.pageRows, 1)))
		}
		if e.leaf.maxRep > 0 {
			for end < b.n && b.reps[end] != 0 {
				end++
			}
		}
		nv, rows := end-pos, int64(end-pos)
		if e.leaf.maxDef > 0 {
			d := b.defs[pos:end]
			nv = countEqual(d, maxDef)
			e.defs = append(e.defs, d...)
		}
		if e.leaf.maxRep > 0 {
			r := b.reps[pos:end]
			rows = int64(countEqual(r, 0))
			e.reps = append(e.reps, r...)
		}
		e.vals.add(b, vpos, vpos+nv)
		e.pageVals += end - pos
		e.pageNulls += end - pos - nv
		e.pageRows += rows
		pos, vpos = end, vpos+nv
		if e.vals.dictFull() || e.vals.pageBytes()+len(e.defs)/4+len(e.reps)/4 >= e.cfg.pageBytes || (e.cfg.pageRows > 0 && e.pageRows >= e.cfg.pageRows) {
			if e.leaf.maxRep > 0 && end == b.n {
				e.pending = true // the record may go on in the next batch
				continue
			}
			if err := e.cut(); err != nil {
				return err
			}
		}
	}
	return nil
}

// cut ends the open page at a record boundary; a dictionary that outgrew its limit gives way to PLAIN.
func (e *columnEncoder) cut() error {
	e.pending = false
	if err := e.flushPage(); err != nil {
		return err
	}
	if e.vals.dictFull() {
		e.vals.fallback()
	}
	return nil
}

// bufferedBytes is the memory held by the chunk so far (compressed pages plus the open page's values).
func (e *columnEncoder) bufferedBytes() int64 {
	return e.chunk.compressed + int64(e.vals.pageBytes()+len(e.defs)+len(e.reps))
}

// compressInline runs a job on the encoder's own buffers.
func (e *columnEncoder) compressInline(j *pageJob) error {
	if e.hw == nil {
		e.hw = newHeaderWriter()
	}
	j.compress(e.cfg.codec, &e.zScratch, e.hw)
	if j.err != nil {
		return fmt.Errorf("column %q: %w", joinPath(e.leaf.path), j.err)
	}
	return nil
}

func levelWidth(max int) int { return bits.Len(uint(max)) }

// appendLevels appends the v1 form of a level run: a 4-byte length, then the RLE/bit-packed hybrid.
func (e *columnEncoder) appendLevels(dst, levels []byte, max int) ([]byte, error) {
	enc := rle.Encoding{BitWidth: levelWidth(max)}
	out, err := enc.EncodeLevels(e.lvlScratch[:0], levels)
	if err != nil {
		return dst, fmt.Errorf("encode levels of column %q: %w", joinPath(e.leaf.path), err)
	}
	e.lvlScratch = out
	dst = binary.LittleEndian.AppendUint32(dst, uint32(len(out)))
	return append(dst, out...), nil
}

// flushPage encodes, compresses and stores the open page.
func (e *columnEncoder) flushPage() error {
	if e.pageVals == 0 {
		return nil
	}
	pool := e.cfg.pool
	var body []byte
	if pool != nil {
		body = pool.buffer(e.vals.pageBytes() + len(e.defs)/2 + len(e.reps)/2 + 64)
	} else {
		body = e.bodyScratch[:0]
	}
	var err error
	if e.leaf.maxRep > 0 {
		if body, err = e.appendLevels(body, e.reps, e.leaf.maxRep); err != nil {
			return err
		}
	}
	if e.leaf.maxDef > 0 {
		if body, err = e.appendLevels(body, e.defs, e.leaf.maxDef); err != nil {
			return err
		}
	}
	body, enc, pb := e.vals.flush(body)
	if pool == nil {
		e.bodyScratch = body
	}
	stats := format.Statistics{NullCount: int64(e.pageNulls)}
	if pb.ok && !pb.nan && len(pb.min)+len(pb.max) <= maxStatBytes {
		stats.MinValue, stats.MaxValue = parquetBounds(e.leaf.order, pb.min, pb.max)
	}
	header := format.PageHeader{
		Type:                 format.DataPage,
		UncompressedPageSize: int32(len(body)),
		DataPageHeader: thrift.New(format.DataPageHeader{
			NumValues:               int32(e.pageVals),
			Encoding:                enc,
			DefinitionLevelEncoding: format.RLE,
			RepetitionLevelEncoding: format.RLE,
			Statistics:              stats,
		}),
	}
	job := &pageJob{header: header, body: body}
	if pool != nil {
		pool.submit(job)
	} else if err := e.compressInline(job); err != nil {
		return err
	} else {
		e.chunk.compressed += int64(len(job.page))
	}
	c := e.chunk
	c.jobs = append(c.jobs, job)
	c.infos = append(c.infos, pageInfo{firstRow: e.chunkRows, numValues: e.pageVals, nulls: e.pageNulls, bounds: pb})
	c.numValues += int64(e.pageVals)
	c.nulls += int64(e.pageNulls)
	c.rows += e.pageRows
	c.noteEncoding(format.DataPage, enc)
	mergeBounds(e.leaf.order, &c.bounds, pb)
	e.chunkRows += e.pageRows
	e.defs, e.reps = e.defs[:0], e.reps[:0]
	e.pageVals, e.pageNulls, e.pageRows = 0, 0, 0
	return nil
}

// maxStatBytes caps min+max in statistics: longer values are left out rather than bloat every header.
const maxStatBytes = 4096

func (c *encodedChunk) noteEncoding(pt format.PageType, enc format.Encoding) {
	for i := range c.encStats {
		if c.encStats[i].PageType == pt && c.encStats[i].Encoding == enc {
			c.encStats[i].Count++
			return
		}
	}
	c.encStats = append(c.encStats, format.PageEncodingStats{PageType: pt, Encoding: enc, Count: 1})
}

// mergeBounds widens dst by src.
func mergeBounds(order orderKind, dst *pageBounds, src pageBounds) {
	dst.nan = dst.nan || src.nan
	if !src.ok {
		return
	}
	if !dst.ok {
		dst.min, dst.max, dst.ok = src.min, src.max, true
		return
	}
	if compareStat(order, src.min, dst.min) < 0 {
		dst.min = src.min
	}
	if compareStat(order, src.max, dst.max) > 0 {
		dst.max = src.max
	}
}

// finishChunk flushes the open page, prepends the dictionary page and returns the chunk; the encoder
// starts a new chunk.
func (e *columnEncoder) finishChunk() (*encodedChunk, error) {
	if err := e.cut(); err != nil {
		return nil, err
	}
	c := e.chunk
	// Data pages first: their sizes are known once compressed.
	c.compressed = 0
	for i, j := range c.jobs {
		if err := j.wait(); err != nil {
			return nil, fmt.Errorf("column %q: %w", joinPath(e.leaf.path), err)
		}
		c.pages = append(c.pages, j.page)
		c.infos[i].size = len(j.page)
		c.uncompressed += int64(len(j.page) - j.compressed + int(j.header.UncompressedPageSize))
		c.compressed += int64(len(j.page))
	}
	c.jobs = nil
	if c.dictPage != nil {
		c.compressed += int64(len(c.dictPage)) // adopted from the input by a page copy (rewrite_pagecopy.go)
	} else if dict, n := e.vals.dictionary(e.bodyScratch[:0]); n > 0 {
		e.bodyScratch = dict
		job := &pageJob{body: dict, header: format.PageHeader{
			Type:                 format.DictionaryPage,
			UncompressedPageSize: int32(len(dict)),
			DictionaryPageHeader: thrift.New(format.DictionaryPageHeader{NumValues: int32(n), Encoding: format.PlainDictionary}), //nolint:staticcheck // PLAIN_DICTIONARY is deprecated for Parquet 2 pages only; v1 files use it (parquet-mr writes it for v1 pages, and older readers know no other)
		}}
		if err := e.compressInline(job); err != nil {
			return nil, err
		}
		c.dictPage = job.page
		c.uncompressed += int64(len(job.page) - job.compressed + len(dict))
		c.compressed += int64(len(job.page))
		c.noteEncoding(format.DictionaryPage, format.PlainDictionary) //nolint:staticcheck // PLAIN_DICTIONARY is deprecated for Parquet 2 pages only; v1 files use it
	} else {
		e.bodyScratch = dict
	}
	seen := map[format.Encoding]bool{}
	for _, s := range c.encStats {
		if !seen[s.Encoding] {
			seen[s.Encoding] = true
			c.encodings = append(c.encodings, s.Encoding)
		}
	}
	if e.leaf.maxDef > 0 || e.leaf.maxRep > 0 {
		c.encodings = append(c.encodings, format.RLE)
	}
	e.chunk = &encodedChunk{leaf: e.leaf}
	e.chunkRows = 0
	e.vals.resetChunk()
	return c, nil
}
