package main

import (
	"context"
	"database/sql"
	"flag"
	"fmt"
	"log"
	"os"
	"path/filepath"
	"sort"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// duckCmd is DuckDB's side of a run: read the touched files, drop the rows the batch replaces, add the
// batch, write one zstd Parquet file.
func duckCmd(args []string) {
	fs := flag.NewFlagSet("duck", flag.ExitOnError)
	list := fs.String("files", "", "file listing the touched files, one per line")
	batch := fs.String("batch", "", "the batch")
	out := fs.String("out", "", "output file")
	threads := fs.Int("threads", 2, "DuckDB threads")
	fs.Parse(args)
	b, err := os.ReadFile(*list)
	if err != nil {
		log.Fatal(err)
	}
	var files []string
	for _, f := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		files = append(files, quote(f))
	}
	db, err := openDuck(*threads)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	q := fmt.Sprintf(`COPY (SELECT %[1]s FROM read_parquet([%[2]s]) t ANTI JOIN read_parquet(%[3]s) b USING (id)
		UNION ALL SELECT %[1]s FROM read_parquet(%[3]s)) TO %[4]s (FORMAT parquet, COMPRESSION zstd)`,
		benchColumns, strings.Join(files, ", "), quote(*batch), quote(*out))
	if _, err := db.Exec(q); err != nil {
		log.Fatalf("duckdb: %v", err)
	}
}

// truth is what DuckDB finds in the table before the merge.
type truth struct {
	holding     []string // the live files that hold a key of the batch
	matchedRows int64    // table rows whose id is in the batch
	batchRows   int64
	tableRows   int64
}

func matchedFiles(table, batch string) (truth, error) {
	live, err := liveFiles(table)
	if err != nil {
		return truth{}, err
	}
	db, err := openDuck(2)
	if err != nil {
		return truth{}, err
	}
	defer db.Close()
	src := "read_parquet([" + quoteAll(live) + "], filename = true)"
	var tr truth
	rows, err := db.Query(fmt.Sprintf("SELECT DISTINCT filename FROM %s WHERE id IN (SELECT id FROM read_parquet(%s)) ORDER BY 1", src, quote(batch)))
	if err != nil {
		return truth{}, err
	}
	for rows.Next() {
		var f string
		if err := rows.Scan(&f); err != nil {
			return truth{}, err
		}
		tr.holding = append(tr.holding, f)
	}
	rows.Close()
	err = db.QueryRow(fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s WHERE id IN (SELECT id FROM read_parquet(%[2]s))),
		(SELECT count(*) FROM read_parquet(%[2]s)), (SELECT count(*) FROM %[1]s)`, src, quote(batch))).Scan(&tr.matchedRows, &tr.batchRows, &tr.tableRows)
	return tr, err
}

// checkCopyOnWrite has DuckDB read the live files of a copy-on-write table after the merge: the old rows
// whose id is not in the batch, and the batch, exactly.
func checkCopyOnWrite(table, batch string, tr truth) error {
	live, err := liveFiles(table)
	if err != nil {
		return err
	}
	db, err := openDuck(2)
	if err != nil {
		return err
	}
	defer db.Close()
	var n, updated int64
	err = db.QueryRow(fmt.Sprintf(`SELECT count(*), count(*) FILTER (WHERE name LIKE 'updated-%%') FROM read_parquet([%s])`, quoteAll(live))).Scan(&n, &updated)
	if err != nil {
		return err
	}
	if want := tr.tableRows - tr.matchedRows + tr.batchRows; n != want || updated != tr.batchRows {
		return fmt.Errorf("%d rows (want %d), %d of them from the batch (want %d)", n, want, updated, tr.batchRows)
	}
	var missing int64
	err = db.QueryRow(fmt.Sprintf(`SELECT count(*) FROM (SELECT %[1]s FROM read_parquet(%[2]s) EXCEPT ALL
		SELECT %[1]s FROM read_parquet([%[3]s]))`, benchColumns, quote(batch), quoteAll(live))).Scan(&missing)
	if err != nil {
		return err
	}
	if missing != 0 {
		return fmt.Errorf("%d batch rows are not in the table", missing)
	}
	return nil
}

func liveFiles(dir string) ([]string, error) {
	store, err := storage.NewLocal(dir)
	if err != nil {
		return nil, err
	}
	snap, err := delta.NewTable(store).Latest(context.Background())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range snap.Files() {
		key, err := delta.ObjectKey(store.Location(), f.Path)
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.Join(dir, filepath.FromSlash(key)))
	}
	sort.Strings(out)
	return out, nil
}

func openDuck(threads int) (*sql.DB, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return nil, err
	}
	db.SetMaxOpenConns(1)
	if _, err := db.Exec(fmt.Sprintf("SET threads = %d", threads)); err != nil {
		db.Close()
		return nil, err
	}
	return db, nil
}

func quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

func quoteAll(files []string) string {
	q := make([]string, len(files))
	for i, f := range files {
		q[i] = quote(f)
	}
	return strings.Join(q, ", ")
}
