package parquetio

import (
	"iter"
	"sort"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
)

// rgSlice is a run of physical rows [from, to) of one input row group.
type rgSlice struct {
	input   int
	rg      int
	from    int64
	to      int64
	deleted []int64 // deleted rows within [from, to), as offsets in the row group, ascending
	live    int64
}

// outGroup is one output row group: slices of inputs that all take the column-copy path, or all the
// logical path (general). Consecutive slices of one input row group are contiguous.
type outGroup struct {
	general bool
	whole   bool // one whole input row group, kept as it is (RewriteOptions.CopyPages)
	slices  []rgSlice
	rows    int64   // live rows
	cost    []int64 // estimated input bytes per output leaf, to start expensive columns first
}

// groupPlanner cuts the inputs' row groups into output row groups of about targetBytes, estimated from
// the stored (compressed) bytes of the columns each output leaf reads.
type groupPlanner struct {
	// keepRowGroups makes each column-copy input row group of at most twice targetBytes one output
	// row group (RewriteOptions.CopyPages).
	keepRowGroups bool
	targetBytes   int64
	maxRows       int64
	numLeaves     int
	groups        []*outGroup
	cur           *outGroup
	curBytes      float64
}

func (p *groupPlanner) close() {
	if p.cur != nil && p.cur.rows > 0 {
		p.groups = append(p.groups, p.cur)
	}
	p.cur, p.curBytes = nil, 0
}

// deletedIn lists the deleted rows of [first, first+n) as offsets from first.
func deletedIn(dv *roaring64.Bitmap, first, n int64) []int64 {
	if dv == nil || n == 0 {
		return nil
	}
	var out []int64
	it := dv.Iterator()
	it.AdvanceIfNeeded(uint64(first))
	for it.HasNext() {
		v := int64(it.Next())
		if v >= first+n {
			break
		}
		out = append(out, v-first)
	}
	return out
}

// wholeRowGroups yields, for each row group of a file that keeps a live row, one slice over all of it:
// the unit Permute and SortKeys decode a column in.
func wholeRowGroups(input int, f *File, dv *roaring64.Bitmap) iter.Seq[rgSlice] {
	return func(yield func(rgSlice) bool) {
		for rg := range f.NumRowGroups() {
			info := f.RowGroup(rg)
			deleted := deletedIn(dv, info.FirstRow, info.NumRows)
			live := info.NumRows - int64(len(deleted))
			if live == 0 {
				continue
			}
			if !yield(rgSlice{input: input, rg: rg, from: 0, to: info.NumRows, deleted: deleted, live: live}) {
				return
			}
		}
	}
}

// add plans one input row group.
func (p *groupPlanner) add(input int, f *File, rg int, plan *inputPlan, dv *roaring64.Bitmap) {
	info := f.RowGroup(rg)
	deleted := deletedIn(dv, info.FirstRow, info.NumRows)
	if int64(len(deleted)) == info.NumRows {
		return // nothing survives: the row group is not even read
	}
	// Estimated bytes per physical row and per output leaf.
	md := &f.metadata().RowGroups[rg]
	leafBytes := make([]float64, p.numLeaves)
	var rowBytes float64
	for j, src := range plan.sources {
		if src.in != nil && info.NumRows > 0 {
			leafBytes[j] = float64(md.Columns[src.in.leaf].MetaData.TotalCompressedSize) / float64(info.NumRows)
			rowBytes += leafBytes[j]
		}
	}
	if plan.general {
		rowBytes = float64(info.CompressedBytes) / float64(max(info.NumRows, 1))
	}
	if p.keepRowGroups && !plan.general && info.CompressedBytes <= 2*p.targetBytes {
		p.close()
		g := &outGroup{whole: true, rows: info.NumRows - int64(len(deleted)), cost: make([]int64, p.numLeaves)}
		g.slices = []rgSlice{{input: input, rg: rg, from: 0, to: info.NumRows, deleted: deleted, live: g.rows}}
		for j := range leafBytes {
			g.cost[j] = int64(leafBytes[j] * float64(info.NumRows))
		}
		p.groups = append(p.groups, g)
		return
	}
	from := int64(0)
	for from < info.NumRows {
		if p.cur != nil && p.cur.general != plan.general {
			p.close()
		}
		if p.cur == nil {
			p.cur = &outGroup{general: plan.general, cost: make([]int64, p.numLeaves)}
		}
		// rows that still fit the current output group
		room := info.NumRows - from
		if rowBytes > 0 {
			fit := int64((float64(p.targetBytes) - p.curBytes) / rowBytes)
			room = min(room, max(fit, 1))
		}
		if p.maxRows > 0 {
			room = min(room, max(p.maxRows-p.cur.rows, 1))
		}
		to := from + room
		lo := sort.Search(len(deleted), func(i int) bool { return deleted[i] >= from })
		hi := sort.Search(len(deleted), func(i int) bool { return deleted[i] >= to })
		s := rgSlice{input: input, rg: rg, from: from, to: to, deleted: deleted[lo:hi], live: room - int64(hi-lo)}
		p.cur.slices = append(p.cur.slices, s)
		p.cur.rows += s.live
		p.curBytes += rowBytes * float64(room)
		for j := range leafBytes {
			p.cur.cost[j] += int64(leafBytes[j] * float64(room))
		}
		if p.curBytes >= float64(p.targetBytes) || (p.maxRows > 0 && p.cur.rows >= p.maxRows) {
			p.close()
		}
		from = to
	}
}
