package parquetio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Copying another writer's pages: a file whose rows were already decoded (a MERGE batch, say) and
// that goes into the table unchanged need not be encoded and compressed again — most of a write's
// cost. Writer.CopyPages appends its row groups with their stored pages, as the file holds them, and
// gives every data page a new header whose statistics come from the decoded values, so that the copy
// carries the same exact page statistics, page index, chunk statistics and file statistics as
// Writer's own output (rewrite_pagecopy.go's page copy trusts only headers this project wrote; a
// foreign writer's header statistics may be absent, truncated or ordered as an old writer ordered
// them, and are never kept).
//
// Only what Writer itself would write is copied: flat columns stored in the output's physical type,
// nullability and codec, data page v1 with PLAIN or dictionary values and RLE levels. Anything else
// is ErrPagesNotCopyable, and the caller writes the rows through WriteColumns instead.

// ErrPagesNotCopyable reports a file whose stored pages Writer.CopyPages cannot take as they are.
var ErrPagesNotCopyable = errors.New("the file's pages cannot be copied as they are")

// PagesCopyable reports whether Writer.CopyPages can copy f's pages into a file of the writer's
// schema and options; names[i] is the stored name of the schema's field i in f. It judges by the
// footer: CopyPages may still meet a page the footer does not describe (a data page v2, boolean
// values RLE-coded) and fail with ErrPagesNotCopyable, leaving an incomplete file to discard.
func PagesCopyable(f *File, schema *types.StructType, names []string, opts WriterOptions) bool {
	cfg, err := opts.config(1)
	if err != nil {
		return false
	}
	out, err := buildOutputSchema(schema, opts.WriteFieldIDs)
	if err != nil {
		return false
	}
	_, err = copySources(f, schema, names, out, cfg.codecID)
	return err == nil
}

// copySources pairs each output leaf with f's stored leaf, or fails with ErrPagesNotCopyable.
func copySources(f *File, schema *types.StructType, names []string, out *outputSchema, codec format.CompressionCodec) ([]*pqNode, error) {
	if len(names) != len(schema.Fields) || len(out.leaves) != len(schema.Fields) || f.NumRows() <= 0 {
		return nil, ErrPagesNotCopyable
	}
	lookup := &types.StructType{Fields: make([]*types.StructField, len(schema.Fields))}
	for i, sf := range schema.Fields {
		if _, ok := sf.Type.(*types.PrimitiveType); !ok || !FlatSchema(&types.StructType{Fields: []*types.StructField{sf}}) {
			return nil, ErrPagesNotCopyable
		}
		c := *sf
		c.Name = names[i]
		lookup.Fields[i] = &c
	}
	outTree, _, err := buildSchemaTree(out.elements)
	if err != nil {
		return nil, ErrPagesNotCopyable
	}
	plan, err := planInput(f, lookup, out, outTree, false)
	if err != nil || plan.general {
		return nil, ErrPagesNotCopyable
	}
	md := f.metadata()
	ins := make([]*pqNode, len(out.leaves))
	for i, leaf := range out.leaves {
		s := plan.sources[i]
		if s.missing || s.in == nil || s.conv != convIdentity || s.defMap != nil {
			return nil, ErrPagesNotCopyable
		}
		in := s.in
		if in.maxRep != 0 || leaf.maxRep != 0 || in.maxDef != leaf.maxDef || in.lt.phys != leaf.phys || (leaf.phys == format.FixedLenByteArray && in.lt.typeLen != leaf.typeLen) {
			return nil, ErrPagesNotCopyable
		}
		for _, rg := range md.RowGroups {
			cc := &rg.Columns[in.leaf]
			if cc.FilePath != "" || cc.MetaData.Codec != codec {
				return nil, ErrPagesNotCopyable
			}
			for _, e := range cc.MetaData.Encoding {
				if !copyableEncoding(leaf, e) {
					return nil, ErrPagesNotCopyable
				}
			}
		}
		ins[i] = in
	}
	return ins, nil
}

// copyableEncoding reports whether a chunk using encoding e holds only what Writer writes for leaf:
// PLAIN or dictionary-coded values (dictionary pages PLAIN), RLE definition levels.
func copyableEncoding(leaf *leafDesc, e format.Encoding) bool {
	switch e {
	case format.Plain, format.PlainDictionary, format.RLEDictionary: //nolint:staticcheck // PLAIN_DICTIONARY: v1 files use it
		return leaf.phys != format.Boolean || e == format.Plain
	case format.RLE:
		return true // levels (booleans RLE-coded as values are refused per page)
	}
	return false
}

// CopyPages appends every row of src, as src's own row groups, by copying their stored pages; vals
// holds the same rows decoded, in the writer's schema (one FlatColumn per field, as ReadColumns and
// WriteColumns have them), at rows [from, from+src.NumRows()): the statistics are computed from
// them. names[i] is the stored name of the schema's field i in src. The row group being built is
// closed first. ErrPagesNotCopyable when src's layout is not copyable (PagesCopyable); after any
// error the file is incomplete and must be discarded.
func (w *Writer) CopyPages(ctx context.Context, src *File, names []string, vals *FlatBatch, from int) error {
	if w.err != nil {
		return w.err
	}
	if w.closed {
		return fmt.Errorf("parquet writer: write after Close")
	}
	fail := func(err error) error {
		w.err = err
		return err
	}
	ins, err := copySources(src, w.deltaSchema, names, w.schema, w.cfg.codecID)
	if err != nil {
		return fail(err)
	}
	if len(vals.Cols) < len(ins) || from < 0 || int64(vals.Rows-from) < src.NumRows() {
		return fail(fmt.Errorf("parquet writer: copy pages: %d decoded rows from row %d do not cover the file's %d", vals.Rows, from, src.NumRows()))
	}
	if err := w.flushRowGroup(); err != nil {
		return fail(err)
	}
	if w.copiers == nil {
		cfg := *w.cfg
		cfg.dict.enabled = false
		for _, l := range w.schema.leaves {
			w.copiers = append(w.copiers, newColumnEncoder(l, &cfg))
		}
	}
	rb := newReadBuffers(1 << 20)
	base := from
	for rg, group := range src.metadata().RowGroups {
		w.fw.beginRowGroup()
		for i, in := range ins {
			if err := ctx.Err(); err != nil {
				return fail(err)
			}
			c, err := w.copyChunk(src, rg, in, w.copiers[i], rb, &vals.Cols[i], base, group.NumRows)
			if err != nil {
				return fail(err)
			}
			w.stats[i].add(c.leaf.order, c)
			if err := w.fw.writeChunk(c); err != nil {
				return fail(fmt.Errorf("parquet writer: %w", err))
			}
		}
		w.fw.endRowGroup()
		base += int(group.NumRows)
	}
	return nil
}

// copyChunk copies one stored column chunk (rows [base, base+rows) of col) through e.
func (w *Writer) copyChunk(src *File, rg int, in *pqNode, e *columnEncoder, rb *readBuffers, col *FlatColumn, base int, rows int64) (*encodedChunk, error) {
	cr, err := src.openChunk(rg, in, rb)
	if err != nil {
		return nil, err
	}
	if e.hw == nil {
		e.hw = newHeaderWriter()
	}
	row := int64(0)
	for {
		var h format.PageHeader
		if err := cr.readPage(&h); errors.Is(err, io.EOF) {
			break
		} else if err != nil {
			return nil, err
		}
		switch h.Type {
		case format.DictionaryPage:
			dh := &h.DictionaryPageHeader.V
			if dh.Encoding != format.Plain && dh.Encoding != format.PlainDictionary { //nolint:staticcheck // PLAIN_DICTIONARY: v1 files use it
				return nil, ErrPagesNotCopyable
			}
			page, err := e.hw.storedPage(&h, cr.comp)
			if err != nil {
				return nil, err
			}
			e.adoptDictionary(page, len(cr.comp), &h)
			continue
		case format.DataPage:
		case format.DataPageV2:
			return nil, ErrPagesNotCopyable
		default:
			continue // index pages carry no values
		}
		dh := &h.DataPageHeader.V
		if !copyableEncoding(e.leaf, dh.Encoding) || dh.Encoding == format.RLE || (e.leaf.maxDef > 0 && dh.DefinitionLevelEncoding != format.RLE) {
			return nil, ErrPagesNotCopyable
		}
		n := int64(dh.NumValues)
		if n <= 0 || row+n > rows {
			return nil, cr.errorf("data page of %d values after %d of the row group's %d rows", n, row, rows)
		}
		cr.remaining -= n
		info := flatPageInfo(e.leaf, col, base+int(row), int(n))
		// The header is the source's but for its statistics: exact ones, as flushPage writes them.
		stats := format.Statistics{NullCount: int64(info.nulls)}
		if pb := info.bounds; pb.ok && !pb.nan && len(pb.min)+len(pb.max) <= maxStatBytes {
			stats.MinValue, stats.MaxValue = parquetBounds(e.leaf.order, pb.min, pb.max)
		}
		dh.Statistics = stats
		page, err := e.hw.storedPage(&h, cr.comp)
		if err != nil {
			return nil, err
		}
		if err := e.copyPage(page, len(cr.comp), &h, info, n); err != nil {
			return nil, err
		}
		row += n
	}
	if row != rows {
		return nil, fmt.Errorf("column %q has %d rows, the row group %d; the file is corrupt: %w", in.pathString(), row, rows, ErrCorruptFile)
	}
	return e.finishChunk()
}

// flatPageInfo is the page statistics of col's rows [from, from+n), as the encoders compute them:
// NaN left out of the bounds (and flagged), byte arrays in the leaf's order.
func flatPageInfo(leaf *leafDesc, col *FlatColumn, from, n int) pageInfo {
	info := pageInfo{numValues: n}
	var null []bool
	if len(col.Null) > 0 {
		null = col.Null[from : from+n]
		for _, isNull := range null {
			if isNull {
				info.nulls++
			}
		}
		if info.nulls == 0 {
			null = nil
		}
	}
	if info.nulls == n || leaf.order == orderNone {
		return info
	}
	switch leaf.phys {
	case format.Boolean:
		info.bounds = boolBounds(col.Bool[from:from+n], null)
	case format.Int32:
		info.bounds = fixedBounds(col.I32[from:from+n], null)
	case format.Int64:
		info.bounds = fixedBounds(col.I64[from:from+n], null)
	case format.Float:
		info.bounds = fixedBounds(col.F32[from:from+n], null)
	case format.Double:
		info.bounds = fixedBounds(col.F64[from:from+n], null)
	default:
		info.bounds = bytesBounds(leaf.order, col.Bin, col.Off[from:from+n+1], null)
	}
	return info
}

// fixedBounds is the bounds of vals without the nulls (null, when not nil, flags them) and NaNs.
func fixedBounds[T int32 | int64 | float32 | float64](vals []T, null []bool) pageBounds {
	var lo, hi T
	var pb pageBounds
	for k, v := range vals {
		if null != nil && null[k] {
			continue
		}
		if v != v { //nolint:gocritic // v != v is the NaN test for the float types
			pb.nan = true
			continue
		}
		if !pb.ok {
			lo, hi, pb.ok = v, v, true
			continue
		}
		if v < lo {
			lo = v
		}
		if v > hi {
			hi = v
		}
	}
	if pb.ok {
		pb.min, pb.max = plainFixed(lo), plainFixed(hi)
	}
	return pb
}

func boolBounds(vals []bool, null []bool) pageBounds {
	seen := [2]bool{}
	for k, v := range vals {
		if null == nil || !null[k] {
			seen[boolInt(v)] = true
		}
	}
	pb := pageBounds{ok: seen[0] || seen[1]}
	if pb.ok {
		pb.min, pb.max = []byte{byte(boolInt(!seen[0]))}, []byte{byte(boolInt(seen[1]))}
	}
	return pb
}

// bytesBounds is the bounds of the values bin[off[k]:off[k+1]] without the nulls.
func bytesBounds(order orderKind, bin []byte, off []uint32, null []bool) pageBounds {
	var pb pageBounds
	for k := range len(off) - 1 {
		if null != nil && null[k] {
			continue
		}
		v := bin[off[k]:off[k+1]]
		switch {
		case !pb.ok:
			pb.min, pb.max, pb.ok = v, v, true
		case compareBytes(order, v, pb.min) < 0:
			pb.min = v
		case compareBytes(order, v, pb.max) > 0:
			pb.max = v
		}
	}
	if pb.ok {
		pb.min, pb.max = bytes.Clone(pb.min), bytes.Clone(pb.max)
	}
	return pb
}
