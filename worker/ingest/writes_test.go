package ingest

import (
	"context"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// eventsJSON renders n rows spread over parts partitions, with incompressible payloads so that file
// sizes track row counts.
func eventsJSON(rng *rand.Rand, first, n, parts int) string {
	var b strings.Builder
	for i := range n {
		fmt.Fprintf(&b, `{"id":%d,"p":"p%02d","payload":"%016x%016x%016x"}`+"\n", first+i, (first+i)%parts, rng.Uint64(), rng.Uint64(), rng.Uint64())
	}
	return b.String()
}

func eventsTable(t *testing.T, fx *fixture, props map[string]string) {
	t.Helper()
	schema := &types.StructType{Fields: []*types.StructField{longCol("id"),
		{Name: "p", Type: types.Primitive(types.TypeString), Nullable: true},
		{Name: "payload", Type: types.Primitive(types.TypeString), Nullable: true}}}
	if _, err := fx.tbl.Create(context.Background(), delta.CreateOptions{Schema: schema, PartitionColumns: []string{"p"}, Configuration: props}); err != nil {
		t.Fatal(err)
	}
}

// The 20-partition figure of the issue is measured in bench/ (bench/ingest.sh), on data large enough
// for it; this test checks the same rolling on two partitions at a small target.
func TestRun_OptimizedWritesRollFilesAtTheTarget(t *testing.T) {
	fx := newFixture(t)
	// Each partition gets a dozen files or more: its last file is a remainder of any size, as with
	// every streaming writer that does not hold a whole batch.
	const target = 128 << 10
	eventsTable(t, fx, map[string]string{PropOptimizeWrite: "true", delta.PropTargetFileSize: fmt.Sprint(target)})
	rng := rand.New(rand.NewPCG(1, 2))
	id := 0
	for i := range 40 {
		fx.put(fmt.Sprintf("f%02d.json", i), eventsJSON(rng, id, 3000, 2))
		id += 3000
	}
	o := fx.options(format.JSON, nil, "")
	o.AvailableNow = true
	rep := fx.run(o)
	b := rep.Batches[0]
	if len(rep.Batches) != 1 || len(b.FilesWritten) != 2 {
		t.Fatalf("%d batches, %d partitions written, want 1 batch over 2 partitions", len(rep.Batches), len(b.FilesWritten))
	}
	within, total := 0, 0
	for _, f := range fx.snapshot().Files() {
		total++
		if r := float64(f.Size) / target; r >= 0.75 && r <= 1.25 {
			within++
		}
	}
	t.Logf("%d data files from 40 source files, %d within 0.75–1.25× of %d bytes, mean %d", total, within, target, b.MeanFileSize())
	if float64(within) < 0.9*float64(total) {
		t.Fatalf("only %d of %d files within 0.75–1.25× the target", within, total)
	}
	if got := len(fx.rows("id")); got != id {
		t.Fatalf("%d rows, want %d", got, id)
	}
}

func TestRun_PlainWritesOneFilePerSourceFileAndPartition(t *testing.T) {
	fx := newFixture(t)
	eventsTable(t, fx, nil)
	rng := rand.New(rand.NewPCG(3, 4))
	for i := range 3 {
		fx.put(fmt.Sprintf("f%d.json", i), eventsJSON(rng, i*100, 100, 4))
	}
	o := fx.options(format.JSON, nil, "")
	o.AvailableNow = true
	rep := fx.run(o)
	if n := len(fx.snapshot().Files()); n != 12 {
		t.Fatalf("%d data files, want 12 (3 source files × 4 partitions): %+v", n, rep.Batches[0].FilesWritten)
	}
}

func TestRun_AutoCompactionAfterTheCommitCountsOnlySmallFiles(t *testing.T) {
	fx := newFixture(t)
	const acTarget = 64 << 10 // small: under 32 KiB
	eventsTable(t, fx, map[string]string{"delta.autoOptimize.autoCompact": "true"})
	rng := rand.New(rand.NewPCG(5, 6))
	o := fx.options(format.JSON, nil, "")
	o.AvailableNow, o.AutoCompactTarget = true, acTarget
	// 60 large files (already compacted, ≥ 32 KiB each) in partition p00: never counted as small.
	id := 0
	for i := range 60 {
		fx.put(fmt.Sprintf("big%02d.json", i), eventsJSON(rng, id, 3000, 1))
		id += 3000
	}
	rep := fx.run(o)
	if ac := rep.Batches[0].AutoCompaction; ac != nil && ac.FilesRemoved > 0 {
		t.Fatalf("auto compaction rewrote %d large files", ac.FilesRemoved)
	}
	// 49 small files: still under 50 small files.
	for i := range 49 {
		fx.put(fmt.Sprintf("s%02d.json", i), eventsJSON(rng, id, 2, 1))
		id += 2
	}
	rep = fx.run(o)
	if ac := rep.Batches[0].AutoCompaction; ac != nil && ac.FilesRemoved > 0 {
		t.Fatalf("auto compaction ran with 49 small files (and 60 large ones)")
	}
	// The 50th small file: the partition qualifies; only the small files are rewritten.
	fx.put("s49.json", eventsJSON(rng, id, 2, 1))
	id += 2
	rep = fx.run(o)
	ac := rep.Batches[0].AutoCompaction
	if ac == nil || ac.Op.Outcome != result.Succeeded || ac.FilesRemoved != 50 {
		t.Fatalf("auto compaction %+v, want the 50 small files compacted", ac)
	}
	if got := len(fx.rows("id")); got != id {
		t.Fatalf("%d rows after auto compaction, want %d", got, id)
	}
	// A stream override turns it off.
	off := false
	o.AutoCompact = &off
	fx.put("t.json", eventsJSON(rng, id, 2, 1))
	if rep = fx.run(o); rep.Batches[0].AutoCompaction != nil {
		t.Fatalf("auto compaction ran although the stream disables it")
	}
}
