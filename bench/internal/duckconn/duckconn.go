// Package duckconn opens the DuckDB connections the benchmark drivers run their reference side on.
package duckconn

import (
	"database/sql"
	"fmt"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" driver
)

// Open opens an in-memory DuckDB on one connection (its settings are per connection) limited to threads.
func Open(threads int) (*sql.DB, error) {
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

// Quote is s as a SQL string literal.
func Quote(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }
