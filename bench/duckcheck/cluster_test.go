package duckcheck

import (
	"context"
	"fmt"
	"math/big"
	"math/rand/v2"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/bench/internal/ducktest"

	"github.com/deltakeeper/deltakeeper/worker/cluster"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// clusterSchema has the shapes the columnar sort (parquetio.Permute) gathers differently: flat
// nullable columns, a decimal, a list, a struct and a map.
func clusterSchema() *types.StructType {
	f := func(name string, t types.DataType) *types.StructField {
		return &types.StructField{Name: name, Type: t, Nullable: true}
	}
	p := types.Primitive
	return &types.StructType{Fields: []*types.StructField{
		f("id", p(types.TypeLong)), f("a", p(types.TypeLong)), f("s", p(types.TypeString)), f("d", types.Decimal(18, 4)),
		f("ts", p(types.TypeTimestamp)), f("arr", &types.ArrayType{ElementType: p(types.TypeInteger), ContainsNull: true}),
		f("st", &types.StructType{Fields: []*types.StructField{f("x", p(types.TypeDouble)), f("y", p(types.TypeString))}}),
		f("m", &types.MapType{KeyType: p(types.TypeString), ValueType: p(types.TypeLong), ValueContainsNull: true}),
	}}
}

func clusterRows(n, first int, seed uint64) []types.Struct {
	r := rand.New(rand.NewPCG(seed, 1))
	rows := make([]types.Struct, n)
	for i := range rows {
		id := int64(first + i)
		row := types.Struct{id, r.Int64N(1_000_000), fmt.Sprintf("k%05d", r.IntN(50_000)), types.DecimalValue{Unscaled: big.NewInt(r.Int64N(1e9)), Scale: 4},
			types.Timestamp(1_700_000_000_000_000 + r.Int64N(1e12)), types.Array{int32(i), nil, int32(-i)},
			types.Struct{r.Float64(), fmt.Sprint(i % 7)}, types.Map{{Key: "k", Value: id}, {Key: "n", Value: nil}}}
		if i%11 == 0 {
			row[1], row[5], row[6], row[7] = nil, nil, nil, nil
		}
		rows[i] = row
	}
	return rows
}

// newClusterTable creates an empty table of clusterSchema in a temporary directory.
func newClusterTable(t *testing.T, props map[string]string) (string, *delta.Table) {
	t.Helper()
	dir := t.TempDir()
	store, err := storage.Open(context.Background(), dir, storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	tbl, _, err := tabletest.Create(context.Background(), store, clusterSchema(), nil, delta.ColumnMappingNone, props)
	if err != nil {
		t.Fatal(err)
	}
	return dir, tbl
}

// liveFiles lists the snapshot's data files as local paths.
func liveFiles(t *testing.T, dir string, snap *delta.Snapshot) []string {
	var out []string
	for _, f := range snap.Files() {
		key, err := delta.ObjectKey(snap.Table().Location(), f.Path)
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, "'"+filepath.Join(dir, key)+"'")
	}
	return out
}

// TestCluster_DuckDBReadsTheSameRowsFromTheClusteredFiles clusters a table with FULL and checks with
// DuckDB that the new files hold exactly the rows of the old ones (count and an order-independent sum
// of row hashes) and that every file's statistics bound what DuckDB reads from it.
func TestCluster_DuckDBReadsTheSameRowsFromTheClusteredFiles(t *testing.T) {
	ctx := context.Background()
	dir, tbl := newClusterTable(t, nil)
	for i := range 6 {
		snap, _ := tbl.Latest(ctx)
		if _, err := table.Append(ctx, snap, clusterRows(5_000, i*5_000, uint64(i)), table.WriteOptions{DataChange: true}); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := table.ApplyDeclaration(ctx, tbl, table.Declaration{ClusterBy: []string{"a", "s"}, SetClusterBy: true}); err != nil {
		t.Fatal(err)
	}
	db := ducktest.Open(t)
	digest := func(files []string) string {
		var n int64
		var h string
		q := fmt.Sprintf("SELECT count(*), sum(hash(id, a, s, d, ts, arr, st, m)::HUGEINT)::VARCHAR FROM read_parquet([%s])", strings.Join(files, ","))
		if err := db.QueryRow(q).Scan(&n, &h); err != nil {
			t.Fatal(err)
		}
		return fmt.Sprintf("%d rows, hash sum %s", n, h)
	}
	before, _ := tbl.Latest(ctx)
	want := digest(liveFiles(t, dir, before))
	o := cluster.DefaultOptions()
	o.Full, o.TargetFileSize = true, 128<<10
	op, err := cluster.Optimize(ctx, tbl, before, o, nil)
	if err != nil || op.FilesAdded < 3 {
		t.Fatalf("optimize: %+v, %v", op, err)
	}
	after, _ := tbl.Latest(ctx)
	if got := digest(liveFiles(t, dir, after)); got != want {
		t.Fatalf("DuckDB reads %s from the clustered files, %s before", got, want)
	}
	for _, f := range after.Files() {
		st, ok, err := after.Stats(f)
		if err != nil || !ok {
			t.Fatalf("file %s: stats %v %v", f.Path, ok, err)
		}
		a, _ := st.Column("a")
		var lo, hi int64
		key, err := delta.ObjectKey(after.Table().Location(), f.Path)
		if err != nil {
			t.Fatal(err)
		}
		q := fmt.Sprintf("SELECT min(a), max(a) FROM read_parquet('%s')", filepath.Join(dir, key))
		if err := db.QueryRow(q).Scan(&lo, &hi); err != nil {
			t.Fatal(err)
		}
		if a.Min != lo || a.Max != hi {
			t.Fatalf("file %s: statistics say a in [%v, %v], DuckDB reads [%d, %d]", f.Path, a.Min, a.Max, lo, hi)
		}
	}
}
