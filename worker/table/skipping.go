package table

import (
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// FileFacts exposes what the log knows about a live file (typed partition values, parsed statistics)
// to expr.Predicate.MightMatch. Statistics are parsed on first use. Values that fail to parse count as
// unknown, which only ever keeps a file in the scan.
func FileFacts(snap *delta.Snapshot, f *delta.AddFile) expr.FileFacts {
	return &fileFacts{snap: snap, f: f}
}

type fileFacts struct {
	snap   *delta.Snapshot
	f      *delta.AddFile
	parsed bool
	stats  *delta.FileStats
}

func (ff *fileFacts) PartitionValue(column string) (types.Value, bool) {
	for _, pc := range ff.snap.PartitionColumns() {
		if pc.Name != column {
			continue
		}
		v, err := ff.snap.PartitionValue(ff.f, column)
		if err != nil {
			return nil, false
		}
		return v, true
	}
	return nil, false
}

func (ff *fileFacts) ColumnStats(path []string) (expr.ColumnStats, bool) {
	if !ff.parsed {
		ff.parsed = true
		if s, ok, err := ff.snap.Stats(ff.f); err == nil && ok {
			ff.stats = s
		}
	}
	if ff.stats == nil {
		return expr.ColumnStats{}, false
	}
	cs := expr.ColumnStats{NumRecords: ff.stats.NumRecords}
	c, ok := ff.stats.Column(path...)
	if ok {
		cs.Min, cs.Max, cs.NullCount = c.Min, c.Max, c.NullCount
	}
	if !ok && cs.NumRecords == nil {
		return expr.ColumnStats{}, false
	}
	return cs, true
}
