// Package ducktest opens the in-memory DuckDB that the cross-check tests read our files with.
package ducktest

import (
	"database/sql"
	"testing"

	_ "github.com/duckdb/duckdb-go/v2" // the "duckdb" driver
)

// Open returns an in-memory DuckDB on one connection (settings stick to it), closed when the test ends.
func Open(t testing.TB) *sql.DB {
	t.Helper()
	db, err := sql.Open("duckdb", "")
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	return db
}
