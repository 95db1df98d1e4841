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
	if len(merged) != len(files) {
		return 0, 0, fmt.Errorf("forecast: %d merge marks for %d files", len(merged), len(files))
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
		return 1, 1, nil
	}
	distinct, err := sortedDistinct(with)
	if err != nil {
		return 0, 0, err
	}
	m := len(distinct)
	var lo, hi, mlo, mhi []int
	kept := 0
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
			kept++
		}
	}
	depth := probeDepths(m, lo, hi)
	now = effectiveness(depth, nil, 0, 0, 0, len(with))
	if len(mlo) == 0 {
		return now, now, nil
	}
	mergedDepth := probeDepths(m, mlo, mhi)
	forecast = effectiveness(depth, mergedDepth, GridDepth(outputs, dims), 2*uLo, 2*uHi, kept+max(outputs, 1))
	return now, forecast, nil
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

// effectiveness is 1 − OverlapRatio over probe depths, less sub at every probe and plus add at the probes
// in [from, to], for n files.
func effectiveness(depth, sub []int64, add float64, from, to, n int) float64 {
	var sum float64
	covered := 0
	for p, d := range depth {
		v := float64(d)
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
