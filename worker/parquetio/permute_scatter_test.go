package parquetio

import (
	"context"
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Segments keep no definition levels while their values are all defined and take them up at the
// first null, so nulls sparse enough to leave most segments without one, and a null after defined
// values in the same segment, must come out where they went in.
func TestPermute_SparseNullsKeepTheirRows(t *testing.T) {
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: true},
		{Name: "n", Type: types.Primitive(types.TypeLong), Nullable: true},
		{Name: "s", Type: types.Primitive(types.TypeString), Nullable: true},
		{Name: "never", Type: types.Primitive(types.TypeString), Nullable: true},
	}}
	var cases []rewriteCase
	for i := range 3 {
		var rows []types.Struct
		for r := range 400 {
			id := int64(i*400 + r)
			row := types.Struct{id, id * 3, fmt.Sprintf("s%d", id%37), fmt.Sprintf("v%d", id)}
			if id%97 == 5 {
				row[1] = nil
			}
			if id%131 == 7 {
				row[2] = nil
			}
			rows = append(rows, row)
		}
		data, _ := writeRows(t, schema, rows, WriterOptions{Codec: "zstd", RowGroupRows: 150})
		cases = append(cases, rewriteCase{rows: rows, data: data})
	}
	live := liveRows(cases)
	order := make([]uint32, len(live))
	for i := range order {
		order[i] = uint32(i)
	}
	rand.New(rand.NewPCG(7, 9)).Shuffle(len(order), func(i, j int) { order[i], order[j] = order[j], order[i] })
	var sink indexedSink
	starts := []int{0, 500}
	res, err := Permute(context.Background(), rewriteInputs(cases), order, starts, sink.create, RewriteOptions{
		Schema: schema, Parallelism: 2, Writer: WriterOptions{RowGroupRows: 60, PageBytes: 1024},
	})
	if err != nil {
		t.Fatal(err)
	}
	for k, start := range starts {
		end := len(order)
		if k+1 < len(starts) {
			end = starts[k+1]
		}
		var want []types.Struct
		for a := start; a < end; a += 60 {
			grp := slices.Clone(order[a:min(end, a+60)])
			slices.Sort(grp)
			for _, g := range grp {
				want = append(want, live[g])
			}
		}
		assertRowsEqual(t, want, readAll(t, openBytes(t, sink.outs[k].Bytes()), schema, ReadOptions{}))
		assertStats(t, schema, want, res.Files[k])
	}
}

// The estimate covers what the segments hold: values at their width, byte arrays with offsets,
// levels only where there are nulls; dictionary-encoded strings are not taken at their index bytes.
func TestPermuteBytes_CoversTheDecodedValues(t *testing.T) {
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: true},
		{Name: "word", Type: types.Primitive(types.TypeString), Nullable: true},
	}}
	var rows []types.Struct
	var strBytes int64
	for r := range 20000 {
		w := []string{"alpha", "november", "kilo"}[r%3]
		rows = append(rows, types.Struct{int64(r), w})
		strBytes += int64(len(w))
	}
	data, _ := writeRows(t, schema, rows, WriterOptions{Codec: "zstd"})
	got := openBytes(t, data).PermuteBytes()
	decoded := 20000*8 + 20000*4 + strBytes // longs, offsets, string bytes; no nulls, so no levels
	if got < decoded || got > 2*decoded {
		t.Fatalf("estimate %d bytes for %d decoded", got, decoded)
	}
}
