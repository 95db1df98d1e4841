package cluster

import (
	"fmt"
	"slices"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/layoutstats"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// selection is what one clustering run rewrites, and why.
type selection struct {
	files []*delta.AddFile
	// Counts by reason (a file is counted under the first reason that selected it).
	unclustered, otherColumns, small, deleted, overlapping int
	groups                                                 int
	escalated                                              int // clustered files added by escalate
	foreign                                                int // files of another clustering provider, left alone

	// regions is the base layout new data is cut along (nil: none, or not this run); merging the
	// pieces of full region levels (pieceMerges), mergeRegions the region of each level merged.
	regions      *regionSet
	merging      map[*delta.AddFile]bool
	mergeRegions []int
}

// alignment is the plan of an aligned rewrite of files (the selection's, or a share of them), nil
// when the run keeps no regions.
func (s *selection) alignment(files []*delta.AddFile) *alignment {
	if s.regions == nil {
		return nil
	}
	return newAlignment(s.regions, files, s.merging)
}

func (s *selection) bytes() int64 {
	var n int64
	for _, f := range s.files {
		n += f.Size
	}
	return n
}

func (s *selection) describe() string {
	var parts []string
	add := func(n int, what string) {
		if n > 0 {
			parts = append(parts, fmt.Sprintf("%d %s", n, what))
		}
	}
	add(s.unclustered, "unclustered")
	add(s.otherColumns, "clustered by other columns")
	add(s.small, "small")
	add(s.deleted, "with many deleted rows")
	add(s.overlapping, fmt.Sprintf("overlapping in %d group(s)", s.groups))
	add(len(s.merging), fmt.Sprintf("aligned pieces merging in %d region level(s)", len(s.mergeRegions)))
	add(s.escalated, "drifted (escalated)")
	if len(parts) == 0 {
		return "no files"
	}
	return strings.Join(parts, ", ") + " files"
}

// selectFiles picks the files an incremental clustering run rewrites (or, with opts.Full, every file
// this clustering implementation may touch):
//   - files without a ZCube, or clustered by other columns;
//   - files under half the target size (Fabric's file-level target: a file that reached half once is
//     not compacted again for its size);
//   - files whose deletion vectors hide more than MaxDeletedRowsRatio of their rows;
//   - with AutoRecluster, groups of at least MinOffendingFiles clustered files that pairwise overlap by
//     more than MinOverlapThreshold (layoutstats.OverlapGroups);
//   - with regions (the base layout new data is cut along, regions.go), the aligned pieces of every
//     region level that holds RegionFanout of them (pieceMerges); pieces are never small or
//     overlapping: they are as narrow as their region, and merge only among themselves.
//
// New data thus forms its own clustered files first and merges with older files only where they are
// stacked over a common region, so repeated small appends cost about their own size. Files of another
// clustering provider are never selected (PROTOCOL.md §Clustered Table). Selecting only files of a single
// ZCube, none of them for unclustered data or deleted rows, has nothing to gain and selects nothing
// (Spark's ZCube.filterOutSingleZCubes). A non-nil only restricts the candidates (a re-plan after a
// conflict considers only the live files of the abandoned attempt).
func selectFiles(snap *delta.Snapshot, keys [][]string, names []string, opts Options, target int64,
	rs *regionSet, only func(*delta.AddFile) bool) (*selection, error) {
	sel := &selection{}
	var clustered, pieces []*delta.AddFile
	picked := map[*delta.AddFile]bool{}
	pick := func(f *delta.AddFile, counter *int) {
		if !picked[f] {
			picked[f] = true
			*counter++
			sel.files = append(sel.files, f)
		}
	}
	for _, f := range snap.Files() {
		if only != nil && !only(f) {
			continue
		}
		class := table.ClassifyClustering(f, names)
		switch {
		case class == table.ForeignClustered:
			sel.foreign++
		case class == table.Unclustered:
			pick(f, &sel.unclustered)
		case class == table.ClusteredByOtherColumns:
			pick(f, &sel.otherColumns)
		case opts.Full:
			pick(f, &sel.overlapping)
		case deletedRatio(f) > MaxDeletedRowsRatio:
			pick(f, &sel.deleted)
		case rs.regionOf(f) >= 0:
			pieces = append(pieces, f)
		case f.Size < target/2:
			pick(f, &sel.small)
		default:
			clustered = append(clustered, f)
		}
	}
	if !opts.Full && opts.AutoRecluster && len(clustered) >= opts.MinOffendingFiles {
		boxes := make([]layoutstats.Box, len(clustered))
		for i, f := range clustered {
			b, err := fileBox(snap, f, keys)
			if err != nil {
				return nil, err
			}
			boxes[i] = b
		}
		groups, err := layoutstats.OverlapGroups(boxes, opts.overlap())
		if err != nil {
			return nil, err
		}
		sel.groups = len(groups)
		for _, g := range groups {
			for _, i := range g {
				pick(clustered[i], &sel.overlapping)
			}
		}
	}
	if !opts.Full && rs != nil {
		var files []*delta.AddFile
		files, sel.mergeRegions = pieceMerges(rs, pieces, opts.RegionFanout)
		sel.merging = map[*delta.AddFile]bool{}
		for _, f := range files {
			sel.merging[f] = true
			sel.files = append(sel.files, f)
		}
	}
	if rs != nil && !slices.ContainsFunc(sel.files, rs.isBase) {
		sel.regions = rs
	}
	if !opts.Full && sel.unclustered == 0 && sel.otherColumns == 0 && sel.deleted == 0 && sel.groups == 0 && len(sel.mergeRegions) == 0 &&
		singleZCube(sel.files) {
		return &selection{foreign: sel.foreign}, nil
	}
	return sel, nil
}

// singleZCube reports whether the files all belong to one ZCube (or there is at most one file).
func singleZCube(files []*delta.AddFile) bool {
	for _, f := range files[min(1, len(files)):] {
		if f.Tags[TagZCubeID] != files[0].Tags[TagZCubeID] {
			return false
		}
	}
	return true
}

func deletedRatio(f *delta.AddFile) float64 {
	if f.DeletionVector == nil || f.DeletionVector.Cardinality == 0 {
		return 0
	}
	n, ok := delta.NumRecords(f.Stats)
	if !ok || n == 0 {
		return 1 // unknown size: purge, the rewrite will count
	}
	return float64(f.DeletionVector.Cardinality) / float64(n)
}

// fileBox is a file's statistics box over the clustering columns (logical paths); a missing bound
// stays nil, which layoutstats.OverlapGroups treats as "never overlaps".
func fileBox(snap *delta.Snapshot, f *delta.AddFile, logical [][]string) (layoutstats.Box, error) {
	b := layoutstats.Box{Bounds: make([]layoutstats.Bounds, len(logical))}
	st, ok, err := snap.Stats(f)
	if err != nil {
		return b, fmt.Errorf("statistics of %s: %w", f.Path, err)
	}
	if !ok {
		return b, nil
	}
	for c, path := range logical {
		if cs, ok := st.Column(path...); ok {
			b.Bounds[c] = layoutstats.Bounds{Min: cs.Min, Max: cs.MaxUpperBound()}
		}
	}
	return b, nil
}
