package layoutstats

import (
	"fmt"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Bounds are one file's statistics for one column; Min or Max is nil when the file has no such statistic.
type Bounds struct {
	Min, Max types.Value
}

// ColumnQuality describes how well the live files' ranges on one column support data skipping.
// Definitions (docs/clustering-quality.md):
//   - probes: every distinct file boundary value, plus one point strictly inside each gap between consecutive
//     boundaries; depth(p) = number of files whose [min, max] contains p;
//   - AvgDepth: mean depth over probes with depth ≥ 1; MaxDepth: the largest depth;
//   - AvgCoveragePct: mean over files of the file's range width / the table's range width × 100 (value space for
//     numbers and times, rank space for strings and binaries; 100 when the table's range is a single point);
//   - OverlapRatio = (AvgDepth − 1) / (NumFilesWithStats − 1), 0 below two files;
//   - SkippingEffectiveness = 1 − OverlapRatio: the share of non-matching files a point query can skip.
//
// MeasuredSkipping checks the estimate: for a deterministic sample of point queries on real values (file
// boundary values), the mean share of the other files that a statistics-based reader skips; files without
// statistics are never skipped.
type ColumnQuality struct {
	Column                string
	Status                string // ok | no_stats
	NumFiles              int64
	NumFilesWithStats     int64
	AvgCoveragePct        float64
	AvgDepth              float64
	MaxDepth              int64
	OverlapRatio          float64
	SkippingEffectiveness float64
	MeasuredSkipping      float64
	PointQueries          int
}

// Quality status values.
const (
	StatusOK      = "ok"
	StatusNoStats = "no_stats"
)

// maxPointQueries bounds the sample of point queries behind MeasuredSkipping.
const maxPointQueries = 100

// Quality computes the metrics of one column from the live files' bounds.
func Quality(column string, files []Bounds) (ColumnQuality, error) {
	q := ColumnQuality{Column: column, NumFiles: int64(len(files)), Status: StatusNoStats}
	var with []Bounds
	for _, f := range files {
		if f.Min != nil && f.Max != nil {
			with = append(with, f)
		}
	}
	q.NumFilesWithStats = int64(len(with))
	if len(with) == 0 {
		return q, nil
	}
	q.Status = StatusOK

	distinct, err := sortedDistinct(with)
	if err != nil {
		return q, fmt.Errorf("column %s: %w", column, err)
	}
	lo, hi := make([]int, len(with)), make([]int, len(with))
	for i, f := range with {
		lo[i], hi[i] = rankOf(distinct, f.Min), rankOf(distinct, f.Max)
		if lo[i] > hi[i] { // min > max: corrupt statistics; count the file as covering nothing it claims
			lo[i], hi[i] = hi[i], lo[i]
		}
	}
	depth := probeDepths(len(distinct), lo, hi)
	var sum, covered int64
	for _, d := range depth {
		if d > 0 {
			sum += d
			covered++
		}
		q.MaxDepth = max(q.MaxDepth, d)
	}
	q.AvgDepth = float64(sum) / float64(covered)
	if n := q.NumFilesWithStats; n >= 2 {
		q.OverlapRatio = (q.AvgDepth - 1) / float64(n-1)
	}
	q.SkippingEffectiveness = 1 - q.OverlapRatio
	q.AvgCoveragePct = coverage(with, distinct, lo, hi)
	q.MeasuredSkipping, q.PointQueries = measuredSkipping(depth, len(distinct), q.NumFiles, q.NumFiles-q.NumFilesWithStats)
	return q, nil
}

// probeDepths returns the depth at each of the 2m-1 probes over m distinct boundaries: probe 2k is boundary k,
// probe 2k+1 is the gap between boundaries k and k+1. A file with ranks [lo, hi] covers probes 2lo..2hi.
func probeDepths(m int, lo, hi []int) []int64 {
	diff := make([]int64, 2*m)
	for i := range lo {
		diff[2*lo[i]]++
		diff[2*hi[i]+1]--
	}
	depth := make([]int64, 2*m-1)
	var running int64
	for p := range depth {
		running += diff[p]
		depth[p] = running
	}
	return depth
}

func coverage(files []Bounds, distinct []types.Value, lo, hi []int) float64 {
	first, last := distinct[0], distinct[len(distinct)-1]
	tableLo, okLo := numeric(first)
	tableHi, okHi := numeric(last)
	useValues := okLo && okHi
	var sum float64
	for i, f := range files {
		var width, total float64
		if useValues {
			mn, _ := numeric(f.Min)
			mx, _ := numeric(f.Max)
			width, total = mx-mn, tableHi-tableLo
		} else {
			width, total = float64(hi[i]-lo[i]), float64(len(distinct)-1)
		}
		if total <= 0 {
			sum += 100
			continue
		}
		sum += max(0, width) / total * 100
	}
	return sum / float64(len(files))
}

// measuredSkipping evaluates point queries on up to maxPointQueries boundary values spread evenly over their
// sorted order.
func measuredSkipping(depth []int64, m int, numFiles, noStats int64) (float64, int) {
	if numFiles < 2 {
		return 1, 0
	}
	queries := min(m, maxPointQueries)
	var sum float64
	for i := 0; i < queries; i++ {
		k := i * m / queries
		read := depth[2*k] + noStats
		sum += float64(numFiles-read) / float64(numFiles-1)
	}
	return max(0, sum/float64(queries)), queries
}

func sortedDistinct(files []Bounds) ([]types.Value, error) {
	all := make([]types.Value, 0, 2*len(files))
	for _, f := range files {
		all = append(all, f.Min, f.Max)
	}
	var cmpErr error
	slices.SortFunc(all, func(a, b types.Value) int {
		c, err := types.Compare(a, b)
		if err != nil && cmpErr == nil {
			cmpErr = err
		}
		return c
	})
	if cmpErr != nil {
		return nil, fmt.Errorf("statistics are not comparable: %w", cmpErr)
	}
	return slices.CompactFunc(all, func(a, b types.Value) bool {
		c, _ := types.Compare(a, b)
		return c == 0
	}), nil
}

// rankOf returns the position of v among the sorted distinct values (it is always present).
func rankOf(sorted []types.Value, v types.Value) int {
	i, _ := slices.BinarySearchFunc(sorted, v, func(e, t types.Value) int {
		c, _ := types.Compare(e, t)
		return c
	})
	return i
}

// numeric maps numbers and times to their value space; strings, binaries and booleans have none.
func numeric(v types.Value) (float64, bool) {
	switch x := v.(type) {
	case int8:
		return float64(x), true
	case int16:
		return float64(x), true
	case int32:
		return float64(x), true
	case int64:
		return float64(x), true
	case float32:
		return float64(x), true
	case float64:
		return x, true
	case types.DecimalValue:
		f, _ := x.Rat().Float64()
		return f, true
	case types.Date:
		return float64(x), true
	case types.Timestamp:
		return float64(x), true
	case types.TimestampNTZ:
		return float64(x), true
	}
	return 0, false
}
