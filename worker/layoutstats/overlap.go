package layoutstats

import (
	"cmp"
	"fmt"
	"slices"
)

// Box is a clustered file's bounds on every clustering column, in clustering-column order.
type Box struct {
	Bounds []Bounds
}

// OverlapOptions tune auto-reclustering (the defaults follow Microsoft Fabric's).
type OverlapOptions struct {
	// MinOverlapThreshold: two files overlap when their score exceeds it; in (0.25, 1.0], default 0.75.
	MinOverlapThreshold float64
	// MinOffendingFiles: the smallest group of mutually overlapping files worth reclustering; ≥ 2, default 4.
	MinOffendingFiles int
	// SizeAware measures each column's intersection against the longer of the two ranges instead of the
	// shorter: a file then only overlaps files of about its own extent, so a wide file of fresh data
	// never drags the narrow, well-clustered files beneath it into a rewrite. Stacks of similar files
	// merge with each other instead, tier by tier, as in a size-tiered LSM tree; incremental clustering
	// uses it.
	SizeAware bool
}

// Validate checks the options' bounds.
func (o OverlapOptions) Validate() error {
	if !(o.MinOverlapThreshold > 0.25 && o.MinOverlapThreshold <= 1) {
		return fmt.Errorf("min overlap threshold must be in (0.25, 1.0], got %v", o.MinOverlapThreshold)
	}
	if o.MinOffendingFiles < 2 {
		return fmt.Errorf("min offending files must be at least 2, got %d", o.MinOffendingFiles)
	}
	return nil
}

// OverlapGroups finds groups of already-clustered files stacked over a common region: sets of at least
// MinOffendingFiles files that pairwise overlap, each file in at most one group. Files reclustered together
// come out as smaller, disjoint boxes; a file that overlaps many neighbours which do not overlap each other
// (one wide file over a row of narrow ones) forms no group, so fresh data is merged with older files only
// where the layout actually got worse — the tiering that keeps repeated small appends cheap.
//
// For files a, b and column c, with ranges measured in the column's rank space (positions among all file
// boundary values), ov_c = |a_c ∩ b_c| / min(|a_c|, |b_c|), where a point range counts as fully overlapped when
// it lies inside the other; score(a, b) = Π_c ov_c, and a, b overlap when score > MinOverlapThreshold.
// Boxes missing a bound never overlap. Groups are returned as sorted indexes into boxes, largest first.
func OverlapGroups(boxes []Box, opts OverlapOptions) ([][]int, error) {
	if err := opts.Validate(); err != nil {
		return nil, err
	}
	if len(boxes) < opts.MinOffendingFiles {
		return nil, nil
	}
	ranks, ok, err := rankBoxes(boxes, opts.SizeAware)
	if err != nil {
		return nil, err
	}
	adj := overlapGraph(ranks, ok, opts.MinOverlapThreshold, opts.SizeAware)
	return greedyCliques(adj, opts.MinOffendingFiles), nil
}

// rankedRange is a range in a column's rank space (or value space, see rankBoxes).
type rankedRange struct{ lo, hi float64 }

// rankBoxes converts every box to rank space, column by column; ok[i] is false for boxes missing a bound.
// With valueSpace, columns of numbers and times use their values instead: the size-aware score compares
// extents, and with few files a rank or two of difference at the edges would look like a large one.
func rankBoxes(boxes []Box, valueSpace bool) ([][]rankedRange, []bool, error) {
	dims := len(boxes[0].Bounds)
	ranks := make([][]rankedRange, len(boxes))
	ok := make([]bool, len(boxes))
	for i, b := range boxes {
		if len(b.Bounds) != dims {
			return nil, nil, fmt.Errorf("file %d has bounds on %d columns, want %d", i, len(b.Bounds), dims)
		}
		ranks[i] = make([]rankedRange, dims)
		ok[i] = true
		for _, bd := range b.Bounds {
			ok[i] = ok[i] && bd.Min != nil && bd.Max != nil
		}
	}
	for c := 0; c < dims; c++ {
		var col []Bounds
		for i, b := range boxes {
			if ok[i] {
				col = append(col, b.Bounds[c])
			}
		}
		if len(col) == 0 {
			continue
		}
		if valueSpace && allNumeric(col) {
			for i, b := range boxes {
				if ok[i] {
					lo, _ := numeric(b.Bounds[c].Min)
					hi, _ := numeric(b.Bounds[c].Max)
					ranks[i][c] = rankedRange{min(lo, hi), max(lo, hi)}
				}
			}
			continue
		}
		distinct, err := sortedDistinct(col)
		if err != nil {
			return nil, nil, fmt.Errorf("clustering column %d: %w", c, err)
		}
		for i, b := range boxes {
			if ok[i] {
				lo, hi := rankOf(distinct, b.Bounds[c].Min), rankOf(distinct, b.Bounds[c].Max)
				ranks[i][c] = rankedRange{float64(min(lo, hi)), float64(max(lo, hi))}
			}
		}
	}
	return ranks, ok, nil
}

// overlapGraph returns, for each box, the boxes it overlaps. Candidate pairs come from a sweep over the first
// column, so disjoint layouts cost O(n log n).
func overlapGraph(ranks [][]rankedRange, ok []bool, threshold float64, sizeAware bool) [][]int {
	var order []int
	for i := range ranks {
		if ok[i] {
			order = append(order, i)
		}
	}
	slices.SortFunc(order, func(a, b int) int { return cmp.Compare(ranks[a][0].lo, ranks[b][0].lo) })
	adj := make([][]int, len(ranks))
	for x, a := range order {
		for _, b := range order[x+1:] {
			if ranks[b][0].lo > ranks[a][0].hi {
				break
			}
			if score(ranks[a], ranks[b], sizeAware) > threshold {
				adj[a] = append(adj[a], b)
				adj[b] = append(adj[b], a)
			}
		}
	}
	for i := range adj {
		slices.Sort(adj[i])
	}
	return adj
}

// score is Π_c ov_c(a, b).
func score(a, b []rankedRange, sizeAware bool) float64 {
	s := 1.0
	for c := range a {
		s *= overlap1D(a[c], b[c], sizeAware)
		if s == 0 {
			return 0
		}
	}
	return s
}

func overlap1D(a, b rankedRange, sizeAware bool) float64 {
	lo, hi := max(a.lo, b.lo), min(a.hi, b.hi)
	if lo > hi {
		return 0
	}
	norm := min(a.hi-a.lo, b.hi-b.lo)
	if sizeAware {
		norm = max(a.hi-a.lo, b.hi-b.lo)
	}
	if norm == 0 {
		return 1 // two equal points, or (by the shorter) a point range inside the other range
	}
	return (hi - lo) / norm
}

func allNumeric(col []Bounds) bool {
	for _, b := range col {
		_, okMin := numeric(b.Min)
		_, okMax := numeric(b.Max)
		if !okMin || !okMax {
			return false
		}
	}
	return true
}

// greedyCliques grows a clique from each best-connected file in turn: a neighbour joins only if it overlaps
// every member. Deterministic: ties break by index.
func greedyCliques(adj [][]int, minSize int) [][]int {
	order := make([]int, len(adj))
	for i := range order {
		order[i] = i
	}
	slices.SortStableFunc(order, func(a, b int) int { return cmp.Compare(len(adj[b]), len(adj[a])) })
	assigned := make([]bool, len(adj))
	var groups [][]int
	for _, seed := range order {
		if assigned[seed] || len(adj[seed])+1 < minSize {
			continue
		}
		clique := []int{seed}
		candidates := slices.Clone(adj[seed])
		// Prefer candidates with more links among the seed's neighbours: they are deeper in the stack.
		inSeed := func(x int) int {
			n := 0
			for _, y := range adj[x] {
				if _, found := slices.BinarySearch(adj[seed], y); found {
					n++
				}
			}
			return n
		}
		weight := make(map[int]int, len(candidates))
		for _, c := range candidates {
			weight[c] = inSeed(c)
		}
		slices.SortStableFunc(candidates, func(a, b int) int { return cmp.Compare(weight[b], weight[a]) })
		for _, c := range candidates {
			if assigned[c] {
				continue
			}
			if allLinked(adj, c, clique) {
				clique = append(clique, c)
			}
		}
		if len(clique) >= minSize {
			slices.Sort(clique)
			for _, m := range clique {
				assigned[m] = true
			}
			groups = append(groups, clique)
		}
	}
	slices.SortStableFunc(groups, func(a, b []int) int { return cmp.Compare(len(b), len(a)) })
	return groups
}

func allLinked(adj [][]int, c int, members []int) bool {
	for _, m := range members {
		if _, found := slices.BinarySearch(adj[c], m); !found {
			return false
		}
	}
	return true
}
