package cluster_test

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// eventSchema is a small table with two clustering candidates, a string, a nullable decimal-free
// payload and a struct.
func eventSchema() *types.StructType {
	return &types.StructType{Fields: []*types.StructField{
		{Name: "a", Type: types.Primitive(types.TypeLong), Nullable: true},
		{Name: "b", Type: types.Primitive(types.TypeInteger), Nullable: true},
		{Name: "s", Type: types.Primitive(types.TypeString), Nullable: true},
		{Name: "ts", Type: types.Primitive(types.TypeTimestamp), Nullable: true},
		{Name: "nested", Type: &types.StructType{Fields: []*types.StructField{
			{Name: "x", Type: types.Primitive(types.TypeDouble), Nullable: true},
		}}, Nullable: true},
	}}
}

// eventRows makes n rows uniform over a in [0, 1e6) and b in [0, 1e4), with some nulls; ids start at
// first so that successive appends never repeat a row.
func eventRows(n, first int, seed uint64) []types.Struct {
	r := rand.New(rand.NewPCG(seed, 7))
	rows := make([]types.Struct, n)
	for i := range rows {
		var a, b types.Value = r.Int64N(1_000_000), int32(r.IntN(10_000))
		if i%97 == 0 {
			b = nil
		}
		rows[i] = types.Struct{a, b, fmt.Sprintf("row-%09d", first+i), types.Timestamp(int64(first+i) * 1_000_003),
			types.Struct{r.Float64()}}
	}
	return rows
}

type fixture struct {
	t     *testing.T
	ctx   context.Context
	store storage.Store
	tbl   *delta.Table
}

func newFixture(t *testing.T, props map[string]string) *fixture {
	return newFixtureOn(t, localStore(t), props)
}

func localStore(t *testing.T) storage.Store {
	store, err := storage.Open(context.Background(), t.TempDir(), storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	return store
}

func newFixtureOn(t *testing.T, store storage.Store, props map[string]string) *fixture {
	t.Helper()
	ctx := context.Background()
	tbl, _, err := tabletest.Create(ctx, store, eventSchema(), nil, delta.ColumnMappingNone, props)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, ctx: ctx, store: store, tbl: tbl}
}

func (f *fixture) latest() *delta.Snapshot {
	f.t.Helper()
	snap, err := f.tbl.Latest(f.ctx)
	if err != nil {
		f.t.Fatal(err)
	}
	return snap
}

// appendFiles appends rows split into the given number of files (one commit each, as small writers do).
func (f *fixture) appendFiles(rows []types.Struct, files int) {
	f.t.Helper()
	per := (len(rows) + files - 1) / files
	for i := 0; i < len(rows); i += per {
		if _, err := table.Append(f.ctx, f.latest(), rows[i:min(i+per, len(rows))], table.WriteOptions{DataChange: true}); err != nil {
			f.t.Fatal(err)
		}
	}
}

func (f *fixture) clusterBy(cols ...string) {
	f.t.Helper()
	if _, err := table.ApplyDeclaration(f.ctx, f.tbl, table.Declaration{ClusterBy: cols, SetClusterBy: true}); err != nil {
		f.t.Fatal(err)
	}
}

// addNestedField adds nested.y to the table schema with a raw metaData commit, as a writer evolving
// the schema would (deltakeeper itself never changes a schema). Every existing file then lacks a nested
// field, which the columnar sort cannot fill: clustering them takes the logical-row path.
func (f *fixture) addNestedField() {
	f.t.Helper()
	snap := f.latest()
	schema := types.MapFields(snap.Schema(), func(sf *types.StructField) *types.StructField {
		c := *sf
		return &c
	}).(*types.StructType)
	nested := schema.Field("nested").Type.(*types.StructType)
	nested.Fields = append(nested.Fields, &types.StructField{Name: "y", Type: types.Primitive(types.TypeDouble), Nullable: true})
	md := snap.Metadata()
	var err error
	if md.SchemaString, err = schema.SchemaString(); err != nil {
		f.t.Fatal(err)
	}
	line, err := json.Marshal(map[string]any{"metaData": md})
	if err != nil {
		f.t.Fatal(err)
	}
	if err := f.tbl.Store().PutIfAbsent(f.ctx, delta.CommitKey(snap.Version()+1), append(line, '\n')); err != nil {
		f.t.Fatal(err)
	}
}

// rows returns the table's rows as sorted canonical strings: a multiset to compare before and after.
func (f *fixture) rows() []string {
	f.t.Helper()
	return canonicalRows(f.t, f.latest())
}

func canonicalRows(t *testing.T, snap *delta.Snapshot) []string {
	t.Helper()
	rows, err := tabletest.SortedRows(context.Background(), snap)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func (f *fixture) optimize(opts cluster.Options) *result.Op {
	f.t.Helper()
	op, err := cluster.Optimize(f.ctx, f.tbl, f.latest(), opts, nil)
	if err != nil {
		f.t.Fatalf("optimize: %v", err)
	}
	return op
}

func (f *fixture) quality(cols ...string) map[string]result.ColumnQuality {
	f.t.Helper()
	q, err := table.ClusteringQuality(f.latest(), cols)
	if err != nil {
		f.t.Fatal(err)
	}
	m := map[string]result.ColumnQuality{}
	for _, c := range q {
		m[c.Column] = c
	}
	return m
}

func sameRows(t *testing.T, before, after []string) {
	t.Helper()
	if len(before) != len(after) {
		t.Fatalf("table has %d rows after clustering, %d before", len(after), len(before))
	}
	for i := range before {
		if before[i] != after[i] {
			t.Fatalf("row multiset changed: first difference %q vs %q", before[i], after[i])
		}
	}
}

// zcubeOf returns a file's ZCube id and clustering columns, failing the test unless the file carries
// liquid clustering's marks.
func zcubeOf(t *testing.T, a *delta.AddFile) (string, []string) {
	t.Helper()
	if a.ClusteringProvider != cluster.Provider {
		t.Fatalf("file %s has clusteringProvider %q, want %q", a.Path, a.ClusteringProvider, cluster.Provider)
	}
	var by []string
	if err := json.Unmarshal([]byte(a.Tags[cluster.TagZCubeZOrderBy]), &by); err != nil {
		t.Fatalf("file %s: tag %s=%q is not a JSON list: %v", a.Path, cluster.TagZCubeZOrderBy, a.Tags[cluster.TagZCubeZOrderBy], err)
	}
	if a.Tags[cluster.TagZCubeID] == "" {
		t.Fatalf("file %s has no %s tag", a.Path, cluster.TagZCubeID)
	}
	return a.Tags[cluster.TagZCubeID], by
}

// opts are the defaults at a small target, without the quality bound (MaxQualityGap 1 never
// escalates): the tests of the selection rules see them alone; drift_test.go tests the bound.
func opts(mod func(*cluster.Options)) cluster.Options {
	o := cluster.DefaultOptions()
	o.TargetFileSize = 64 << 10
	o.MaxQualityGap = 1
	if mod != nil {
		mod(&o)
	}
	return o
}
