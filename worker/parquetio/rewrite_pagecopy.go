package parquetio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"sort"
	"strings"

	"github.com/parquet-go/parquet-go/encoding/thrift"
	"github.com/parquet-go/parquet-go/format"
)

// Page copy: when RewriteOptions.CopyPages keeps an input row group as one output row group, a column
// chunk stored in the output's layout and codec is copied page by page. A data page none of whose rows
// is deleted goes out as stored (header with its statistics, compressed body); a page with deletions
// is decoded and re-encoded without them. A copy-on-write delete of a few rows then costs little more
// than reading the touched pages, where re-encoding and recompressing every page cost most of it.
//
// Re-encoded pages are PLAIN, also in a dictionary-encoded chunk: the chunk keeps the input's
// dictionary page for its copied pages, and a chunk may mix dictionary and PLAIN pages (as parquet-mr's
// dictionary fallback writes it). Re-encoding against the input's dictionary would need the
// encoder to adopt a foreign dictionary; the few pages a row filter touches do not pay for that.
//
// A copied page's row count, null count and bounds come from its header. Only headers this project
// wrote are trusted for that (createdBy): its data page v1 headers always hold the page's exact null
// count and, unless every value is null, exact min and max — or none at all when the page holds NaN
// or overlong values, and such pages are re-encoded like touched ones. Files of other writers (whose
// null counts may be absent, whose v1 headers give no row count for repeated columns, and whose
// bounds may be truncated or follow an old sort order) are re-encoded as before; so are repeated
// columns, columns converted on the way (widening, timestamp units, definition level mapping),
// materialized row-tracking columns and chunks whose codec is not the output's: a copied page keeps
// its compression, and the chunk's codec is declared once.

// trustsPageStats reports whether f's page headers carry exact statistics, as this package writes them.
func trustsPageStats(f *File) bool {
	return strings.HasPrefix(f.CreatedBy(), "deltakeeper version ")
}

// pageCopyable reports whether the lane may copy the pages of output group g (one whole input row
// group) instead of re-encoding them.
func (l *lane) pageCopyable(g *outGroup, src *leafSource) bool {
	if !g.whole || len(g.slices) != 1 || l.rt != nil || l.sink != nil || src.missing || src.in == nil {
		return false
	}
	if src.conv != convIdentity || src.defMap != nil || l.leaf.maxRep > 0 || src.in.maxRep > 0 || src.in.maxDef != l.leaf.maxDef {
		return false
	}
	if src.in.lt.phys != l.leaf.phys || src.in.lt.typeLen != l.leaf.typeLen {
		return false
	}
	s := g.slices[0]
	f := l.files[s.input]
	cc := &f.metadata().RowGroups[s.rg].Columns[src.in.leaf]
	if cc.FilePath != "" || cc.MetaData.Codec != l.enc.cfg.codecID || !trustsPageStats(f) {
		return false
	}
	return copyPays(f, cc, s.deleted)
}

// copyPays reports whether at least half of a chunk's data pages lose no row, by its offset index.
// Below that the re-encoding path is cheaper: it keeps dictionary encoding for the pages it
// re-encodes, where a page copy re-encodes the touched pages of a dictionary chunk PLAIN, which is
// larger and costs more to compress (a delete scattered over every page would get slower).
func copyPays(f *File, cc *format.ColumnChunk, deleted []int64) bool {
	if len(deleted) == 0 {
		return true
	}
	if cc.OffsetIndexOffset <= 0 || cc.OffsetIndexLength <= 0 {
		return false
	}
	buf := make([]byte, cc.OffsetIndexLength)
	if _, err := f.r.ReadAt(buf, cc.OffsetIndexOffset); err != nil {
		return false // the re-encoding path reads the chunk and reports what is wrong
	}
	var oi format.OffsetIndex
	if err := thrift.Unmarshal(new(thrift.CompactProtocol), buf, &oi); err != nil || len(oi.PageLocations) == 0 {
		return false
	}
	touched, d := 0, 0
	for i, p := range oi.PageLocations {
		end := int64(math.MaxInt64)
		if i+1 < len(oi.PageLocations) {
			end = oi.PageLocations[i+1].FirstRowIndex
		}
		for d < len(deleted) && deleted[d] < p.FirstRowIndex {
			d++
		}
		if d < len(deleted) && deleted[d] < end {
			touched++
		}
	}
	return 2*touched <= len(oi.PageLocations)
}

// copyPages writes the column chunk of a whole input row group, copying its untouched pages.
func (l *lane) copyPages(ctx context.Context, s rgSlice, src *leafSource) (*encodedChunk, error) {
	f := l.files[s.input]
	cr, err := f.openChunk(s.rg, src.in, l.rb)
	if err != nil {
		return nil, err
	}
	l.cr = nil // the lane's read position (for the re-encoding path) no longer holds
	if l.plain == nil {
		cfg := *l.enc.cfg
		cfg.dict.enabled = false
		l.plain = newColumnEncoder(l.leaf, &cfg)
		l.hw = newHeaderWriter()
	}
	enc := l.plain
	saved := l.enc
	l.enc = enc // emit writes the survivors of touched pages through l.write
	defer func() { l.enc = saved }()

	var dictHeader format.PageHeader
	var dictBody []byte // the stored dictionary, decoded only when a page must be re-encoded
	dictDecoded := false
	row := int64(0)
	l.di = 0
	for {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		var h format.PageHeader
		if err := cr.readPage(&h); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		switch h.Type {
		case format.DictionaryPage:
			page, err := l.hw.storedPage(&h, cr.comp)
			if err != nil {
				return nil, err
			}
			enc.adoptDictionary(page, len(cr.comp), &h)
			dictHeader, dictBody, dictDecoded = h, page[len(page)-len(cr.comp):], false
			continue
		case format.DataPage, format.DataPageV2:
		default:
			continue // index pages carry no values
		}
		n := int64(pageValues(&h))
		lo := sort.Search(len(s.deleted), func(i int) bool { return s.deleted[i] >= row })
		touched := lo < len(s.deleted) && s.deleted[lo] < row+n
		if !touched {
			if info, ok := storedPageInfo(&h, l.leaf); ok {
				page, err := l.hw.storedPage(&h, cr.comp)
				if err != nil {
					return nil, err
				}
				cr.remaining -= n
				if err := enc.copyPage(page, len(cr.comp), &h, info, n); err != nil {
					return nil, err
				}
				row += n
				continue
			}
		}
		if dictBody != nil && !dictDecoded {
			if err := cr.readDictionaryFrom(&dictHeader, dictBody); err != nil {
				return nil, err
			}
			dictDecoded = true
		}
		p := &l.page
		if _, err := cr.decodePage(&h, p); err != nil {
			return nil, err
		}
		if err := l.emit(p, src, 0, p.n, 0, p.nv, row, s.deleted); err != nil {
			return nil, err
		}
		row += int64(p.n)
	}
	if row != s.to {
		return nil, fmt.Errorf("column %q has %d rows, the row group %d; the file is corrupt: %w", src.in.pathString(), row, s.to, ErrCorruptFile)
	}
	return enc.finishChunk()
}

// pageValues is a data page's number of triplets: its rows, for the unrepeated columns copied here.
func pageValues(h *format.PageHeader) int {
	if h.Type == format.DataPageV2 {
		return int(h.DataPageHeaderV2.V.NumValues)
	}
	return int(h.DataPageHeader.V.NumValues)
}

// storedPageInfo reads what the page index and the chunk statistics need from a trusted data page v1
// header; false when the header lacks it (bounds left out for NaN or overlong values).
func storedPageInfo(h *format.PageHeader, leaf *leafDesc) (pageInfo, bool) {
	if h.Type != format.DataPage {
		return pageInfo{}, false
	}
	dh := &h.DataPageHeader.V
	n, st := int(dh.NumValues), &dh.Statistics
	if st.NullCount < 0 || st.NullCount > int64(n) || (leaf.maxDef == 0 && st.NullCount != 0) {
		return pageInfo{}, false
	}
	info := pageInfo{numValues: n, nulls: int(st.NullCount)}
	if info.nulls < n && leaf.order != orderNone {
		if len(st.MinValue) == 0 || len(st.MaxValue) == 0 {
			return pageInfo{}, false
		}
		if w := fixedStatWidth(leaf); w > 0 && (len(st.MinValue) != w || len(st.MaxValue) != w) {
			return pageInfo{}, false
		}
		info.bounds = pageBounds{min: bytes.Clone(st.MinValue), max: bytes.Clone(st.MaxValue), ok: true}
	}
	return info, true
}

// fixedStatWidth is the PLAIN size of a statistics value of a fixed-width leaf; 0 for byte arrays.
func fixedStatWidth(leaf *leafDesc) int {
	switch leaf.phys {
	case format.Boolean:
		return 1
	case format.Int32, format.Float:
		return 4
	case format.Int64, format.Double:
		return 8
	case format.FixedLenByteArray:
		return leaf.typeLen
	}
	return 0
}

// adoptDictionary makes a stored dictionary page (header and body of compressed size body) the
// chunk's, for the pages copied after it.
func (e *columnEncoder) adoptDictionary(page []byte, body int, h *format.PageHeader) {
	c := e.chunk
	c.dictPage = page
	c.uncompressed += int64(len(page) - body + int(h.UncompressedPageSize))
	c.noteEncoding(format.DictionaryPage, h.DictionaryPageHeader.V.Encoding)
}

// copyPage appends a stored data page (body: its compressed size) of rows rows after the open page,
// which is cut first so that pages stay in row order.
func (e *columnEncoder) copyPage(page []byte, body int, h *format.PageHeader, info pageInfo, rows int64) error {
	if err := e.cut(); err != nil {
		return err
	}
	c := e.chunk
	c.jobs = append(c.jobs, &pageJob{header: *h, page: page, compressed: body})
	info.firstRow = e.chunkRows
	c.infos = append(c.infos, info)
	c.numValues += int64(info.numValues)
	c.nulls += int64(info.nulls)
	c.rows += rows
	c.noteEncoding(h.Type, h.DataPageHeader.V.Encoding)
	mergeBounds(e.leaf.order, &c.bounds, info.bounds)
	e.chunkRows += rows
	return nil
}
