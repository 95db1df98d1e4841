package optimize

import (
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// file builds an AddFile of a size; rows < 0 means no numRecords statistic, deleted > 0 adds a DV.
func file(name string, size, rows, deleted int64) *delta.AddFile {
	f := &delta.AddFile{Path: name, Size: size}
	if rows >= 0 {
		f.Stats = fmt.Sprintf(`{"numRecords":%d}`, rows)
	}
	if deleted > 0 {
		f.DeletionVector = &delta.DeletionVectorDescriptor{StorageType: "i", PathOrInlineDv: name, Cardinality: deleted}
	}
	return f
}

func TestIsCandidate_FollowsSparksCompactionFilter(t *testing.T) {
	cfg := planConfig{minFileSize: 100, maxDeletedRowsRatio: 0.05}
	cases := []struct {
		name string
		f    *delta.AddFile
		want bool
	}{
		{"small file", file("a", 99, 10, 0), true},
		{"file at the minimum size", file("a", 100, 10, 0), false},
		{"large file with few deleted rows", file("a", 500, 100, 5), false},
		{"large file with too many deleted rows", file("a", 500, 100, 6), true},
		{"large file with a DV but no row count", file("a", 500, -1, 1), true},
		{"large file without stats or DV", file("a", 500, -1, 0), false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if got := isCandidate(c.f, cfg); got != c.want {
				t.Errorf("isCandidate = %v, want %v", got, c.want)
			}
		})
	}
}

func TestPackBins_FillsBinsGreedilyInSizeOrder(t *testing.T) {
	cases := []struct {
		name   string
		files  []*delta.AddFile
		target int64
		want   []string // bins as "a+b"
	}{
		{"everything fits in one bin", []*delta.AddFile{file("c", 30, 1, 0), file("a", 10, 1, 0), file("b", 20, 1, 0)}, 100, []string{"a+b+c"}},
		{"a bin closes before it would exceed the target", []*delta.AddFile{file("a", 40, 1, 0), file("b", 40, 1, 0), file("c", 40, 1, 0), file("d", 40, 1, 0)}, 100, []string{"a+b", "c+d"}},
		{"a lone file is left alone", []*delta.AddFile{file("a", 60, 1, 0), file("b", 70, 1, 0)}, 100, nil},
		{"a lone file with a deletion vector is rewritten", []*delta.AddFile{file("a", 60, 10, 0), file("b", 70, 10, 3)}, 100, []string{"b"}},
		{"a lone empty file is removed", []*delta.AddFile{file("a", 60, 0, 0), file("b", 70, 1, 0)}, 100, []string{"a"}},
		{"equal sizes are ordered by path", []*delta.AddFile{file("b", 10, 1, 0), file("a", 10, 1, 0)}, 100, []string{"a+b"}},
		{"a file larger than the target gets its own bin", []*delta.AddFile{file("big", 500, 10, 9), file("a", 10, 1, 0), file("b", 10, 1, 0)}, 100, []string{"a+b", "big"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var got []string
			for _, b := range packBins("p", c.files, planConfig{target: c.target}) {
				var names []string
				for _, f := range b.Files {
					names = append(names, f.Path)
				}
				got = append(got, strings.Join(names, "+"))
			}
			if !slices.Equal(got, c.want) {
				t.Errorf("bins %q, want %q", got, c.want)
			}
		})
	}
}

func TestBin_CountsLiveAndDeletedRows(t *testing.T) {
	cfg := planConfig{target: 100}
	b := packBins("p", []*delta.AddFile{file("a", 10, 100, 7), file("b", 10, 50, 0)}, cfg)[0]
	if b.LiveRows != 143 || b.DVRows != 7 || b.DVFiles != 1 || !b.RowsKnown || b.Bytes != 20 {
		t.Errorf("bin %+v", b)
	}
	noStats := []*delta.AddFile{file("a", 10, -1, 0), file("b", 10, 50, 0)}
	b = packBins("p", noStats, cfg)[0]
	if b.RowsKnown {
		t.Error("a bin with a file without numRecords must not claim to know its rows")
	}
	// With the count read from the footer, the bin knows its rows and remembers the count for the remove.
	cfg.footerRows = map[delta.FileKey]int64{noStats[0].Key(): 30}
	b = packBins("p", noStats, cfg)[0]
	if !b.RowsKnown || b.LiveRows != 80 || b.footerRows[noStats[0].Key()] != 30 || len(b.footerRows) != 1 {
		t.Errorf("bin with a footer count %+v", b)
	}
}

func TestPercentile_IsNearestRank(t *testing.T) {
	sizes := []int64{10, 20, 30, 40}
	for _, c := range []struct {
		p    int
		want int64
	}{{0, 10}, {25, 10}, {50, 20}, {75, 30}, {100, 40}} {
		if got := percentile(sizes, c.p); got != c.want {
			t.Errorf("p%d = %d, want %d", c.p, got, c.want)
		}
	}
}
