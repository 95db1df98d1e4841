package table_test

import (
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Clustering writes its outputs one by one (and in waves, out of index order) through RewriteOutputs:
// every output carries the run's tags and provider, sits in the bin's partition directory, is
// described with its own statistics, and is deleted by Abort.
func TestRewriteOutputs_DescribeOutputsWrittenOneByOneWithTheRunsTags(t *testing.T) {
	store, _ := newStore(t)
	tbl, _, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), []string{"part"}, delta.ColumnMappingNone, nil)
	if err != nil {
		t.Fatal(err)
	}
	snap := appendBatches(t, tbl, tabletest.AllTypesRows(40))
	pv := snap.Files()[0].PartitionValues
	tags := map[string]string{table.TagZCubeID: "z-1", table.TagZCubeZOrderBy: `["id"]`}
	outs, err := table.NewRewriteOutputs(t.Context(), snap, pv, table.WriteOptions{
		TargetFileSize: 64 << 10, ClusteringProvider: table.LiquidProvider, Tags: tags,
	})
	if err != nil {
		t.Fatal(err)
	}
	opts := outs.Options()
	if opts.TargetFileBytes != 64<<10 || opts.Writer.RowGroupBytes != 16<<10 {
		t.Fatalf("target %d, row groups %d: want the one policy, 64 KiB and a quarter of it", opts.TargetFileBytes, opts.Writer.RowGroupBytes)
	}
	// Rows in the file schema: the table's columns without the partition column.
	part := snap.Schema().FieldIndex("part")
	var rows []types.Struct
	for _, r := range tabletest.AllTypesRows(30) {
		rows = append(rows, slices.Delete(slices.Clone(r), part, part+1))
	}
	write := func(i int, rows []types.Struct) *parquetio.WriteResult {
		sw, err := outs.Create(i)
		if err != nil {
			t.Fatal(err)
		}
		pw, err := parquetio.NewWriter(sw, opts.Schema, opts.Writer)
		if err != nil {
			t.Fatal(err)
		}
		if err := pw.Write(rows); err != nil {
			t.Fatal(err)
		}
		res, err := pw.Close()
		if err != nil {
			t.Fatal(err)
		}
		if err := sw.Close(); err != nil {
			t.Fatal(err)
		}
		return res
	}
	res1 := write(1, rows[10:]) // a later wave's output first
	res0 := write(0, rows[:10])
	add0, err := outs.AddFile(0, res0)
	if err != nil {
		t.Fatal(err)
	}
	add1, err := outs.AddFile(1, res1)
	if err != nil {
		t.Fatal(err)
	}
	dir, err := snap.PartitionDir(pv)
	if err != nil {
		t.Fatal(err)
	}
	for i, a := range []*delta.AddFile{add0, add1} {
		if a.ClusteringProvider != table.LiquidProvider || !maps.Equal(a.Tags, tags) || a.DataChange {
			t.Errorf("output %d: provider %q, tags %v, dataChange %v", i, a.ClusteringProvider, a.Tags, a.DataChange)
		}
		if !strings.HasPrefix(a.Path, delta.EncodePath(dir+"/")) || !slices.Equal(a.PartitionValues, pv) {
			t.Errorf("output %d: path %s, partition values %v; want under %s/ with %v", i, a.Path, a.PartitionValues, dir, pv)
		}
		if key := outs.Key(i); delta.EncodePath(key) != a.Path {
			t.Errorf("output %d: Key %q, add path %q", i, key, a.Path)
		}
	}
	if n, ok := delta.NumRecords(add0.Stats); !ok || n != 10 {
		t.Errorf("output 0: numRecords %d (%v), want 10", n, ok)
	}
	if n, ok := delta.NumRecords(add1.Stats); !ok || n != 20 {
		t.Errorf("output 1: numRecords %d (%v), want 20", n, ok)
	}
	// Each file gets its own copy of the tags.
	add0.Tags["extra"] = "x"
	if _, shared := add1.Tags["extra"]; shared || len(tags) != 2 {
		t.Error("outputs share one tags map")
	}
	if _, err := outs.AddFile(2, res0); err == nil {
		t.Error("AddFile described an output that was never created")
	}
	if err := outs.Abort(t.Context()); err != nil {
		t.Fatal(err)
	}
	for _, k := range []string{outs.Key(0), add0.Path, add1.Path} {
		if k == "" {
			continue
		}
		key, _ := delta.ObjectKey(tbl.Location(), k)
		if _, err := store.Stat(t.Context(), key); !errors.Is(err, storage.ErrNotFound) {
			t.Errorf("%s still exists after Abort: %v", key, err)
		}
	}
}
