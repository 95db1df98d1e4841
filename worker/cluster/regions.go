package cluster

import (
	"cmp"
	"math"
	"slices"
	"sort"
	"strconv"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// Region tags of an aligned piece (regions.go): the path of the base file whose box the piece's rows
// lie in, and how many times the piece's rows were merged since they were appended.
const (
	TagRegion      = "deltakeeper.region"
	TagRegionLevel = "deltakeeper.regionLevel"
)

// DefaultRegionFanout is how many pieces of one region and level an incremental run lets accumulate
// before it merges them into one piece of the next level: a young row is rewritten once per 20-fold
// growth of its region's young data, and a region holds at most 19 pieces per level. 16 rewrote 2.08×
// the appended bytes over 40 cycles of 1 % appends on the 400,000-row benchmark (pieces of 73 rows
// carry their footers: a merge reads 1.35× what was appended), 20 rewrites 1.68× (bench/RESULTS.md).
const DefaultRegionFanout = 20

// regionSet is the layout new data is aligned to: the files of the table's largest ZCube of whole
// files (the base, usually the last FULL run's), each file a region, its box its statistics' bounds
// over the clustering columns as normalized keys (parquetio.KeyOf, the order the curve sorts in).
//
// Why: new data clustered on its own spans the whole key space however it is cut (1 % of uniform
// data is one file), and skipping effectiveness counts a file by its width, not its size, so every
// such file costs about 1 ÷ files of it: keeping a bound of 0.05 then means rewriting the young data
// again and again, 5.7× the appended bytes at best over 40 cycles of 1 % appends (bench/RESULTS.md
// "The floor"). Cut along the base's boxes instead, each piece is no wider than the base file it lies
// in, and the layout stays as selective as the base with nothing old rewritten: RocksDB cuts its
// compaction outputs at the next level's file boundaries for the same reason.
type regionSet struct {
	files []*delta.AddFile // by path
	lo    [][]uint64       // [region][column], inclusive
	hi    [][]uint64
	index map[string]int // path → region
	cells *regionGrid
}

// findRegions returns the table's base layout, or nil when it has none worth aligning to: the largest
// ZCube (by bytes) of files clustered by the current columns that carry no region tag, if it has at
// least two files, each with bounds on every clustering column.
func findRegions(snap *delta.Snapshot, logical [][]string, names []string) (*regionSet, error) {
	by := map[string][]*delta.AddFile{}
	size := map[string]int64{}
	for _, f := range snap.Files() {
		id := f.Tags[TagZCubeID]
		if id == "" || f.Tags[TagRegion] != "" || table.ClassifyClustering(f, names) != table.Clustered {
			continue
		}
		by[id] = append(by[id], f)
		size[id] += f.Size
	}
	best := ""
	for id := range by {
		if best == "" || cmp.Or(cmp.Compare(size[id], size[best]), strings.Compare(best, id)) > 0 {
			best = id
		}
	}
	if len(by[best]) < 2 {
		return nil, nil
	}
	files := by[best]
	slices.SortFunc(files, func(a, b *delta.AddFile) int { return strings.Compare(a.Path, b.Path) })
	rs := &regionSet{files: files, index: map[string]int{}}
	for i, f := range files {
		b, err := fileBox(snap, f, logical)
		if err != nil {
			return nil, err
		}
		lo, hi := make([]uint64, len(logical)), make([]uint64, len(logical))
		for c, bd := range b.Bounds {
			if bd.Min == nil || bd.Max == nil {
				return nil, nil // a region without bounds cannot be aligned to
			}
			lo[c], hi[c] = parquetio.KeyOf(bd.Min), parquetio.KeyOf(bd.Max)
			if lo[c] > hi[c] {
				return nil, nil
			}
		}
		rs.lo, rs.hi = append(rs.lo, lo), append(rs.hi, hi)
		rs.index[f.Path] = i
	}
	rs.cells = newRegionGrid(rs.lo, rs.hi)
	return rs, nil
}

// baseRegions is findRegions for an incremental run that aligns its new data (not FULL, not NoRegions).
func baseRegions(snap *delta.Snapshot, logical [][]string, names []string, opts Options) (*regionSet, error) {
	if opts.Full || opts.NoRegions {
		return nil, nil
	}
	return findRegions(snap, logical, names)
}

// regionOf is the region of a piece (its region tag names a base file), or -1.
func (rs *regionSet) regionOf(f *delta.AddFile) int {
	if rs == nil {
		return -1
	}
	path, ok := f.Tags[TagRegion]
	if !ok {
		return -1
	}
	if i, ok := rs.index[path]; ok {
		return i
	}
	return -1
}

// isBase reports whether f is one of the regions' files.
func (rs *regionSet) isBase(f *delta.AddFile) bool {
	i, ok := rs.index[f.Path]
	return ok && rs.files[i] == f
}

// pieceLevel is a piece's region level (0 when the tag is missing or unreadable).
func pieceLevel(f *delta.AddFile) int {
	n, err := strconv.Atoi(f.Tags[TagRegionLevel])
	if err != nil || n < 0 {
		return 0
	}
	return n
}

// locate is the region of a row's keys: the first region (in path order) whose box contains them,
// else the nearest box (the sum over columns of the distance outside it, each column scaled by the
// regions' span on it), so that rows beyond the base's range extend the pieces at its edge.
func (rs *regionSet) locate(keys []uint64) int {
	g := rs.cells
	near := [][]int32{g.cells[g.index(keys)], g.wide}
	for _, list := range near {
		for _, r := range list {
			if rs.contains(r, keys) {
				return int(r)
			}
		}
	}
	if len(near[0])+len(near[1]) == 0 {
		near = [][]int32{g.all}
	}
	best, bestD := 0, math.Inf(1)
	for _, list := range near {
		for _, r := range list {
			if d := rs.distance(int(r), keys); d < bestD {
				best, bestD = int(r), d
			}
		}
	}
	return best
}

func (rs *regionSet) contains(r int32, keys []uint64) bool {
	for c, k := range keys {
		if k < rs.lo[r][c] || k > rs.hi[r][c] {
			return false
		}
	}
	return true
}

func (rs *regionSet) distance(r int, keys []uint64) float64 {
	var d float64
	for c, k := range keys {
		var out uint64
		switch {
		case k < rs.lo[r][c]:
			out = rs.lo[r][c] - k
		case k > rs.hi[r][c]:
			out = k - rs.hi[r][c]
		}
		d += float64(out) / max(1, float64(rs.cells.span[c]))
	}
	return d
}

// regionGrid indexes the regions' boxes by a grid over their first two columns (quantiles of the
// boxes' lower bounds), so locating a row checks a few boxes instead of every one.
type regionGrid struct {
	cuts  [][]uint64 // per indexed column, ascending cell boundaries
	cells [][]int32  // row-major, the regions whose box meets the cell
	wide  []int32    // boxes spanning too many cells, checked for every row
	all   []int32
	span  []uint64 // per column, the regions' overall span
}

// maxCellsPerBox puts a box spanning more cells into the wide list.
const maxCellsPerBox = 64

func newRegionGrid(lo, hi [][]uint64) *regionGrid {
	dims := len(lo[0])
	g := &regionGrid{span: make([]uint64, dims)}
	for c := range dims {
		mn, mx := uint64(math.MaxUint64), uint64(0)
		for r := range lo {
			mn, mx = min(mn, lo[r][c]), max(mx, hi[r][c])
		}
		g.span[c] = mx - mn
	}
	side := max(1, int(math.Ceil(2*math.Sqrt(float64(len(lo))))))
	for c := range min(dims, 2) {
		mins := make([]uint64, len(lo))
		for r := range lo {
			mins[r] = lo[r][c]
		}
		slices.Sort(mins)
		var cuts []uint64
		for i := 1; i < side; i++ {
			v := mins[i*len(mins)/side]
			if len(cuts) == 0 || v > cuts[len(cuts)-1] {
				cuts = append(cuts, v)
			}
		}
		g.cuts = append(g.cuts, cuts)
	}
	g.cells = make([][]int32, g.size())
	for r := range lo {
		g.all = append(g.all, int32(r))
		a, b := g.cell(lo[r]), g.cell(hi[r])
		if g.count(a, b) > maxCellsPerBox {
			g.wide = append(g.wide, int32(r))
			continue
		}
		g.each(a, b, func(i int) { g.cells[i] = append(g.cells[i], int32(r)) })
	}
	return g
}

func (g *regionGrid) size() int {
	n := 1
	for _, c := range g.cuts {
		n *= len(c) + 1
	}
	return n
}

// cell is the grid coordinates of keys: per indexed column, the number of cuts at or below the key.
func (g *regionGrid) cell(keys []uint64) []int {
	out := make([]int, len(g.cuts))
	for c, cuts := range g.cuts {
		out[c] = sort.Search(len(cuts), func(i int) bool { return cuts[i] > keys[c] })
	}
	return out
}

func (g *regionGrid) count(a, b []int) int {
	n := 1
	for c := range a {
		n *= b[c] - a[c] + 1
	}
	return n
}

// each calls fn with the index of every cell between a and b (inclusive).
func (g *regionGrid) each(a, b []int, fn func(int)) {
	switch len(a) {
	case 1:
		for x := a[0]; x <= b[0]; x++ {
			fn(x)
		}
	case 2:
		w := len(g.cuts[1]) + 1
		for x := a[0]; x <= b[0]; x++ {
			for y := a[1]; y <= b[1]; y++ {
				fn(x*w + y)
			}
		}
	}
}

// index is the row-major index of the cell holding keys (each's numbering), without allocating: it
// runs once per new row.
func (g *regionGrid) index(keys []uint64) int {
	idx := 0
	for c, cuts := range g.cuts {
		idx = idx*(len(cuts)+1) + sort.Search(len(cuts), func(i int) bool { return cuts[i] > keys[c] })
	}
	return idx
}

// pieceGroup is where an input's rows go in an aligned rewrite: a fixed region and level (a piece
// being merged), or region -1 to locate each row (new data, level 0).
type pieceGroup struct {
	region, level int
}

// alignment is an aligned rewrite's plan: the regions, each input's group, and the groups' ids (the
// high bits of a row's sort key, so rows sort by group, then along the curve).
type alignment struct {
	regions *regionSet
	inputs  []pieceGroup // by input
	levels  int          // 1 + the highest level an output can get
}

// newAlignment routes the files in merging (pieces of a full region level, pieceMerges) to the next
// level of their region, and every other input's rows to level 0 of the region each row lies in.
func newAlignment(rs *regionSet, files []*delta.AddFile, merging map[*delta.AddFile]bool) *alignment {
	a := &alignment{regions: rs, inputs: make([]pieceGroup, len(files)), levels: 1}
	for i, f := range files {
		g := pieceGroup{region: -1}
		if r := rs.regionOf(f); r >= 0 && merging[f] {
			g = pieceGroup{region: r, level: pieceLevel(f) + 1}
		}
		a.inputs[i] = g
		a.levels = max(a.levels, g.level+1)
	}
	return a
}

// group is the id of a row's group: region × levels + level.
func (a *alignment) group(input int, keys []uint64) uint64 {
	g := a.inputs[input]
	if g.region < 0 {
		return uint64(a.regions.locate(keys)) * uint64(a.levels)
	}
	return uint64(g.region)*uint64(a.levels) + uint64(g.level)
}

// groupBits is the number of bits the group ids need.
func (a *alignment) groupBits() int {
	n := uint64(len(a.regions.files)) * uint64(a.levels)
	b := 0
	for 1<<b < n {
		b++
	}
	return b
}

// tags are the region tags of an output of group id g.
func (a *alignment) tags(g uint64) map[string]string {
	r, level := int(g/uint64(a.levels)), int(g%uint64(a.levels))
	return map[string]string{TagRegion: a.regions.files[r].Path, TagRegionLevel: strconv.Itoa(level)}
}

// pieceMerges selects, among the live pieces of the regions, every region and level that holds at
// least fanout pieces: they merge into one piece of the next level. It returns the pieces in path
// order and, per level merged, its region.
func pieceMerges(rs *regionSet, pieces []*delta.AddFile, fanout int) (files []*delta.AddFile, regions []int) {
	type rl struct{ region, level int }
	by := map[rl][]*delta.AddFile{}
	for _, f := range pieces {
		k := rl{rs.regionOf(f), pieceLevel(f)}
		by[k] = append(by[k], f)
	}
	keys := make([]rl, 0, len(by))
	for k, fs := range by {
		if len(fs) >= fanout {
			keys = append(keys, k)
		}
	}
	slices.SortFunc(keys, func(a, b rl) int { return cmp.Or(cmp.Compare(a.region, b.region), cmp.Compare(a.level, b.level)) })
	for _, k := range keys {
		files = append(files, by[k]...)
		regions = append(regions, k.region)
	}
	return files, regions
}
