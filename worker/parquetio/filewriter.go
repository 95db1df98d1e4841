package parquetio

import (
	"bytes"
	"encoding/binary"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// createdBy follows parquet-mr's "<application> version <version> (build <hash>)" form, which readers
// parse to decide which known writer bugs to work around; an application other than parquet-mr is
// trusted to write correct statistics.
const createdBy = "deltakeeper version 0.1.0 (build parquetio)"

// columnIndexTruncate is the length byte-array bounds are truncated to in the column index, as
// parquet-mr does (parquet.columnindex.truncate.length = 64). Footer statistics stay exact.
const columnIndexTruncate = 64

// fileWriter lays out row groups of encoded chunks, then the page index and the footer.
type fileWriter struct {
	w         io.Writer
	offset    int64
	schema    *outputSchema
	codec     format.CompressionCodec
	rowGroups []format.RowGroup
	colIdx    [][]*format.ColumnIndex // per row group, per column; nil entries when not written
	offIdx    [][]format.OffsetIndex
	numRows   int64
	kv        []format.KeyValue
	cur       *format.RowGroup
	curCI     []*format.ColumnIndex
	curOI     []format.OffsetIndex
	proto     thrift.CompactProtocol
}

func newFileWriter(w io.Writer, schema *outputSchema, codec format.CompressionCodec) *fileWriter {
	return &fileWriter{w: w, schema: schema, codec: codec}
}

// header writes the leading magic once.
func (fw *fileWriter) header() error {
	if fw.offset > 0 {
		return nil
	}
	n, err := fw.w.Write([]byte("PAR1"))
	fw.offset += int64(n)
	if err != nil {
		return fmt.Errorf("write parquet header: %w", err)
	}
	return nil
}

func (fw *fileWriter) write(p []byte) error {
	if err := fw.header(); err != nil {
		return err
	}
	n, err := fw.w.Write(p)
	fw.offset += int64(n)
	if err != nil {
		return fmt.Errorf("write parquet data at offset %d: %w", fw.offset, err)
	}
	return nil
}

func (fw *fileWriter) beginRowGroup() {
	fw.cur = &format.RowGroup{}
	fw.curCI, fw.curOI = nil, nil
}

// writeChunk writes the next column chunk of the open row group; chunks come in schema leaf order.
func (fw *fileWriter) writeChunk(c *encodedChunk) error {
	if err := fw.header(); err != nil {
		return err
	}
	if len(fw.cur.Columns) == 0 {
		fw.cur.FileOffset = fw.offset
		fw.cur.NumRows = c.rows
	} else if c.rows != fw.cur.NumRows {
		return fmt.Errorf("internal error: column %q has %d rows in a row group of %d", joinPath(c.leaf.path), c.rows, fw.cur.NumRows)
	}
	start := fw.offset
	md := format.ColumnMetaData{
		Type:                  c.leaf.phys,
		Encoding:              c.encodings,
		PathInSchema:          c.leaf.path,
		Codec:                 fw.codec,
		NumValues:             c.numValues,
		TotalUncompressedSize: c.uncompressed,
		TotalCompressedSize:   c.compressed,
		EncodingStats:         c.encStats,
		Statistics:            chunkStatistics(c),
	}
	if c.dictPage != nil {
		md.DictionaryPageOffset = fw.offset
		if err := fw.write(c.dictPage); err != nil {
			return err
		}
	}
	md.DataPageOffset = fw.offset
	oi := format.OffsetIndex{}
	for i, p := range c.pages {
		oi.PageLocations = append(oi.PageLocations, format.PageLocation{Offset: fw.offset, CompressedPageSize: int32(len(p)), FirstRowIndex: c.infos[i].firstRow})
		if err := fw.write(p); err != nil {
			return err
		}
	}
	fw.cur.Columns = append(fw.cur.Columns, format.ColumnChunk{FileOffset: start, MetaData: md})
	fw.cur.TotalByteSize += c.uncompressed
	fw.cur.TotalCompressedSize += c.compressed
	fw.curCI = append(fw.curCI, columnIndex(c))
	fw.curOI = append(fw.curOI, oi)
	return nil
}

func (fw *fileWriter) endRowGroup() {
	fw.cur.Ordinal = int16(len(fw.rowGroups))
	fw.numRows += fw.cur.NumRows
	fw.rowGroups = append(fw.rowGroups, *fw.cur)
	fw.colIdx = append(fw.colIdx, fw.curCI)
	fw.offIdx = append(fw.offIdx, fw.curOI)
	fw.cur = nil
}

func chunkStatistics(c *encodedChunk) format.Statistics {
	st := format.Statistics{NullCount: c.nulls}
	b := c.bounds
	// NaN is excluded from bounds, but Spark orders it above every number: bounds that ignore it would
	// let a reader skip a group for "x > 1e300" that holds NaN, so a chunk with NaN gets none.
	if !b.ok || b.nan || len(b.min)+len(b.max) > maxStatBytes {
		return st
	}
	st.MinValue, st.MaxValue = parquetBounds(c.leaf.order, b.min, b.max)
	switch c.leaf.order {
	case orderBool, orderInt32, orderInt64, orderFloat, orderDouble:
		// Signed order equals the type order: fill the deprecated fields for readers older than
		// parquet-mr 1.10.
		st.Min, st.Max = st.MinValue, st.MaxValue
	}
	return st
}

// columnIndex builds the page index of a chunk, or nil when some page with values has no usable bounds
// (variant parts, pages with NaN, as parquet-mr does), in which case only the offset index is written.
func columnIndex(c *encodedChunk) *format.ColumnIndex {
	if c.leaf.order == orderNone {
		return nil
	}
	ci := &format.ColumnIndex{}
	asc, desc := true, true
	var prev *pageInfo
	for i := range c.infos {
		p := &c.infos[i]
		allNull := p.nulls == p.numValues
		if !allNull && (!p.bounds.ok || p.bounds.nan) {
			return nil
		}
		ci.NullPages = append(ci.NullPages, allNull)
		ci.NullCounts = append(ci.NullCounts, int64(p.nulls))
		if allNull {
			ci.MinValues = append(ci.MinValues, []byte{})
			ci.MaxValues = append(ci.MaxValues, []byte{})
			continue
		}
		lo, hi := parquetBounds(c.leaf.order, p.bounds.min, p.bounds.max)
		if c.leaf.order == orderBytes {
			lo, hi = truncateMin(lo), truncateMax(hi)
		}
		ci.MinValues = append(ci.MinValues, lo)
		ci.MaxValues = append(ci.MaxValues, hi)
		if prev != nil {
			if compareStat(c.leaf.order, prev.bounds.min, p.bounds.min) > 0 || compareStat(c.leaf.order, prev.bounds.max, p.bounds.max) > 0 {
				asc = false
			}
			if compareStat(c.leaf.order, prev.bounds.min, p.bounds.min) < 0 || compareStat(c.leaf.order, prev.bounds.max, p.bounds.max) < 0 {
				desc = false
			}
		}
		prev = p
	}
	switch {
	case prev == nil:
		ci.BoundaryOrder = format.Unordered
	case asc:
		ci.BoundaryOrder = format.Ascending
	case desc:
		ci.BoundaryOrder = format.Descending
	default:
		ci.BoundaryOrder = format.Unordered
	}
	return ci
}

func truncateMin(b []byte) []byte {
	if len(b) <= columnIndexTruncate {
		return b
	}
	return b[:columnIndexTruncate]
}

// truncateMax shortens an upper bound by incrementing the last byte that can be incremented; a bound
// of all 0xFF bytes stays whole.
func truncateMax(b []byte) []byte {
	if len(b) <= columnIndexTruncate {
		return b
	}
	t := append([]byte(nil), b[:columnIndexTruncate]...)
	for i := len(t) - 1; i >= 0; i-- {
		if t[i] != 0xFF {
			t[i]++
			return t[:i+1]
		}
	}
	return b
}

// close writes the page indexes (column indexes, then offset indexes, as parquet-mr lays them out) and
// the footer. It does not close the underlying writer.
func (fw *fileWriter) close() (int64, error) {
	if err := fw.header(); err != nil {
		return 0, err
	}
	var buf bytes.Buffer
	enc := thrift.NewEncoder(fw.proto.NewWriter(&buf))
	for g := range fw.rowGroups {
		for c, ci := range fw.colIdx[g] {
			if ci == nil {
				continue
			}
			buf.Reset()
			if err := enc.Encode(ci); err != nil {
				return 0, fmt.Errorf("encode column index: %w", err)
			}
			fw.rowGroups[g].Columns[c].ColumnIndexOffset = fw.offset
			fw.rowGroups[g].Columns[c].ColumnIndexLength = int32(buf.Len())
			if err := fw.write(buf.Bytes()); err != nil {
				return 0, err
			}
		}
	}
	for g := range fw.rowGroups {
		for c := range fw.offIdx[g] {
			buf.Reset()
			if err := enc.Encode(&fw.offIdx[g][c]); err != nil {
				return 0, fmt.Errorf("encode offset index: %w", err)
			}
			fw.rowGroups[g].Columns[c].OffsetIndexOffset = fw.offset
			fw.rowGroups[g].Columns[c].OffsetIndexLength = int32(buf.Len())
			if err := fw.write(buf.Bytes()); err != nil {
				return 0, err
			}
		}
	}
	md := format.FileMetaData{
		Version:          1,
		Schema:           fw.schema.elements,
		NumRows:          fw.numRows,
		RowGroups:        fw.rowGroups,
		KeyValueMetadata: fw.kv,
		CreatedBy:        createdBy,
	}
	for range fw.schema.leaves {
		md.ColumnOrders = append(md.ColumnOrders, format.ColumnOrder{Value: &format.TypeDefinedOrder{}})
	}
	buf.Reset()
	if err := enc.Encode(&md); err != nil {
		return 0, fmt.Errorf("encode parquet footer: %w", err)
	}
	footer := binary.LittleEndian.AppendUint32(buf.Bytes(), uint32(buf.Len()))
	footer = append(footer, "PAR1"...)
	if err := fw.write(footer); err != nil {
		return 0, err
	}
	return fw.offset, nil
}
