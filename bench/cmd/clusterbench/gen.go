package main

import (
	"context"
	"flag"
	"fmt"
	"math/rand/v2"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// benchSchema is an event table: k1 and k2 are the clustering columns (uniform), the rest is payload of
// the widths a fact table has.
func benchSchema() *types.StructType {
	f := func(name, typ string) *types.StructField {
		return &types.StructField{Name: name, Type: types.Primitive(typ), Nullable: true}
	}
	return &types.StructType{Fields: []*types.StructField{
		f("id", types.TypeLong), f("k1", types.TypeLong), f("k2", types.TypeTimestamp), f("name", types.TypeString),
		f("amount", types.TypeDouble), f("qty", types.TypeInteger), f("category", types.TypeString), f("note", types.TypeString),
	}}
}

const (
	k1Range = 1_000_000_000_000
	k2Start = 1_735_689_600_000_000 // 2025-01-01 in µs
	k2Range = 365 * 86_400_000_000
)

var words = []string{"alpha", "bravo", "charlie", "delta", "echo", "foxtrot", "golf", "hotel", "india", "juliet",
	"kilo", "lima", "mike", "november", "oscar", "papa", "quebec", "romeo", "sierra", "tango"}

// rows generates n rows with ids from first, deterministic for the seed.
func rows(n int, first int64, seed uint64) []types.Struct {
	r := rand.New(rand.NewPCG(seed, uint64(first)))
	out := make([]types.Struct, n)
	const letters = "abcdefghijklmnopqrstuvwxyz"
	for i := range out {
		name := make([]byte, 12+r.IntN(12))
		for j := range name {
			name[j] = letters[r.IntN(len(letters))]
		}
		note := words[r.IntN(len(words))] + " " + words[r.IntN(len(words))] + " " + words[r.IntN(len(words))] + " " + words[r.IntN(len(words))]
		out[i] = types.Struct{first + int64(i), r.Int64N(k1Range), types.Timestamp(k2Start + r.Int64N(k2Range)), string(name),
			r.Float64() * 1000, int32(r.IntN(1000)), words[r.IntN(len(words))], note}
	}
	return out
}

// appendRows appends n new rows as files commits of one file each (small writers), or, with files=0,
// as one commit rolled over at the target size.
func appendRows(ctx context.Context, tbl *delta.Table, n int, first int64, seed uint64, files int, target int64) (int64, error) {
	var bytes int64
	per := n
	if files > 0 {
		per = (n + files - 1) / files
	}
	const chunk = 500_000
	for done := 0; done < n; {
		k := min(per, n-done)
		if files == 0 {
			k = min(chunk, n-done)
		}
		snap, err := tbl.Latest(ctx)
		if err != nil {
			return 0, err
		}
		opts := table.WriteOptions{DataChange: true, TargetFileSize: target}
		if files > 0 {
			opts.TargetFileSize = 1 << 40 // one file per commit
		}
		res, err := table.Append(ctx, snap, rows(k, first+int64(done), seed), opts)
		if err != nil {
			return 0, err
		}
		for _, f := range res.Files {
			bytes += f.Size
		}
		done += k
	}
	return bytes, nil
}

func cmdGen(args []string) error {
	fs := flag.NewFlagSet("gen", flag.ExitOnError)
	dir := fs.String("table", "", "table directory (created)")
	n := fs.Int("rows", 1_000_000, "rows")
	target := fs.Int64("file-size", 16<<20, "size of the generated (unclustered) files")
	rowTracking := fs.Bool("row-tracking", false, "enable row tracking (clustering then preserves every row's id)")
	fs.Parse(args)
	ctx := context.Background()
	store, err := storage.Open(ctx, *dir, storage.Config{})
	if err != nil {
		return err
	}
	tbl := delta.NewTable(store)
	conf := map[string]string{"delta.dataSkippingStatsColumns": "id,k1,k2,qty"}
	if *rowTracking {
		conf[delta.PropEnableRowTracking] = "true"
	}
	if _, err := tbl.Create(ctx, delta.CreateOptions{Schema: benchSchema(), Configuration: conf}); err != nil {
		return err
	}
	start := time.Now()
	bytes, err := appendRows(ctx, tbl, *n, 0, 1, 0, *target)
	if err != nil {
		return err
	}
	if _, err := table.ApplyDeclaration(ctx, tbl, table.Declaration{ClusterBy: []string{"k1", "k2"}, SetClusterBy: true}); err != nil {
		return err
	}
	unc, err := uncompressedBytes(ctx, tbl)
	if err != nil {
		return err
	}
	emit(map[string]any{"step": "gen", "rows": *n, "bytes": bytes, "uncompressedBytes": unc, "s": time.Since(start).Seconds()})
	return nil
}

// uncompressedBytes sums the live files' page sizes before compression (the logical data size).
func uncompressedBytes(ctx context.Context, tbl *delta.Table) (int64, error) {
	snap, err := tbl.Latest(ctx)
	if err != nil {
		return 0, err
	}
	var total int64
	for _, f := range snap.Files() {
		key, err := delta.ObjectKey(tbl.Location(), f.Path)
		if err != nil {
			return 0, err
		}
		r, err := tbl.Store().Open(ctx, key)
		if err != nil {
			return 0, err
		}
		pf, err := parquetio.Open(ctx, r)
		if err != nil {
			r.Close()
			return 0, fmt.Errorf("%s: %w", key, err)
		}
		for g := range pf.NumRowGroups() {
			total += pf.RowGroup(g).UncompressedBytes
		}
		r.Close()
	}
	return total, nil
}
