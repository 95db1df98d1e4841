package cluster

import (
	"cmp"
	"fmt"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/layoutstats"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// forecastSlack is how far below the bound the forecast must stay: the forecast gap was off by up to
// 0.005 from the measured one on the benchmark's cycles (bench/RESULTS.md), so a forecast of exactly
// the bound could land just above it.
const forecastSlack = 0.005

// maxEscalationCandidates bounds the prefixes of ZCubes weighed, smallest first; past them only every
// clustered file (a FULL) is (the forecasts cost O(files) each).
const maxEscalationCandidates = 64

// escalation is what the quality check added to an incremental run, and why.
type escalation struct {
	// column is the clustering column with the largest forecast gap; gap is that gap to FULL after the
	// plain incremental run, and after the gap with the escalated ZCubes reclustered too.
	column     string
	gap, after float64
	reference  float64 // FULL's skipping effectiveness on the same data (layoutstats.IdealSkipping)
	zcubes     int
	files      int
	bytes      int64
	full       bool // every clustered file was needed: the run became a FULL one
	keys       map[delta.FileKey]bool
	// choice is the candidate taken, alternatives the others within the bound (schedule.go).
	choice       candidate
	alternatives []candidate
	appendBytes  int64 // the recent append size the schedule amortised over
}

func (e *escalation) describe(threshold float64) string {
	what := fmt.Sprintf("%d more ZCube(s), %d files, %d bytes", e.zcubes, e.files, e.bytes)
	if e.full {
		what = fmt.Sprintf("every clustered file (%d ZCube(s), %d files, %d bytes)", e.zcubes, e.files, e.bytes)
	}
	return fmt.Sprintf("escalated: the incremental layout would be %.3f below FULL (%.3f) on %s, over the max quality gap %.3f; "+
		"reclustering %s with it brings the forecast gap to %.3f%s", e.gap, e.reference, e.column, threshold, what, e.after, e.why())
}

// layoutModel holds what the forecasts need about the live files this implementation may rewrite: their
// bounds on every clustering column, sizes and ZCubes.
type layoutModel struct {
	files   []*delta.AddFile
	bounds  [][]layoutstats.Bounds // [column][file]
	names   []string
	target  int64
	dims    int
	total   int64
	indexOf map[*delta.AddFile]int
	ref     float64
}

func newLayoutModel(snap *delta.Snapshot, keys [][]string, names []string, target int64) (*layoutModel, error) {
	m := &layoutModel{names: names, target: target, dims: len(keys), indexOf: map[*delta.AddFile]int{}}
	m.bounds = make([][]layoutstats.Bounds, len(keys))
	for _, f := range snap.Files() {
		if table.ClassifyClustering(f, names) == table.ForeignClustered {
			continue
		}
		b, err := fileBox(snap, f, keys)
		if err != nil {
			return nil, err
		}
		m.indexOf[f] = len(m.files)
		m.files = append(m.files, f)
		for c := range keys {
			m.bounds[c] = append(m.bounds[c], b.Bounds[c])
		}
		m.total += f.Size
	}
	return m, nil
}

// outputs is the number of files a rewrite of bytes writes.
func (m *layoutModel) outputs(bytes int64) int {
	return int(max(1, (bytes+m.target-1)/m.target))
}

// reference is FULL's skipping effectiveness on the table: a grid of total ÷ target files
// (layoutstats.GridSkipping, the model the forecasts use), plus the
// margin by which the table's largest ZCube beats the grid of its own size (the curve's pieces are
// not the grid's squares, and FULL measures slightly above it: bench/RESULTS.md), up to 0.02.
func (m *layoutModel) reference() float64 {
	if m.ref == 0 {
		m.ref = layoutstats.GridSkipping(m.outputs(m.total), m.dims) + m.margin()
	}
	return m.ref
}

// margin is the largest ZCube's measured skipping effectiveness (its worst column, among its own files)
// above layoutstats.GridSkipping for its file count, in [0, 0.02].
func (m *layoutModel) margin() float64 {
	cubes := m.zcubes(make([]bool, len(m.files)))
	if len(cubes) == 0 {
		return 0
	}
	largest := cubes[len(cubes)-1]
	if len(largest) < 2 {
		return 0
	}
	worst := 1.0
	for c := range m.bounds {
		bs := make([]layoutstats.Bounds, len(largest))
		for i, f := range largest {
			bs[i] = m.bounds[c][m.indexOf[f]]
		}
		q, err := layoutstats.Quality(m.names[c], bs)
		if err != nil || q.Status != layoutstats.StatusOK {
			return 0
		}
		worst = min(worst, q.SkippingEffectiveness)
	}
	return min(0.02, max(0, worst-layoutstats.GridSkipping(len(largest), m.dims)))
}

// gap forecasts the largest gap to FULL over the clustering columns after the marked files are
// reclustered together (bytes of them), and the column it is on.
func (m *layoutModel) gap(merged []bool, bytes int64) (float64, string, error) {
	ref := m.reference()
	worst, column := 0.0, ""
	for c := range m.bounds {
		_, after, err := layoutstats.ForecastSkipping(m.bounds[c], merged, m.outputs(bytes), m.dims)
		if err != nil {
			return 0, "", fmt.Errorf("clustering column %s: %w", m.names[c], err)
		}
		if g := ref - after; g > worst || column == "" {
			worst, column = g, m.names[c]
		}
	}
	return worst, column, nil
}

// alignedGap forecasts the largest gap to FULL after an aligned run (regions.go): the selected files
// go, and each region gets a piece as wide as its base file — one for the new data if there is any
// (new data is assumed to reach every region), and one per full region level merged.
func (m *layoutModel) alignedGap(sel *selection, merged []bool) (float64, error) {
	rs := sel.regions
	copies := make([]int, len(m.files))
	if len(sel.merging) < len(sel.files) {
		for _, f := range rs.files {
			copies[m.indexOf[f]]++
		}
	}
	for _, r := range sel.mergeRegions {
		copies[m.indexOf[rs.files[r]]]++
	}
	ref, worst := m.reference(), 0.0
	for c := range m.bounds {
		after, err := layoutstats.ForecastWithCopies(m.names[c], m.bounds[c], merged, copies)
		if err != nil {
			return 0, err
		}
		worst = max(worst, ref-after)
	}
	return worst, nil
}

// escalate bounds the drift of incremental clustering: when the layout the incremental selection would
// leave is forecast to be more than opts.MaxQualityGap below what FULL reaches on the same data, it adds
// whole ZCubes to the selection: a partial FULL of the drifted part only. The candidates are the
// prefixes of the ZCubes smallest first (the youngest, stacked over the widest ranges for their size)
// that bring the forecast within the bound, up to taking every clustered file (a FULL); of those it
// takes the one of least cost per cycle until the next escalation (schedule.go). It returns nil when
// the selection needs nothing more.
func escalate(snap *delta.Snapshot, keys [][]string, names []string, opts Options, target int64, sel *selection) (*escalation, error) {
	if opts.Full || len(sel.files) == 0 {
		return nil, nil
	}
	m, err := newLayoutModel(snap, keys, names, target)
	if err != nil {
		return nil, err
	}
	return m.escalate(sel, max(0, opts.MaxQualityGap-forecastSlack))
}

// escalate is escalate on the model of the table's layout, with the forecast bound.
func (m *layoutModel) escalate(sel *selection, bound float64) (*escalation, error) {
	merged := make([]bool, len(m.files))
	var bytes int64
	for _, f := range sel.files {
		if i, ok := m.indexOf[f]; ok {
			merged[i] = true
			bytes += f.Size
		}
	}
	if sel.regions != nil {
		aligned, err := m.alignedGap(sel, merged)
		if err != nil || aligned <= bound {
			return nil, err
		}
		// The aligned layout drifted too far (the base no longer resembles FULL on the grown table):
		// escalate as without regions, and cluster this run's new data on its own with the rest.
		sel.regions = nil
	}
	gap, column, err := m.gap(merged, bytes)
	if err != nil || gap <= bound {
		return nil, err
	}
	appendBytes := newBytes(sel, m.names, bytes)
	cands, err := m.candidates(merged, bytes, appendBytes, bound)
	if err != nil {
		return nil, err
	}
	best := cheapest(cands)
	if best < 0 {
		return nil, nil // nothing clustered is left to add
	}
	c := cands[best]
	e := &escalation{column: column, gap: gap, after: c.gap, reference: m.reference(), keys: map[delta.FileKey]bool{},
		zcubes: c.zcubes, full: c.full, choice: c, appendBytes: appendBytes}
	for i, alt := range cands {
		if i != best && alt.feasible {
			e.alternatives = append(e.alternatives, alt)
		}
	}
	for _, cube := range m.zcubes(merged)[:c.zcubes] {
		for _, f := range cube {
			sel.files = append(sel.files, f)
			e.keys[f.Key()] = true
			e.files++
			e.bytes += f.Size
		}
	}
	sel.escalated = e.files
	return e, nil
}

// newBytes is the size of the run's new data, the files of its selection that are not clustered yet
// (appended since the last run): the append size the schedule expects again. A run with none (only
// overlapping groups) counts all it selected.
func newBytes(sel *selection, names []string, selected int64) int64 {
	var n int64
	for _, f := range sel.files {
		if table.ClassifyClustering(f, names) != table.Clustered || f.Tags[TagZCubeID] == "" {
			n += f.Size
		}
	}
	if n == 0 {
		return max(selected, 1)
	}
	return n
}

// zcubes groups the clustered files not yet marked by ZCube id, smallest ZCube (by bytes) first, ties by
// id; each group's files in path order, so the plan is deterministic.
func (m *layoutModel) zcubes(merged []bool) [][]*delta.AddFile {
	by := map[string][]*delta.AddFile{}
	size := map[string]int64{}
	for i, f := range m.files {
		if merged[i] || table.ClassifyClustering(f, m.names) != table.Clustered {
			continue
		}
		id := f.Tags[TagZCubeID]
		by[id] = append(by[id], f)
		size[id] += f.Size
	}
	ids := make([]string, 0, len(by))
	for id := range by {
		ids = append(ids, id)
	}
	slices.SortFunc(ids, func(a, b string) int { return cmp.Or(cmp.Compare(size[a], size[b]), strings.Compare(a, b)) })
	out := make([][]*delta.AddFile, len(ids))
	for i, id := range ids {
		files := by[id]
		slices.SortFunc(files, func(a, b *delta.AddFile) int { return strings.Compare(a.Path, b.Path) })
		out[i] = files
	}
	return out
}
