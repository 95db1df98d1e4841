package torture

import (
	"context"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/optimize"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// tortureSchema: a unique id (what the independent check reads), a clustering key, a partition
// candidate, a payload that makes files of some size, and a timestamp.
func tortureSchema() *types.StructType {
	return &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: false},
		{Name: "k", Type: types.Primitive(types.TypeInteger), Nullable: true},
		{Name: "p", Type: types.Primitive(types.TypeString), Nullable: true},
		{Name: "s", Type: types.Primitive(types.TypeString), Nullable: true},
		{Name: "ts", Type: types.Primitive(types.TypeTimestamp), Nullable: true},
	}}
}

// tortureProperties make log cleanup and checkpoints happen within a test: a log retention of one
// day (the harness ages the log by more; fresh commits are never older than the cutoff, midnight
// UTC a day ago) and a checkpoint every few commits.
var tortureProperties = map[string]string{
	delta.PropLogRetentionDuration: "interval 1 days",
	delta.PropCheckpointInterval:   "5",
}

// logAge is how old ageLog makes the log: well past the retention's cutoff.
const logAge = 72 * time.Hour

// rowsFor makes n rows with ids from first; the rest is random from rng.
func rowsFor(rng *rand.Rand, first int64, n int) []types.Struct {
	parts := []types.Value{"a", "b", "c", nil}
	rows := make([]types.Struct, n)
	for i := range rows {
		var k types.Value = int32(rng.IntN(1000))
		if rng.IntN(50) == 0 {
			k = nil
		}
		rows[i] = types.Struct{first + int64(i), k, parts[rng.IntN(len(parts))],
			strings.Repeat(string(rune('a'+rng.IntN(26))), 8+rng.IntN(120)),
			types.Timestamp(1_700_000_000_000_000 + first*1_000_003 + int64(i))}
	}
	return rows
}

// tableShape is how a torture table is laid out.
type tableShape int

const (
	plain           tableShape = iota // unpartitioned, unclustered
	partitioned                       // by p
	clustered                         // liquid clustering by k (declared at creation)
	deletionVectors                   // unpartitioned, deletion vectors enabled: merges and deletes write DVs
)

func (s tableShape) String() string {
	return [...]string{"plain", "partitioned", "clustered", "deletionVectors"}[s]
}

// fixture writes a torture table directly (not through the CLI), between the runs under test.
type fixture struct {
	*observer
	rng    *rand.Rand
	nextID int64
}

func newFixture(t *testing.T, s *site, shape tableShape, rng *rand.Rand) *fixture {
	t.Helper()
	ctx := context.Background()
	f := &fixture{observer: newObserver(s), rng: rng}
	opts := delta.CreateOptions{Schema: tortureSchema(), Configuration: map[string]string{}, Name: "torture"}
	for k, v := range tortureProperties {
		opts.Configuration[k] = v
	}
	switch shape {
	case partitioned:
		opts.PartitionColumns = []string{"p"}
	case deletionVectors:
		opts.Configuration[delta.PropEnableDeletionVectors] = "true"
	}
	if _, err := f.tbl.Create(ctx, opts); err != nil {
		t.Fatalf("creating the %s table: %v", shape, err)
	}
	if shape == clustered {
		if _, err := table.ApplyDeclaration(ctx, f.tbl, table.Declaration{SetClusterBy: true, ClusterBy: []string{"k"}}); err != nil {
			t.Fatalf("declaring clustering: %v", err)
		}
	}
	return f
}

// appendFiles makes n blind-append commits of rows rows each.
func (f *fixture) appendFiles(t testing.TB, n, rows int) {
	t.Helper()
	ctx := context.Background()
	for range n {
		snap, err := f.tbl.Latest(ctx)
		if err != nil {
			t.Fatalf("fixture: %v", err)
		}
		if _, err := table.Append(ctx, snap, rowsFor(f.rng, f.nextID, rows), table.WriteOptions{}); err != nil {
			t.Fatalf("fixture: %v", err)
		}
		f.nextID += int64(rows)
	}
}

// deleteFiles commits the removal of n random live files (a DELETE: their rows go), which leaves
// tombstones for vacuum.
func (f *fixture) deleteFiles(t testing.TB, n int) {
	t.Helper()
	ctx := context.Background()
	snap, err := f.tbl.Latest(ctx)
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	files := append([]*delta.AddFile(nil), snap.Files()...)
	f.rng.Shuffle(len(files), func(i, j int) { files[i], files[j] = files[j], files[i] })
	tx, err := snap.Begin(delta.OpMerge, delta.TxnOptions{Operation: "DELETE"})
	if err != nil {
		t.Fatalf("fixture: %v", err)
	}
	tx.Remove(true, files[:min(n, len(files))]...)
	if _, err := tx.Commit(ctx); err != nil {
		t.Fatalf("fixture: delete: %v", err)
	}
}

// compact runs a compaction in process, which leaves the compacted files as tombstones.
func (f *fixture) compact(t testing.TB) {
	t.Helper()
	if _, err := optimize.Run(context.Background(), f.tbl, optimize.Options{}, nil); err != nil {
		t.Fatalf("fixture: compaction: %v", err)
	}
}
