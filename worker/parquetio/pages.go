package parquetio

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"hash/crc32"
	"io"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/encoding"
	"github.com/parquet-go/parquet-go/encoding/bitpacked"
	"github.com/parquet-go/parquet-go/encoding/rle"
	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// rawPage is one decoded data page: its levels and its non-null values, either typed or as indexes into
// the chunk's dictionary. Buffers are reused by the next page of the same chunkReader.
type rawPage struct {
	n    int    // triplets
	defs []byte // nil when maxDef is 0 (every value present)
	reps []byte // nil when maxRep is 0
	nv   int    // non-null values
	valueSlices
	idx  []int32     // dictionary indexes when dict != nil
	dict *sourceDict // the chunk dictionary, or nil for plainly encoded pages
}

// chunkReader reads the pages of one column chunk. It parses headers and decompresses itself and uses
// parquet-go only for the value decoders: parquet-go's own page reader applies the first row group's
// codec to every row group and loses LZ4_RAW pages whose buffer it had to grow.
type chunkReader struct {
	*readBuffers
	leaf      *pqNode
	meta      *format.ColumnMetaData
	codec     format.CompressionCodec
	dec       *thrift.Decoder
	remaining int64 // triplets not yet read
	dict      *sourceDict
	file      *File // for classify
}

// readBuffers are the buffers of a column reader, kept from one column chunk to the next so that
// reading allocates once per column, not once per chunk. The dictionary lives here too: a reader
// never needs the previous chunk's dictionary once it opens the next chunk.
type readBuffers struct {
	size      int
	r         *bufio.Reader
	comp, raw []byte
	bits      []byte
	dict      sourceDict
}

func newReadBuffers(size int) *readBuffers { return &readBuffers{size: size} }

// openChunk positions a reader at the first page of the chunk of leaf in row group rg, reusing rb.
func (f *File) openChunk(rg int, leaf *pqNode, rb *readBuffers) (*chunkReader, error) {
	cc := &f.metadata().RowGroups[rg].Columns[leaf.leaf]
	md := &cc.MetaData
	if cc.FilePath != "" {
		return nil, fmt.Errorf("parquet column %q lives in external file %q, which is not supported", leaf.pathString(), cc.FilePath)
	}
	start := md.DataPageOffset
	if md.DictionaryPageOffset > 0 && md.DictionaryPageOffset < start {
		start = md.DictionaryPageOffset
	}
	size := md.TotalCompressedSize
	if start < 4 || size < 0 || start+size > f.r.Size() {
		return nil, fmt.Errorf("parquet column %q of row group %d points outside the file (offset %d, %d bytes); the file is corrupt: %w", leaf.pathString(), rg, start, size, ErrCorruptFile)
	}
	c := &chunkReader{readBuffers: rb, leaf: leaf, meta: md, codec: md.Codec, remaining: md.NumValues, file: f}
	section := io.NewSectionReader(f.r, start, size)
	if rb.r == nil {
		// A buffer larger than the chunk would only cost memory.
		rb.r = bufio.NewReaderSize(section, int(min(int64(rb.size), max(size, 4096))))
	} else {
		rb.r.Reset(section)
	}
	c.dec = thrift.NewDecoder(new(thrift.CompactProtocol).NewReader(rb.r))
	return c, nil
}

func (c *chunkReader) errorf(format string, args ...any) error {
	err := fmt.Errorf("parquet column %q: %s; the file is corrupt or uses an unsupported feature", c.leaf.pathString(), fmt.Sprintf(format, args...))
	if c.file == nil {
		return err
	}
	return classify(c.file.rec, c.file.name, err)
}

// next decodes the next data page into p; io.EOF after the last one.
func (c *chunkReader) next(p *rawPage) error {
	for {
		var h format.PageHeader
		if err := c.readPage(&h); err != nil {
			return err
		}
		if done, err := c.decodePage(&h, p); done || err != nil {
			return err
		}
	}
}

// readPage reads the next page header into h and its stored (compressed) body into c.comp, checking
// its checksum; io.EOF once the chunk's values are all read.
func (c *chunkReader) readPage(h *format.PageHeader) error {
	if c.remaining <= 0 {
		return io.EOF
	}
	if err := c.dec.Decode(h); err != nil {
		if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
			return c.errorf("chunk ended with %d values still expected", c.remaining)
		}
		return c.errorf("read page header: %v", err)
	}
	if h.CompressedPageSize < 0 || h.UncompressedPageSize < 0 {
		return c.errorf("negative page size in header")
	}
	c.comp = grow(c.comp, int(h.CompressedPageSize))
	if _, err := io.ReadFull(c.r, c.comp); err != nil {
		return c.errorf("read page of %d bytes: %v", h.CompressedPageSize, err)
	}
	if h.CRC != 0 && int32(crc32.ChecksumIEEE(c.comp)) != h.CRC {
		return c.errorf("page checksum mismatch")
	}
	switch h.Type {
	case format.DictionaryPage:
		if !h.DictionaryPageHeader.Valid {
			return c.errorf("dictionary page without header")
		}
	case format.DataPage:
		if !h.DataPageHeader.Valid {
			return c.errorf("data page without header")
		}
	case format.DataPageV2:
		if !h.DataPageHeaderV2.Valid {
			return c.errorf("data page v2 without header")
		}
	}
	return nil
}

// decodePage decodes the page readPage read: a data page into p (done), a dictionary page into the
// chunk's dictionary; index pages and unknown page types carry no values.
func (c *chunkReader) decodePage(h *format.PageHeader, p *rawPage) (done bool, err error) {
	switch h.Type {
	case format.DictionaryPage:
		return false, c.readDictionary(h)
	case format.DataPage:
		return true, c.readV1(h, p)
	case format.DataPageV2:
		return true, c.readV2(h, p)
	}
	return false, nil
}

func grow(b []byte, n int) []byte {
	if cap(b) < n {
		return make([]byte, n, n+n/4)
	}
	return b[:n]
}

func (c *chunkReader) decompress(src []byte, size int) ([]byte, error) {
	out, err := decompress(c.codec, c.raw, src, size)
	if err != nil {
		return nil, c.errorf("decompress %s page: %v", c.codec, err)
	}
	if c.codec != format.Uncompressed {
		c.raw = out // keep the grown buffer; an uncompressed page is the read buffer itself
	}
	return out, nil
}

func (c *chunkReader) readDictionary(h *format.PageHeader) error {
	return c.readDictionaryFrom(h, c.comp)
}

// readDictionaryFrom decodes a dictionary page whose stored body is comp.
func (c *chunkReader) readDictionaryFrom(h *format.PageHeader, comp []byte) error {
	body, err := c.decompress(comp, int(h.UncompressedPageSize))
	if err != nil {
		return err
	}
	d := &c.readBuffers.dict
	d.phys, d.epoch, d.gen = c.leaf.lt.phys, 0, dictGens.Add(1) // new content: translations of the previous one are void
	n := int(h.DictionaryPageHeader.V.NumValues)
	if err := decodeValues(&parquet.Plain, c.leaf.lt, body, n, &d.valueSlices, &c.bits); err != nil {
		return c.errorf("decode dictionary page: %v", err)
	}
	if d.len() < n {
		return c.errorf("dictionary page holds %d values, header says %d", d.len(), n)
	}
	c.dict = d
	return nil
}

func (c *chunkReader) readV1(h *format.PageHeader, p *rawPage) error {
	dh := &h.DataPageHeader.V
	body, err := c.decompress(c.comp, int(h.UncompressedPageSize))
	if err != nil {
		return err
	}
	n := int(dh.NumValues)
	p.n = n
	if c.leaf.maxRep > 0 {
		p.reps, body, err = c.levelsV1(dh.RepetitionLevelEncoding, c.leaf.maxRep, n, body, p.reps)
		if err != nil {
			return c.errorf("repetition levels: %v", err)
		}
	} else {
		p.reps = nil
	}
	if c.leaf.maxDef > 0 {
		p.defs, body, err = c.levelsV1(dh.DefinitionLevelEncoding, c.leaf.maxDef, n, body, p.defs)
		if err != nil {
			return c.errorf("definition levels: %v", err)
		}
	} else {
		p.defs = nil
	}
	return c.values(dh.Encoding, body, p)
}

// levelsV1 decodes a v1 level run: RLE with a 4-byte length prefix, or the deprecated BIT_PACKED form
// whose length follows from the count.
func (c *chunkReader) levelsV1(enc format.Encoding, max, n int, body, dst []byte) ([]byte, []byte, error) {
	width := levelWidth(max)
	var run []byte
	switch enc {
	case format.RLE:
		if len(body) < 4 {
			return nil, nil, io.ErrUnexpectedEOF
		}
		l := int(binary.LittleEndian.Uint32(body))
		if 4+l > len(body) {
			return nil, nil, io.ErrUnexpectedEOF
		}
		run, body = body[4:4+l], body[4+l:]
		levels, err := (&rle.Encoding{BitWidth: width}).DecodeLevels(dst[:0], run)
		return fitLevels(levels, n, err), body, checkLevels(levels, n, err)
	case format.BitPacked:
		l := (n*width + 7) / 8
		if l > len(body) {
			return nil, nil, io.ErrUnexpectedEOF
		}
		run, body = body[:l], body[l:]
		levels, err := (&bitpacked.Encoding{BitWidth: width}).DecodeLevels(dst[:0], run)
		return fitLevels(levels, n, err), body, checkLevels(levels, n, err)
	}
	return nil, nil, fmt.Errorf("unsupported level encoding %s", enc)
}

func fitLevels(levels []byte, n int, err error) []byte {
	if err == nil && len(levels) > n {
		return levels[:n]
	}
	return levels
}

func checkLevels(levels []byte, n int, err error) error {
	if err != nil {
		return err
	}
	if len(levels) < n {
		return fmt.Errorf("decoded %d levels, page has %d values", len(levels), n)
	}
	return nil
}

func (c *chunkReader) readV2(h *format.PageHeader, p *rawPage) error {
	dh := &h.DataPageHeaderV2.V
	n := int(dh.NumValues)
	p.n = n
	rl, dl := int(dh.RepetitionLevelsByteLength), int(dh.DefinitionLevelsByteLength)
	if rl < 0 || dl < 0 || rl+dl > len(c.comp) {
		return c.errorf("data page v2 level lengths exceed the page")
	}
	levels := c.comp[:rl+dl]
	p.reps, p.defs = nil, nil
	var err error
	if c.leaf.maxRep > 0 {
		p.reps, err = (&rle.Encoding{BitWidth: levelWidth(c.leaf.maxRep)}).DecodeLevels(p.reps[:0], levels[:rl])
		if err = checkLevels(p.reps, n, err); err != nil {
			return c.errorf("repetition levels: %v", err)
		}
		p.reps = p.reps[:n]
	}
	if c.leaf.maxDef > 0 {
		p.defs, err = (&rle.Encoding{BitWidth: levelWidth(c.leaf.maxDef)}).DecodeLevels(p.defs[:0], levels[rl:])
		if err = checkLevels(p.defs, n, err); err != nil {
			return c.errorf("definition levels: %v", err)
		}
		p.defs = p.defs[:n]
	}
	body := c.comp[rl+dl:]
	if !dh.IsCompressed.Valid || dh.IsCompressed.V {
		if body, err = c.decompress(body, int(h.UncompressedPageSize)-rl-dl); err != nil {
			return err
		}
	}
	return c.values(dh.Encoding, body, p)
}

// values decodes the value section of a data page.
func (c *chunkReader) values(enc format.Encoding, body []byte, p *rawPage) error {
	c.remaining -= int64(p.n)
	p.nv = p.n
	if p.defs != nil {
		p.nv = countEqual(p.defs, byte(c.leaf.maxDef))
	}
	p.dict = nil
	if enc == format.PlainDictionary || enc == format.RLEDictionary { //nolint:staticcheck // PLAIN_DICTIONARY is deprecated for Parquet 2 pages only; v1 files use it, and files written by parquet-mr v1 have it
		if c.dict == nil {
			return c.errorf("dictionary-encoded page without a dictionary page")
		}
		idx, err := parquet.RLEDictionary.DecodeInt32(p.idx[:0], body)
		if err != nil && p.nv > 0 {
			return c.errorf("decode dictionary indexes: %v", err)
		}
		if len(idx) < p.nv {
			return c.errorf("page has %d dictionary indexes for %d values", len(idx), p.nv)
		}
		p.idx = idx[:p.nv]
		limit := int32(c.dict.len())
		for _, i := range p.idx {
			if i < 0 || i >= limit {
				return c.errorf("dictionary index %d out of range (dictionary has %d entries)", i, limit)
			}
		}
		p.dict = c.dict
		return nil
	}
	e := parquet.LookupEncoding(enc)
	if err := decodeValues(e, c.leaf.lt, body, p.nv, &p.valueSlices, &c.bits); err != nil {
		return c.errorf("decode %s values: %v", enc, err)
	}
	if got := p.valueSlices.len(c.leaf.lt.phys); got < p.nv {
		return c.errorf("page has %d values, levels say %d", got, p.nv)
	}
	return nil
}

// decodeValues decodes n values of the leaf's physical type into v.
func decodeValues(e encoding.Encoding, lt leafType, body []byte, n int, v *valueSlices, bits *[]byte) error {
	var err error
	switch lt.phys {
	case format.Boolean:
		*bits, err = e.DecodeBoolean((*bits)[:0], body)
		if err != nil {
			return err
		}
		if len(*bits)*8 < n {
			return fmt.Errorf("boolean page holds fewer than %d values", n)
		}
		v.bools = v.bools[:0]
		for i := range n {
			v.bools = append(v.bools, (*bits)[i/8]&(1<<(i%8)) != 0)
		}
	case format.Int32:
		v.i32, err = e.DecodeInt32(v.i32[:0], body)
	case format.Int64:
		v.i64, err = e.DecodeInt64(v.i64[:0], body)
	case format.Int96:
		v.i96, err = e.DecodeInt96(v.i96[:0], body)
	case format.Float:
		v.f32, err = e.DecodeFloat(v.f32[:0], body)
	case format.Double:
		v.f64, err = e.DecodeDouble(v.f64[:0], body)
	case format.ByteArray:
		v.bin, v.binOff, err = e.DecodeByteArray(v.bin[:0], body, v.binOff[:0])
	case format.FixedLenByteArray:
		if lt.typeLen <= 0 {
			return fmt.Errorf("FIXED_LEN_BYTE_ARRAY without a length")
		}
		v.bin, err = e.DecodeFixedLenByteArray(v.bin[:0], body, lt.typeLen)
		v.binOff = v.binOff[:0]
		for i := 0; i <= len(v.bin)/lt.typeLen; i++ {
			v.binOff = append(v.binOff, uint32(i*lt.typeLen))
		}
	default:
		return fmt.Errorf("unsupported physical type %s", lt.phys)
	}
	if err != nil && n == 0 {
		return nil // empty value sections of all-null pages are sometimes absent
	}
	return err
}
