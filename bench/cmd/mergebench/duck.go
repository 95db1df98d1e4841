package main

import (
	"flag"
	"fmt"
	"log"
	"os"
	"strings"

	"github.com/deltakeeper/deltakeeper/bench/internal/duckconn"
	"github.com/deltakeeper/deltakeeper/bench/internal/localfs"
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
		files = append(files, duckconn.Quote(f))
	}
	db, err := duckconn.Open(*threads)
	if err != nil {
		log.Fatal(err)
	}
	defer db.Close()
	q := fmt.Sprintf(`COPY (SELECT %[1]s FROM read_parquet([%[2]s]) t ANTI JOIN read_parquet(%[3]s) b USING (id)
		UNION ALL SELECT %[1]s FROM read_parquet(%[3]s)) TO %[4]s (FORMAT parquet, COMPRESSION zstd)`,
		benchColumns, strings.Join(files, ", "), duckconn.Quote(*batch), duckconn.Quote(*out))
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
	live, err := localfs.LiveFiles(table)
	if err != nil {
		return truth{}, err
	}
	db, err := duckconn.Open(2)
	if err != nil {
		return truth{}, err
	}
	defer db.Close()
	src := "read_parquet([" + quoteAll(live) + "], filename = true)"
	var tr truth
	rows, err := db.Query(fmt.Sprintf("SELECT DISTINCT filename FROM %s WHERE id IN (SELECT id FROM read_parquet(%s)) ORDER BY 1", src, duckconn.Quote(batch)))
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
		(SELECT count(*) FROM read_parquet(%[2]s)), (SELECT count(*) FROM %[1]s)`, src, duckconn.Quote(batch))).Scan(&tr.matchedRows, &tr.batchRows, &tr.tableRows)
	return tr, err
}

// checkCopyOnWrite has DuckDB read the live files of a copy-on-write table after the merge: the old rows
// whose id is not in the batch, and the batch, exactly.
func checkCopyOnWrite(table, batch string, tr truth) error {
	live, err := localfs.LiveFiles(table)
	if err != nil {
		return err
	}
	db, err := duckconn.Open(2)
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
		SELECT %[1]s FROM read_parquet([%[3]s]))`, benchColumns, duckconn.Quote(batch), quoteAll(live))).Scan(&missing)
	if err != nil {
		return err
	}
	if missing != 0 {
		return fmt.Errorf("%d batch rows are not in the table", missing)
	}
	return nil
}

func quoteAll(files []string) string {
	q := make([]string, len(files))
	for i, f := range files {
		q[i] = duckconn.Quote(f)
	}
	return strings.Join(q, ", ")
}
