package main

import (
	"database/sql"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	_ "github.com/duckdb/duckdb-go/v2"
)

// verify checks with DuckDB that both outputs hold the input's rows: the row count, and per column the
// non-null count and the sum of value hashes (order-independent, so a multiset check), plus readable
// sums of the numeric columns. Timestamps are hashed as epoch microseconds because the tools store them
// differently (INT96 in, TIMESTAMP(MICROS) out).
func verify(in, ours, duck string) (string, error) {
	db, err := sql.Open("duckdb", "")
	if err != nil {
		return "", err
	}
	defer db.Close()
	inSrc, err := source(in)
	if err != nil {
		return "", err
	}
	cols, err := columns(db, inSrc)
	if err != nil {
		return "", err
	}
	var exprs, names []string
	exprs = append(exprs, "count(*)")
	names = append(names, "rows")
	for _, c := range cols {
		v := quote(c.name)
		if strings.HasPrefix(c.typ, "TIMESTAMP") || c.typ == "DATE" {
			v = "epoch_us(" + v + ")"
		}
		exprs = append(exprs, fmt.Sprintf("count(%s)", v), fmt.Sprintf("sum(hash(%s)::HUGEINT)", v))
		names = append(names, c.name+" count", c.name+" hash-sum")
		switch c.typ {
		case "BIGINT", "INTEGER", "SMALLINT", "TINYINT":
			exprs = append(exprs, fmt.Sprintf("sum(%s)::HUGEINT", v))
			names = append(names, c.name+" sum")
		case "DOUBLE", "FLOAT":
			exprs = append(exprs, fmt.Sprintf("sum(%s::DECIMAL(38,4))", v)) // exact, whatever the summation order
			names = append(names, c.name+" sum")
		}
	}
	query := "SELECT " + strings.Join(exprs, ", ") + " FROM "
	results := map[string][]string{}
	for _, s := range []struct{ name, path string }{{"input", in}, {"ours", ours}, {"duckdb", duck}} {
		src, err := source(s.path)
		if err != nil {
			return "", err
		}
		vals, err := row(db, query+src, len(exprs))
		if err != nil {
			return "", fmt.Errorf("%s: %w", s.name, err)
		}
		results[s.name] = vals
	}
	var sb strings.Builder
	ok := true
	for i, n := range names {
		if results["ours"][i] != results["input"][i] || results["duckdb"][i] != results["input"][i] {
			ok = false
			fmt.Fprintf(&sb, "MISMATCH %s: input %s, ours %s, duckdb %s\n", n, results["input"][i], results["ours"][i], results["duckdb"][i])
		}
	}
	if !ok {
		return sb.String(), fmt.Errorf("outputs differ from the input:\n%s", sb.String())
	}
	fmt.Fprintf(&sb, "verified with DuckDB: both outputs match the input on %d aggregates (", len(names))
	for i, n := range names {
		if i == 0 || strings.HasSuffix(n, " sum") {
			if i > 0 {
				sb.WriteString(", ")
			}
			fmt.Fprintf(&sb, "%s %s", n, results["input"][i])
		}
	}
	sb.WriteString("; per-column count and hash-sum)")
	return sb.String(), nil
}

// source is a read_parquet expression over a file or a directory's .parquet files.
func source(path string) (string, error) {
	st, err := os.Stat(path)
	if err != nil {
		return "", err
	}
	if st.IsDir() {
		return "read_parquet('" + filepath.Join(path, "*.parquet") + "', hive_partitioning = false)", nil
	}
	return "read_parquet('" + path + "', hive_partitioning = false)", nil
}

type column struct{ name, typ string }

func columns(db *sql.DB, src string) ([]column, error) {
	rows, err := db.Query("DESCRIBE SELECT * FROM " + src)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	var out []column
	for rows.Next() {
		var name, typ string
		var null, key, def, extra sql.NullString
		if err := rows.Scan(&name, &typ, &null, &key, &def, &extra); err != nil {
			return nil, err
		}
		out = append(out, column{name, typ})
	}
	return out, rows.Err()
}

func row(db *sql.DB, query string, n int) ([]string, error) {
	vals := make([]any, n)
	ptrs := make([]any, n)
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	if err := db.QueryRow(query).Scan(ptrs...); err != nil {
		return nil, err
	}
	out := make([]string, n)
	for i, v := range vals {
		out[i] = fmt.Sprint(v)
	}
	return out, nil
}

func quote(name string) string { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
