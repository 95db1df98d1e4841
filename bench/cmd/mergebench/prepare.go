package main

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/deltakeeper/deltakeeper/bench/internal/duckconn"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// The benchmark's tables: rows × (id BIGINT, grp INTEGER, amount DOUBLE, name VARCHAR, ts TIMESTAMP) in
// files of rowsPerFile rows, written by DuckDB and ingested by `deltakeeper ingest` (the column copy: one
// table file per source file, with the statistics a merge prunes by). "clustered": file f holds the ids
// [f·rowsPerFile, (f+1)·rowsPerFile) and the table is clustered on id; "random": the ids are a permutation
// (i·7919 mod rows) spread over every file, and the table has no clustering.

const benchColumns = "id, grp, amount, name, ts"

func rowsSQL(first, n, total int64, layout string) string {
	id := "i"
	if layout == "random" {
		id = fmt.Sprintf("(i * 7919) %% %d", total)
	}
	return fmt.Sprintf(`SELECT %s AS id, (i %% 97)::INTEGER AS grp, (i %% 100000) / 100.0 AS amount,
		'customer-' || (i %% 50000) AS name, TIMESTAMP '2024-01-01' + to_seconds(i) AS ts FROM range(%d, %d) t(i)`, id, first, first+n)
}

// prepareTable builds the table at dir (once: an existing table is kept) and returns it.
func prepareTable(dir, bin string, rows, files int64, layout string, dv bool) error {
	if _, err := os.Stat(filepath.Join(dir, "_delta_log", "00000000000000000000.json")); err == nil {
		return nil
	}
	src := dir + "-src"
	os.RemoveAll(dir)
	os.RemoveAll(src)
	if err := os.MkdirAll(src, 0o755); err != nil {
		return err
	}
	db, err := duckconn.Open(2)
	if err != nil {
		return err
	}
	defer db.Close()
	per := rows / files
	for f := range files {
		q := fmt.Sprintf("COPY (%s) TO %s (FORMAT parquet, COMPRESSION zstd, ROW_GROUP_SIZE 1000000)", rowsSQL(f*per, per, rows, layout),
			duckconn.Quote(filepath.Join(src, fmt.Sprintf("f%05d.parquet", f))))
		if _, err := db.Exec(q); err != nil {
			return err
		}
	}
	ctx := context.Background()
	store, err := storage.NewLocal(dir)
	if err != nil {
		return err
	}
	f := func(name, t string) *types.StructField {
		return &types.StructField{Name: name, Type: types.Primitive(t), Nullable: true}
	}
	schema := &types.StructType{Fields: []*types.StructField{f("id", types.TypeLong), f("grp", types.TypeInteger), f("amount", types.TypeDouble),
		f("name", types.TypeString), f("ts", types.TypeTimestamp)}}
	opts := delta.CreateOptions{Schema: schema, Configuration: map[string]string{}}
	if dv {
		opts.Configuration[delta.PropEnableDeletionVectors] = "true"
	}
	tbl := delta.NewTable(store)
	if _, err := tbl.Create(ctx, opts); err != nil {
		return err
	}
	cmd := exec.Command(bin, "ingest", dir, "--source", src, "--format", "parquet", "--available-now", "--max-files-per-trigger", "100000", "-o", "json")
	if out, err := cmd.CombinedOutput(); err != nil {
		return fmt.Errorf("ingest: %w: %s", err, out)
	}
	if layout == "clustered" {
		if _, err := table.ApplyDeclaration(ctx, tbl, table.Declaration{SetClusterBy: true, ClusterBy: []string{"id"}}); err != nil {
			return err
		}
	}
	return os.RemoveAll(src)
}

// writeBatch writes the upsert batch: 1 % of the table's keys, nine tenths of them existing ids (in the
// clustered layout 18 runs of consecutive ids at random places, so that few files hold them; in the random
// one ids drawn uniformly) and a tenth new ids past the table's, with new values in every other column.
func writeBatch(path string, rows int64, layout string, seed int64) error {
	db, err := duckconn.Open(2)
	if err != nil {
		return err
	}
	defer db.Close()
	if _, err := db.Exec(fmt.Sprintf("SELECT setseed(%f)", float64(seed%1000)/1000)); err != nil {
		return err
	}
	n := rows / 100
	existing, fresh := n*9/10, n-n*9/10
	var ids string
	if layout == "clustered" {
		runs := int64(18)
		run := existing / runs
		ids = fmt.Sprintf(`SELECT s.start + r.i AS id FROM (SELECT (random() * %d)::BIGINT AS start FROM range(%d)) s, range(%d) r(i)`,
			rows-run, runs, run)
	} else {
		ids = fmt.Sprintf(`SELECT (random() * %d)::BIGINT AS id FROM range(%d)`, rows-1, existing*11/10)
	}
	q := fmt.Sprintf(`COPY (
		WITH ex AS (SELECT DISTINCT id FROM (%s) LIMIT %d), nw AS (SELECT %d + i AS id FROM range(%d) t(i)), k AS (SELECT id FROM ex UNION ALL SELECT id FROM nw)
		SELECT id, (id %% 13)::INTEGER AS grp, -1.5::DOUBLE AS amount, 'updated-' || id AS name, TIMESTAMP '2025-06-01' + to_seconds(id) AS ts FROM k
	) TO %s (FORMAT parquet, COMPRESSION zstd)`, ids, existing, rows, fresh, duckconn.Quote(path))
	_, err = db.Exec(q)
	return err
}
