package delta

import (
	"context"
	"fmt"
	"os"
	"sync"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// fakeClock is a settable clock for commit timestamps and retention.
type fakeClock struct {
	mu sync.Mutex
	t  time.Time
}

func newFakeClock(t time.Time) *fakeClock { return &fakeClock{t: t} }

func (c *fakeClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.t
}

func (c *fakeClock) Set(t time.Time) {
	c.mu.Lock()
	c.t = t
	c.mu.Unlock()
}

func (c *fakeClock) Advance(d time.Duration) {
	c.mu.Lock()
	c.t = c.t.Add(d)
	c.mu.Unlock()
}

var testEpoch = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

// tableBuilder creates test tables: testTable(t).Partitioned("p").Props(...).Create().
type tableBuilder struct {
	t        testing.TB
	schema   *types.StructType
	parts    []string
	props    map[string]string
	protocol *Protocol
	clock    *fakeClock
}

func testTable(t testing.TB) *tableBuilder {
	return &tableBuilder{t: t, props: map[string]string{}, clock: newFakeClock(testEpoch),
		schema: &types.StructType{Fields: []*types.StructField{
			{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: true},
			{Name: "name", Type: types.Primitive(types.TypeString), Nullable: true},
			{Name: "p", Type: types.Primitive(types.TypeString), Nullable: true},
		}}}
}

func (b *tableBuilder) Partitioned(cols ...string) *tableBuilder { b.parts = cols; return b }

func (b *tableBuilder) Prop(k, v string) *tableBuilder { b.props[k] = v; return b }

func (b *tableBuilder) Protocol(p Protocol) *tableBuilder { b.protocol = &p; return b }

func (b *tableBuilder) Schema(s *types.StructType) *tableBuilder { b.schema = s; return b }

// Create makes the table in a fresh temporary directory and returns it with its version 0.
func (b *tableBuilder) Create() (*Table, *Snapshot) {
	b.t.Helper()
	tbl := NewTable(newTestStore(b.t), WithClock(b.clock))
	snap, err := tbl.Create(context.Background(), CreateOptions{Schema: b.schema, PartitionColumns: b.parts, Configuration: b.props, Protocol: b.protocol})
	if err != nil {
		b.t.Fatalf("create table: %v", err)
	}
	return tbl, snap
}

// dataFile is an add action for a new file with the given row count (and partition value p
// when the table is partitioned by p).
func dataFile(path string, rows int64, partition ...string) *AddFile {
	a := &AddFile{Path: path, Size: 100 * rows, ModificationTime: testEpoch.UnixMilli(), DataChange: true,
		Stats: fmt.Sprintf(`{"numRecords":%d,"minValues":{"id":0},"maxValues":{"id":%d},"nullCount":{"id":0}}`, rows, rows)}
	if len(partition) > 0 {
		a.PartitionValues = PartitionValues{{Column: "p", Value: partition[0]}}
	} else {
		a.PartitionValues = PartitionValues{}
	}
	return a
}

// mustCommit runs a transaction built by fill on the latest snapshot.
func mustCommit(t testing.TB, tbl *Table, kind Operation, op string, fill func(tx *Transaction)) *CommitResult {
	t.Helper()
	snap, err := tbl.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	tx, err := snap.Begin(kind, TxnOptions{Operation: op, NoAutoCheckpoint: true})
	if err != nil {
		t.Fatal(err)
	}
	fill(tx)
	res, err := tx.Commit(context.Background())
	if err != nil {
		t.Fatalf("commit %s: %v", op, err)
	}
	return res
}

func appendFiles(t testing.TB, tbl *Table, files ...*AddFile) *CommitResult {
	return mustCommit(t, tbl, OpAppend, "WRITE", func(tx *Transaction) { tx.Add(files...) })
}

// readCommit parses a commit file of the table.
func readCommit(t testing.TB, tbl *Table, v Version) []*Action {
	t.Helper()
	data, err := tbl.Store().Get(context.Background(), CommitKey(v))
	if err != nil {
		t.Fatal(err)
	}
	actions, err := parseActions(CommitKey(v), data)
	if err != nil {
		t.Fatal(err)
	}
	return actions
}

func commitInfoOf(t testing.TB, tbl *Table, v Version) *CommitInfo {
	t.Helper()
	for _, a := range readCommit(t, tbl, v) {
		if a.CommitInfo != nil {
			return a.CommitInfo
		}
	}
	t.Fatalf("commit %d has no commitInfo", v)
	return nil
}

// flakyStore reports a failure for the first failAfterWrite PutIfAbsent calls even though the
// write happened: the "timeout after the object was created" case.
type flakyStore struct {
	storage.Store
	mu             sync.Mutex
	failAfterWrite int
}

func (s *flakyStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := s.Store.PutIfAbsent(ctx, key, data); err != nil {
		return err
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.failAfterWrite > 0 {
		s.failAfterWrite--
		return fmt.Errorf("connection reset while waiting for the response")
	}
	return nil
}

type timeDuration = time.Duration

// alwaysLosingStore pretends another writer won every version.
type alwaysLosingStore struct {
	storage.Store
	calls int
}

func (s *alwaysLosingStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	s.calls++
	return storage.ErrAlreadyExists
}

func storageInfo(key string) storage.ObjectInfo { return storage.ObjectInfo{Key: key} }

func getenv(k string) string { return os.Getenv(k) }

// blindStore writes, then fails the write and every read while failing is set: the outcome of
// the commit cannot be determined.
type blindStore struct {
	storage.Store
	failing bool
}

func (s *blindStore) PutIfAbsent(ctx context.Context, key string, data []byte) error {
	if err := s.Store.PutIfAbsent(ctx, key, data); err != nil {
		return err
	}
	if s.failing {
		return fmt.Errorf("connection reset")
	}
	return nil
}

func (s *blindStore) Get(ctx context.Context, key string) ([]byte, error) {
	if s.failing {
		return nil, fmt.Errorf("connection refused")
	}
	return s.Store.Get(ctx, key)
}

func (s *blindStore) Open(ctx context.Context, key string) (storage.ReaderAt, error) {
	if s.failing {
		return nil, fmt.Errorf("connection refused")
	}
	return s.Store.Open(ctx, key)
}
