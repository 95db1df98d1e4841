package optimize

import (
	"cmp"
	"fmt"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// Bin is a group of files of one partition that one rewrite merges.
type Bin struct {
	// Partition is the canonical key of the bin's partition values (delta.Snapshot.PartitionKey).
	Partition string
	// Dir is the partition's directory ("day=2024-06-01"), for people; "" when unpartitioned.
	Dir string
	// PartitionValues are the first file's values, copied verbatim to the outputs.
	PartitionValues delta.PartitionValues
	Files           []*delta.AddFile
	Bytes           int64
	// DVFiles and DVRows count the inputs with deletion vectors and the rows they hide.
	DVFiles, DVRows int64
	// LiveRows is the number of rows the bin holds; RowsKnown is false when an input lacks numRecords
	// and its footer was not read.
	LiveRows  int64
	RowsKnown bool
	// footerRows are the physical row counts of the inputs whose adds carry no numRecords, read from
	// their footers; their removes record them (AddFile.WithNumRecords).
	footerRows map[delta.FileKey]int64
}

// Plan is what a compaction will do, computed from the log alone.
type Plan struct {
	Snapshot    *delta.Snapshot
	Target      int64 // bin size and output roll-over size
	MinFileSize int64 // files below it are candidates
	Bins        []*Bin
	// ConsideredFiles are the live files the partition filter selected; CandidateFiles those that
	// qualified for rewriting; SkippedFiles the considered ones left as they are (large enough, or
	// alone in their bin without a deletion vector).
	ConsideredFiles, CandidateFiles, SkippedFiles int
	// Unreadable counts candidates left out because their path lies outside the table root.
	Unreadable int
	// Partitions is the number of partitions with at least one bin.
	Partitions int
}

// Files is the number of files the plan rewrites; Bytes their total size.
func (p *Plan) Files() (n int, bytes int64) {
	for _, b := range p.Bins {
		n += len(b.Files)
		bytes += b.Bytes
	}
	return n, bytes
}

// planConfig is what the planner needs: sizes, the DV threshold and which files may be touched.
type planConfig struct {
	target, minFileSize int64
	maxDeletedRowsRatio float64
	// include selects the files to consider (the --where partitions, auto compaction's touched
	// partitions); nil means every live file.
	include func(*delta.AddFile) bool
	// footerRows are the row counts of candidates without numRecords (footerRowCounts).
	footerRows map[delta.FileKey]int64
}

// plan bin-packs the candidates of a snapshot (OptimizeExecutor.optimize, steps 1-4).
func plan(snap *delta.Snapshot, cfg planConfig) (*Plan, error) {
	p := &Plan{Snapshot: snap, Target: cfg.target, MinFileSize: cfg.minFileSize}
	loc := snap.Table().Location()
	keys := newPartitionMemo(snap.PartitionKey)
	byPartition := map[string][]*delta.AddFile{}
	for _, f := range snap.Files() {
		if cfg.include != nil && !cfg.include(f) {
			continue
		}
		p.ConsideredFiles++
		if !isCandidate(f, cfg) {
			continue
		}
		if _, err := delta.ObjectKey(loc, f.Path); err != nil {
			// A file of a shallow clone elsewhere: the outputs could not be written next to it, and the
			// table store cannot open it. Leave it alone.
			p.Unreadable++
			continue
		}
		key, err := keys.get(f)
		if err != nil {
			return nil, fmt.Errorf("file %s: %w", f.Path, err)
		}
		byPartition[key] = append(byPartition[key], f)
		p.CandidateFiles++
	}
	partitions := make([]string, 0, len(byPartition))
	for k := range byPartition {
		partitions = append(partitions, k)
	}
	slices.Sort(partitions)
	rewritten := 0
	var err error
	for _, k := range partitions {
		bins := packBins(k, byPartition[k], cfg)
		if len(bins) > 0 {
			p.Partitions++
		}
		for _, b := range bins {
			rewritten += len(b.Files)
			if b.Dir, err = snap.PartitionDir(b.PartitionValues); err != nil {
				b.Dir = k
			}
		}
		p.Bins = append(p.Bins, bins...)
		delete(byPartition, k) // the bins hold what is still needed of it
	}
	p.SkippedFiles = p.ConsideredFiles - rewritten
	return p, nil
}

// isCandidate is Spark's compaction filter: small, or too many rows deleted, or a deletion vector
// without a row count (the ratio cannot be known, so the file is rewritten to be safe for readers
// that need numRecords).
func isCandidate(f *delta.AddFile, cfg planConfig) bool {
	if f.Size < cfg.minFileSize {
		return true
	}
	if f.DeletionVector == nil {
		return false
	}
	n, ok := cfg.rowCount(f)
	if !ok {
		return true
	}
	return n > 0 && float64(f.DeletionVector.Cardinality)/float64(n) > cfg.maxDeletedRowsRatio
}

// packBins fills bins greedily with the partition's files in ascending size order, closing a bin when
// the next file would take it over target. A bin of one file is kept only when the file carries a
// deletion vector or holds no rows at all (its rewrite removes it and adds nothing), since rewriting
// a lone file otherwise gains nothing. It sorts files in place.
func packBins(partition string, files []*delta.AddFile, cfg planConfig) []*Bin {
	target := cfg.target
	slices.SortStableFunc(files, func(a, b *delta.AddFile) int {
		return cmp.Or(cmp.Compare(a.Size, b.Size), cmp.Compare(a.Path, b.Path))
	})
	var bins []*Bin
	var cur *Bin
	flush := func() {
		if cur != nil && (len(cur.Files) > 1 || cur.Files[0].DeletionVector != nil || cur.RowsKnown && cur.LiveRows == 0) {
			bins = append(bins, cur)
		}
		cur = nil
	}
	for _, f := range files {
		if cur != nil && cur.Bytes+f.Size > target {
			flush()
		}
		if cur == nil {
			cur = &Bin{Partition: partition, PartitionValues: f.PartitionValues, RowsKnown: true}
		}
		cur.add(f, cfg)
	}
	flush()
	return bins
}

func (b *Bin) add(f *delta.AddFile, cfg planConfig) {
	b.Files = append(b.Files, f)
	b.Bytes += f.Size
	n, ok := cfg.rowCount(f)
	if !ok {
		b.RowsKnown = false
	}
	if _, stats := delta.NumRecords(f.Stats); ok && !stats {
		if b.footerRows == nil {
			b.footerRows = map[delta.FileKey]int64{}
		}
		b.footerRows[f.Key()] = n
	}
	b.LiveRows += n
	if dv := f.DeletionVector; dv != nil {
		b.DVFiles++
		b.DVRows += dv.Cardinality
		b.LiveRows -= dv.Cardinality
	}
}
