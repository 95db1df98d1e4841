package parquetio

import (
	"context"
	"errors"
	"fmt"
	"io"

	"github.com/parquet-go/parquet-go/format"
)

// lane copies one output leaf column, row group after row group. It owns the column's encoder and its
// read position in the input being copied; a lane runs one task at a time, in row group order.
type lane struct {
	leaf  *leafDesc
	enc   *columnEncoder
	sink  func(*columnBatch) error // when set, batches go here instead of enc (permute.go)
	rt    *rtFill                  // set on a materialized row-tracking column (rowtracking.go)
	files []*File
	plans []*inputPlan
	rb    *readBuffers

	// read position
	input, rg int
	cr        *chunkReader
	page      rawPage
	i, vi     int   // next triplet and value in page
	row       int64 // records started in the current input row group
	done      bool  // current chunk exhausted
	di        int   // next entry of the current slice's deleted rows

	// scratch
	batch  columnBatch
	conv   valueSlices
	gath   valueSlices
	keep   []int32
	defs   []byte
	reps   []byte
	mapped []byte
	zeros  []byte
	// convDict is the current input dictionary converted to the output type (INT96 timestamps…), made
	// once per input chunk; convDictGen identifies the dictionary content it was made from.
	convDict    sourceDict
	convDictGen uint64
	// plain re-encodes the touched pages of a page copy (rewrite_pagecopy.go); hw encodes the copied
	// pages' headers.
	plain *columnEncoder
	hw    *headerWriter
}

func newLane(leaf *leafDesc, cfg *encoderConfig, files []*File, plans []*inputPlan, bufSize int) *lane {
	return &lane{leaf: leaf, enc: newColumnEncoder(leaf, cfg), files: files, plans: plans, rb: newReadBuffers(bufSize), input: -1}
}

// run copies the lane's column of one output row group and returns the finished chunk.
func (l *lane) run(ctx context.Context, j int, g *outGroup) (*encodedChunk, error) {
	if len(g.slices) == 1 {
		if s := g.slices[0]; l.pageCopyable(g, &l.plans[s.input].sources[j]) {
			c, err := l.copyPages(ctx, s, &l.plans[s.input].sources[j])
			if err != nil {
				return nil, fmt.Errorf("input %d, row group %d: %w", s.input, s.rg, err)
			}
			return c, nil
		}
	}
	for _, s := range g.slices {
		if err := ctx.Err(); err != nil {
			return nil, err
		}
		src := &l.plans[s.input].sources[j]
		if src.missing {
			var err error
			if l.rt != nil {
				err = l.rt.computed(s, l.files[s.input].rowGroupStart[s.rg], l.leaf, l.write)
			} else {
				err = l.nulls(s.live)
			}
			if err != nil {
				return nil, fmt.Errorf("input %d, row group %d: %w", s.input, s.rg, err)
			}
			continue
		}
		if err := l.copySlice(ctx, s, src); err != nil {
			return nil, fmt.Errorf("input %d, row group %d: %w", s.input, s.rg, err)
		}
	}
	return l.enc.finishChunk()
}

// nulls writes n rows of a column the input does not store: level 0 everywhere, no values.
func (l *lane) nulls(n int64) error {
	for n > 0 {
		k := int(min(n, writeStep))
		for len(l.zeros) < k {
			l.zeros = append(l.zeros, 0)
		}
		b := &l.batch
		*b = columnBatch{n: k}
		if l.leaf.maxDef > 0 {
			b.defs = l.zeros[:k]
		}
		if l.leaf.maxRep > 0 {
			b.reps = l.zeros[:k]
		}
		if err := l.write(b); err != nil {
			return err
		}
		n -= int64(k)
	}
	return nil
}

// seek positions the lane at row from of the slice's input row group.
func (l *lane) seek(ctx context.Context, s rgSlice, src *leafSource) error {
	if l.cr == nil || l.input != s.input || l.rg != s.rg || l.row > s.from {
		cr, err := l.files[s.input].openChunk(s.rg, src.in, l.rb)
		if err != nil {
			return err
		}
		l.cr, l.input, l.rg = cr, s.input, s.rg
		l.page.n, l.i, l.vi, l.row, l.done = 0, 0, 0, 0, false
		l.convDictGen = 0
	}
	if l.row < s.from {
		// Rows of a fully deleted stretch that no output group asked for: decode and drop them.
		skip := rgSlice{input: s.input, rg: s.rg, from: l.row, to: s.from, deleted: nil}
		return l.copyRange(ctx, skip, src, true)
	}
	return nil
}

func (l *lane) ready() (bool, error) {
	for l.i >= l.page.n {
		if l.done {
			return false, nil
		}
		err := l.cr.next(&l.page)
		if errors.Is(err, io.EOF) {
			l.done = true
			return false, nil
		}
		if err != nil {
			return false, err
		}
		l.i, l.vi = 0, 0
	}
	return true, nil
}

func (l *lane) copySlice(ctx context.Context, s rgSlice, src *leafSource) error {
	if err := l.seek(ctx, s, src); err != nil {
		return err
	}
	return l.copyRange(ctx, s, src, false)
}

// copyRange moves the triplets of rows [s.from, s.to) page by page into the encoder, dropping deleted
// rows, mapping levels and converting values in bulk. With discard, rows are only consumed.
func (l *lane) copyRange(ctx context.Context, s rgSlice, src *leafSource, discard bool) error {
	maxDefIn := byte(src.in.maxDef)
	l.di = 0
	for {
		if err := ctx.Err(); err != nil {
			return err
		}
		ok, err := l.ready()
		if err != nil {
			return err
		}
		p := &l.page
		if !ok {
			if l.row < s.to {
				return fmt.Errorf("column %q has %d rows, the row group %d", src.in.pathString(), l.row, s.to)
			}
			return nil
		}
		i0, startRow := l.i, l.row
		cont := p.reps != nil && p.reps[i0] != 0 // first triplet continues the record before
		i := i0
		if p.reps == nil {
			n := int(min(int64(p.n-i0), s.to-l.row))
			i += n
			l.row += int64(n)
		} else {
			for i < p.n {
				if p.reps[i] == 0 {
					if l.row == s.to {
						break
					}
					l.row++
				}
				i++
			}
		}
		if i == i0 {
			return nil // the next record belongs to the next slice
		}
		nv := i - i0
		if p.defs != nil {
			nv = countEqual(p.defs[i0:i], maxDefIn)
		}
		v0 := l.vi
		l.i, l.vi = i, v0+nv
		if discard {
			continue
		}
		first := startRow
		if cont {
			first--
		}
		if err := l.emit(p, src, i0, i, v0, nv, first, s.deleted); err != nil {
			return err
		}
	}
}

// emit hands triplets [i0, i1) and values [v0, v0+nv) of page p to the encoder. first is the record of
// triplet i0.
func (l *lane) emit(p *rawPage, src *leafSource, i0, i1, v0, nv int, first int64, deleted []int64) error {
	// The batch only borrows: page buffers or the lane's scratch (resetting it would write into them).
	b := &l.batch
	*b = columnBatch{n: i1 - i0}
	b.defs, b.reps = nil, nil
	if p.defs != nil {
		b.defs = p.defs[i0:i1]
	}
	if p.reps != nil {
		b.reps = p.reps[i0:i1]
	}
	var vals *valueSlices
	var idx []int32
	if p.dict != nil {
		idx = p.idx[v0 : v0+nv]
	} else {
		vals = &p.valueSlices
	}
	lo, hi := v0, v0+nv

	// Deleted records: gather what survives.
	for l.di < len(deleted) && deleted[l.di] < first {
		l.di++
	}
	last := first + int64(countRecords(b.reps, b.n, b.reps != nil && b.reps[0] != 0)) - 1
	if l.di < len(deleted) && deleted[l.di] <= last {
		l.gather(p, src, i0, i1, v0, first, deleted)
		b.n = len(l.defs)
		if b.n == 0 {
			return nil // every record deleted (and l.defs may still be nil, which mapLevels would take for "no levels")
		}
		if b.defs != nil {
			b.defs = l.defs
		}
		if b.reps != nil {
			b.reps = l.reps
		}
		if p.dict != nil {
			idx = l.keep
		} else {
			gatherValues(&l.gath, &p.valueSlices, src.in.lt.phys, l.keep)
			vals = &l.gath
			lo, hi = 0, len(l.keep)
		}
	}
	if err := l.mapLevels(b, src); err != nil {
		return err
	}
	if p.dict != nil {
		b.idx, b.src = idx, l.dictFor(p.dict, src.conv)
	} else {
		if src.conv != convIdentity {
			convert(&l.conv, vals, src.conv, lo, hi)
			vals, lo, hi = &l.conv, 0, hi-lo
		}
		b.valueSlices = subValues(vals, l.leaf.phys, lo, hi)
	}
	if l.rt != nil {
		if err := l.rt.fill(b, l.leaf, l.input, l.files[l.input].rowGroupStart[l.rg], first, deleted); err != nil {
			return err
		}
	}
	return l.write(b)
}

// countRecords counts the records a triplet run touches (a leading continuation counts its record).
func countRecords(reps []byte, n int, cont bool) int {
	if reps == nil {
		return n
	}
	c := countEqual(reps, 0)
	if cont {
		c++
	}
	return c
}

// gather keeps the triplets of records that are not deleted; l.keep receives the surviving value
// indexes (dictionary indexes for dictionary pages).
func (l *lane) gather(p *rawPage, src *leafSource, i0, i1, v0 int, first int64, deleted []int64) {
	maxDefIn := byte(src.in.maxDef)
	l.defs, l.reps, l.keep = l.defs[:0], l.reps[:0], l.keep[:0]
	rec := first // the record of triplet i0
	v := v0
	for t := i0; t < i1; t++ {
		if t > i0 && (p.reps == nil || p.reps[t] == 0) {
			rec++
		}
		isVal := p.defs == nil || p.defs[t] == maxDefIn
		for l.di < len(deleted) && deleted[l.di] < rec {
			l.di++
		}
		if l.di >= len(deleted) || deleted[l.di] != rec {
			if p.defs != nil {
				l.defs = append(l.defs, p.defs[t])
			} else {
				l.defs = append(l.defs, maxDefIn)
			}
			if p.reps != nil {
				l.reps = append(l.reps, p.reps[t])
			}
			if isVal {
				if p.dict != nil {
					l.keep = append(l.keep, p.idx[v])
				} else {
					l.keep = append(l.keep, int32(v))
				}
			}
		}
		if isVal {
			v++
		}
	}
}

// mapLevels rewrites stored definition levels into output ones (optional where the file had required,
// and the reverse when no null occurs).
func (l *lane) mapLevels(b *columnBatch, src *leafSource) error {
	if l.leaf.maxDef == 0 {
		b.defs = nil
		return nil
	}
	if src.defMap == nil && b.defs != nil {
		return nil
	}
	mapped := l.mapped[:0]
	if b.defs == nil {
		d := src.defMap[0]
		for range b.n {
			mapped = append(mapped, d)
		}
	} else {
		for _, d := range b.defs {
			m := src.defMap[d]
			if m == noNull {
				return fmt.Errorf("column %q holds a null but the output schema declares it non-nullable", joinPath(l.leaf.path))
			}
			mapped = append(mapped, m)
		}
	}
	b.defs, l.mapped = mapped, mapped
	return nil
}

// dictFor returns the dictionary to translate from, converted once per input chunk when needed.
func (l *lane) dictFor(d *sourceDict, conv convKind) *sourceDict {
	if conv == convIdentity {
		return d
	}
	if l.convDictGen == d.gen {
		return &l.convDict
	}
	c := &l.convDict
	c.phys, c.epoch = l.leaf.phys, 0
	convert(&c.valueSlices, &d.valueSlices, conv, 0, d.len())
	l.convDictGen = d.gen
	return c
}

// subValues returns values [lo, hi) of v; byte arrays keep their buffer and slice their offsets.
func subValues(v *valueSlices, phys format.Type, lo, hi int) valueSlices {
	var s valueSlices
	switch phys {
	case format.Boolean:
		s.bools = v.bools[lo:hi]
	case format.Int32:
		s.i32 = v.i32[lo:hi]
	case format.Int64:
		s.i64 = v.i64[lo:hi]
	case format.Int96:
		s.i96 = v.i96[lo:hi]
	case format.Float:
		s.f32 = v.f32[lo:hi]
	case format.Double:
		s.f64 = v.f64[lo:hi]
	default:
		s.bin, s.binOff = v.bin, v.binOff[lo:hi+1]
	}
	return s
}
