package layoutstats

import (
	"fmt"
	"math"
)

// IdealSkipping is the skipping effectiveness of one column in a perfect grid of k files clustered over
// dims columns (docs/clustering-quality.md): each value of a column lies in k^((dims−1)/dims) files, so
// OverlapRatio = (k^((dims−1)/dims) − 1) / (k − 1). For two columns this is (k − √k) / (k − 1), the
// reference FULL clustering reaches (bench/RESULTS.md measures FULL at or just above it).
func IdealSkipping(k, dims int) float64 {
	if k < 2 || dims < 1 {
		return 1
	}
	depth := math.Pow(float64(k), float64(dims-1)/float64(dims))
	return 1 - (depth-1)/float64(k-1)
}

// ForecastSkipping predicts one column's SkippingEffectiveness after the files marked in merged are
// reclustered together into outputs new files, without reading any data: it is the same measure as
// Quality (depths at the probes of the current boundaries), with the merged files' depth taken away and
// the outputs' added over the merged files' common range. Clustered together over dims columns, the
// outputs tile that range as a grid, so each probe inside it lies in outputs^((dims−1)/dims) of them.
// It returns the column's effectiveness now and forecast; files without both bounds count as Quality
// counts them (not at all).
func ForecastSkipping(files []Bounds, merged []bool, outputs, dims int) (now, forecast float64, err error) {
	c, err := newColumnForecast(files, merged)
	if err != nil {
		return 0, 0, err
	}
	return c.now(), c.after(outputs, dims, Appends{}, 0), nil
}

// columnForecast holds one column's probe depths, split into the files a rewrite keeps and the ones
// it merges, so that several rewrites and append horizons can be forecast from one pass over the
// statistics.
type columnForecast struct {
	empty       bool    // no file has both bounds: effectiveness 1 whatever happens
	depth       []int64 // every file's depth at each probe
	mergedDepth []int64 // the merged files' depth (nil when none is merged)
	from, to    int     // the merged files' common range, in probes
	kept, all   int     // files kept, and files with both bounds
}

func newColumnForecast(files []Bounds, merged []bool) (*columnForecast, error) {
	if len(merged) != len(files) {
		return nil, fmt.Errorf("forecast: %d merge marks for %d files", len(merged), len(files))
	}
	var with []Bounds
	var inMerge []bool
	for i, f := range files {
		if f.Min != nil && f.Max != nil {
			with = append(with, f)
			inMerge = append(inMerge, merged[i])
		}
	}
	if len(with) == 0 {
		return &columnForecast{empty: true}, nil
	}
	distinct, err := sortedDistinct(with)
	if err != nil {
		return nil, err
	}
	m := len(distinct)
	c := &columnForecast{all: len(with)}
	var lo, hi, mlo, mhi []int
	uLo, uHi := m, -1 // the merged files' common range, in rank space
	for i, f := range with {
		l, h := rankOf(distinct, f.Min), rankOf(distinct, f.Max)
		if l > h {
			l, h = h, l
		}
		lo, hi = append(lo, l), append(hi, h)
		if inMerge[i] {
			mlo, mhi = append(mlo, l), append(mhi, h)
			uLo, uHi = min(uLo, l), max(uHi, h)
		} else {
			c.kept++
		}
	}
	c.depth = probeDepths(m, lo, hi)
	if len(mlo) > 0 {
		c.mergedDepth = probeDepths(m, mlo, mhi)
		c.from, c.to = 2*uLo, 2*uHi
	}
	return c, nil
}

// now is the column's effectiveness as the files lie.
func (c *columnForecast) now() float64 {
	if c.empty {
		return 1
	}
	return effectiveness(c.depth, nil, 0, 0, 0, 0, c.all)
}

// after is the column's effectiveness once the merged files are rewritten into outputs files, and n
// appends of the given shape have landed over the whole range on top.
func (c *columnForecast) after(outputs, dims int, a Appends, n int) float64 {
	if c.empty {
		return 1
	}
	extra := float64(n) * a.depth(dims)
	files := c.all + n*max(a.Files, 1)
	if c.mergedDepth == nil {
		if n == 0 {
			return c.now()
		}
		return effectiveness(c.depth, nil, extra, 0, 0, 0, files)
	}
	return effectiveness(c.depth, c.mergedDepth, extra, GridDepth(outputs, dims), c.from, c.to, c.kept+max(outputs, 1)+n*max(a.Files, 1))
}

// Appends describe the data each future run adds: Files new files (at least one), spanning the whole
// key range, as a plain incremental run leaves uniformly spread new data: clustered among
// themselves, they lie GridDepth(Files) deep over every value.
type Appends struct {
	Files int
}

func (a Appends) depth(dims int) float64 {
	if a.Files < 1 {
		return 1
	}
	return GridDepth(a.Files, dims)
}

// AppendsAbsorbed forecasts how many appends of shape a the layout left by rewriting the merged files
// into outputs files absorbs before the column's effectiveness falls below floor(n), the least allowed
// after n appends (the reference FULL grows with the table): the largest n ≤ limit with every
// 0 < i ≤ n above its floor. Appends are assumed to be clustered on their own and never merged with
// anything older, so the count is a lower estimate: auto-recluster merging four stacked appends only
// lengthens it.
func AppendsAbsorbed(files []Bounds, merged []bool, outputs, dims int, a Appends, floor func(n int) float64, limit int) (int, error) {
	c, err := newColumnForecast(files, merged)
	if err != nil {
		return 0, err
	}
	for n := 1; n <= limit; n++ {
		if c.after(outputs, dims, a, n) < floor(n) {
			return n - 1, nil
		}
	}
	return limit, nil
}

// GridDepth is the number of files of a curve-ordered rewrite into outputs files over dims columns that a
// value of the worst column lies in. Cut into 2^b equal pieces, a Hilbert or Z-order curve gives the
// columns b÷dims bits each and the remainder to some: with 2 or 8 files over two columns, one column is
// not split at all or only in two, so its values lie in all 2 or in 4 of 8 files: outputs ÷
// 2^⌊⌈log₂ outputs⌉ ÷ dims⌋, never below the even grid. Larger cuts mix the pieces' orientations
// (bench/RESULTS.md: FULL's 55 and 77 files reach the even grid on both columns), so from
// 2^(dims+1) files on the even grid's outputs^((dims−1)/dims) is used.
func GridDepth(outputs, dims int) float64 {
	if outputs <= 1 || dims <= 1 {
		return 1
	}
	even := math.Pow(float64(outputs), float64(dims-1)/float64(dims))
	if outputs > 1<<(dims+1) {
		return even
	}
	bits := int(math.Ceil(math.Log2(float64(outputs))))
	worst := float64(outputs) / float64(int(1)<<(bits/dims))
	return max(worst, even)
}

// GridSkipping is the skipping effectiveness of a curve-ordered rewrite into k files over dims columns
// on its worst column: IdealSkipping, with GridDepth for the small cuts whose pieces all lie the same way.
func GridSkipping(k, dims int) float64 {
	if k < 2 {
		return 1
	}
	return 1 - (GridDepth(k, dims)-1)/float64(k-1)
}

// effectiveness is 1 − OverlapRatio over probe depths plus all at every probe, less sub at every
// probe and plus add at the probes in [from, to] (sub nil: neither), for n files.
func effectiveness(depth, sub []int64, all, add float64, from, to, n int) float64 {
	var sum float64
	covered := 0
	for p, d := range depth {
		v := float64(d) + all
		if sub != nil {
			v -= float64(sub[p])
			if p >= from && p <= to {
				v += add
			}
		}
		if v > 0 {
			sum += v
			covered++
		}
	}
	if n < 2 || covered == 0 {
		return 1
	}
	return 1 - (sum/float64(covered)-1)/float64(n-1)
}

// ForecastWithCopies predicts one column's SkippingEffectiveness after the files marked in merged are
// removed and copies[i] files with file i's bounds are added: the layout an aligned clustering run
// leaves, whose outputs each lie within one file of the layout it aligns to. It is Quality of that
// layout: only the files the run leaves count, their boundaries the probes (1 when none has both
// bounds, as ForecastSkipping).
func ForecastWithCopies(column string, files []Bounds, merged []bool, copies []int) (float64, error) {
	if len(merged) != len(files) || len(copies) != len(files) {
		return 0, fmt.Errorf("forecast: %d merge marks and %d copy counts for %d files", len(merged), len(copies), len(files))
	}
	var after []Bounds
	for i, f := range files {
		n := copies[i]
		if !merged[i] {
			n++
		}
		for range n {
			after = append(after, f)
		}
	}
	q, err := Quality(column, after)
	if err != nil || q.Status != StatusOK {
		return 1, err
	}
	return q.SkippingEffectiveness, nil
}
