package duckcheck

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
)

// The merge model's batches: rows of the model table's columns (k, k2, p, v, seq, del, and the columns that
// schema evolution added), generated in Go from a seeded source, loaded into DuckDB's table batch and written
// by DuckDB as the source file.

// keySpace bounds the key column k; k2 (the second key of composite-key scenarios) takes 0..2.
const keySpace = 100_000

type key struct{ k, k2 int64 }

type batchRow struct {
	k, k2 *int64 // nil: a null key
	p     int64
	v     string
	seq   int64
	del   bool
	extra map[string]string // values of evolved (or about to evolve) columns
}

// batchGen draws batches for one scenario.
type batchGen struct {
	rng       *rand.Rand
	composite bool // keys (k, k2) rather than k
	clustered bool // keys drawn from one narrow range (the table clustered on them) rather than anywhere
	parts     int64
	seq       int64  // the ordering column's next value: unique across the scenario, so "the last wins" is defined
	extraNew  string // a column the next batch brings that the table does not have yet
}

func ptr64(v int64) *int64 { return &v }

// existingKeys lists the distinct non-null keys of prev, sorted.
func existingKeys(t *testing.T, db *sql.DB, composite bool) []key {
	t.Helper()
	q := `SELECT DISTINCT k, 0 FROM prev WHERE k IS NOT NULL ORDER BY 1`
	if composite {
		q = `SELECT DISTINCT k, k2 FROM prev WHERE k IS NOT NULL AND k2 IS NOT NULL ORDER BY 1, 2`
	}
	rows, err := db.Query(q)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var out []key
	for rows.Next() {
		var k key
		if err := rows.Scan(&k.k, &k.k2); err != nil {
			t.Fatal(err)
		}
		out = append(out, k)
	}
	return out
}

// pickExisting takes n distinct keys of existing: a contiguous run of the sorted keys when clustered, else
// random ones.
func (g *batchGen) pickExisting(existing []key, n int) []key {
	n = min(n, len(existing))
	if n == 0 {
		return nil
	}
	if g.clustered {
		start := g.rng.IntN(len(existing) - n + 1)
		return slices.Clone(existing[start : start+n])
	}
	idx := g.rng.Perm(len(existing))[:n]
	out := make([]key, n)
	for i, j := range idx {
		out[i] = existing[j]
	}
	return out
}

// freshKeys draws n distinct keys that are in neither existing nor taken: from one window of the key space
// when clustered.
func (g *batchGen) freshKeys(existing []key, n int, taken map[key]bool) []key {
	have := map[key]bool{}
	for _, k := range existing {
		have[k] = true
	}
	lo, width := int64(0), int64(keySpace)
	if g.clustered {
		width = int64(max(40, 4*n))
		lo = g.rng.Int64N(keySpace - width)
	}
	var out []key
	for tries := 0; len(out) < n && tries < 100*n+100; tries++ {
		k := key{k: lo + g.rng.Int64N(width)}
		if g.composite {
			k.k2 = g.rng.Int64N(3)
		}
		if have[k] || taken[k] {
			continue
		}
		taken[k] = true
		out = append(out, k)
	}
	return out
}

// row builds one batch row for k (nil: a null key, in k or in k2).
func (g *batchGen) row(k *key, extras []string) batchRow {
	g.seq++
	r := batchRow{p: g.rng.Int64N(g.parts), v: fmt.Sprintf("v%d", g.rng.IntN(1_000_000)), seq: g.seq}
	switch {
	case k != nil:
		r.k = ptr64(k.k)
		r.k2 = ptr64(k.k2)
		if !g.composite {
			r.k2 = ptr64(g.rng.Int64N(3))
		}
	case g.composite && g.rng.IntN(2) == 0:
		r.k, r.k2 = ptr64(g.rng.Int64N(keySpace)), nil
	default:
		r.k, r.k2 = nil, ptr64(g.rng.Int64N(3))
	}
	if len(extras) > 0 {
		r.extra = map[string]string{}
		for _, c := range extras {
			if g.rng.IntN(4) > 0 {
				r.extra[c] = fmt.Sprintf("%s-%d", c, g.rng.IntN(1000))
			}
		}
	}
	return r
}

// shuffle puts the rows in random order, so that the file's order is not the ordering column's.
func (g *batchGen) shuffle(rows []batchRow) {
	g.rng.Shuffle(len(rows), func(i, j int) { rows[i], rows[j] = rows[j], rows[i] })
}

func sqlInt(p *int64) string {
	if p == nil {
		return "NULL"
	}
	return fmt.Sprint(*p)
}

func sqlStr(s string, ok bool) string {
	if !ok {
		return "NULL"
	}
	return "'" + strings.ReplaceAll(s, "'", "''") + "'"
}

// loadBatch replaces DuckDB's table batch with rows, over the columns cols (the base ones and extra ones).
func loadBatch(t *testing.T, db *sql.DB, cols []string, rows []batchRow) {
	t.Helper()
	var defs []string
	for _, c := range cols {
		defs = append(defs, fmt.Sprintf(`"%s" %s`, c, modelColumnType(c)))
	}
	if _, err := db.Exec("CREATE OR REPLACE TABLE batch (" + strings.Join(defs, ", ") + ")"); err != nil {
		t.Fatal(err)
	}
	var vals []string
	for _, r := range rows {
		var v []string
		for _, c := range cols {
			switch c {
			case "k":
				v = append(v, sqlInt(r.k))
			case "k2":
				v = append(v, sqlInt(r.k2))
			case "p":
				v = append(v, fmt.Sprint(r.p))
			case "v":
				v = append(v, sqlStr(r.v, true))
			case "seq":
				v = append(v, fmt.Sprint(r.seq))
			case "del":
				v = append(v, fmt.Sprint(r.del))
			default:
				s, ok := r.extra[c]
				v = append(v, sqlStr(s, ok))
			}
		}
		vals = append(vals, "("+strings.Join(v, ", ")+")")
	}
	if _, err := db.Exec("INSERT INTO batch VALUES " + strings.Join(vals, ", ")); err != nil {
		t.Fatal(err)
	}
}

// modelColumnType is a model column's DuckDB type: the base columns' own, VARCHAR for evolved ones.
func modelColumnType(c string) string {
	switch c {
	case "k", "k2", "p", "seq":
		return "BIGINT"
	case "v":
		return "VARCHAR"
	case "del":
		return "BOOLEAN"
	}
	return "VARCHAR"
}

// baseFormat is the merge's --format of a model format: parquet-rg (small row groups) and
// parquet-zstd (zstd, the codec the table's writer uses: an upsert copies such a file's pages) are
// Parquet.
func baseFormat(format string) string {
	base, _, _ := strings.Cut(format, "-")
	return base
}

// writeBatch has DuckDB write table batch to path in format, returning the merge's --format and --option
// flags for it.
func writeBatch(t *testing.T, db *sql.DB, path, format string) []string {
	t.Helper()
	opts := map[string]string{"parquet": "FORMAT parquet", "json": "FORMAT json", "csv": "FORMAT csv, HEADER",
		"parquet-rg": "FORMAT parquet, ROW_GROUP_SIZE 2048", "parquet-zstd": "FORMAT parquet, COMPRESSION zstd"}[format]
	format = baseFormat(format)
	if _, err := db.Exec(fmt.Sprintf("COPY batch TO '%s' (%s)", path, opts)); err != nil {
		t.Fatal(err)
	}
	flags := []string{"--source", path, "--format", format}
	if format == "csv" {
		flags = append(flags, "--option", "header=true")
	}
	return flags
}
