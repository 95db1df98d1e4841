package duckcheck

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// The merge model's steps: which merge runs next, drawn from the scenario's generator, and the checks of one
// version's rows.

var modelFormats = []string{"parquet", "parquet-zstd", "json", "csv"}

// runStep draws one step: mostly upserts, then the other modes, failing merges, schema evolution and an
// occasional OPTIMIZE (which clusters a clustered table) between them.
func (m *model) runStep() {
	m.setPrev()
	g := m.gen
	existing := existingKeys(m.t, m.db, m.sc.composite)
	format := modelFormats[g.rng.IntN(len(modelFormats))]
	keyed := func(mode string) mergeSpec { return mergeSpec{mode: mode, keys: m.keys} }
	switch r := g.rng.IntN(100); {
	case r < 6:
		m.optimize()
	case r < 10:
		m.deleteWhere(existing)
	case r < 42: // upsert: delete markers, null keys, duplicates resolved by the ordering column
		spec := keyed("upsert")
		orderBy, deletes := g.rng.IntN(5) < 2, g.rng.IntN(2) == 0
		if orderBy {
			spec.orderBy = "seq"
		}
		if deletes {
			spec.deleteColumn = "del"
		}
		spec.pruned = m.sc.partitioned && g.rng.IntN(3) == 0
		rows := m.keyedRows(m.gen.pickExisting(existing, 2+g.rng.IntN(25)), m.gen.freshKeys(existing, g.rng.IntN(20), map[key]bool{}), orderBy, !orderBy, deletes)
		m.merge(spec, rows, nil, format, "")
	case r < 50:
		spec := keyed("update") // a true delete marker deletes the match
		orderBy, deletes := g.rng.IntN(2) == 0, g.rng.IntN(3) == 0
		if orderBy {
			spec.orderBy = "seq"
		}
		if deletes {
			spec.deleteColumn = "del"
		}
		rows := m.keyedRows(m.gen.pickExisting(existing, 2+g.rng.IntN(20)), m.gen.freshKeys(existing, g.rng.IntN(6), map[key]bool{}), orderBy, !orderBy, deletes)
		m.merge(spec, rows, nil, format, "")
	case r < 60:
		rows := m.keyedRows(m.gen.pickExisting(existing, 1+g.rng.IntN(15)), m.gen.freshKeys(existing, g.rng.IntN(5), map[key]bool{}), false, true, false)
		m.merge(keyed("delete"), rows, nil, format, "")
	case r < 67: // append, sometimes repeating a key the table already holds
		rows := m.keyedRows(nil, m.gen.freshKeys(existing, 5+g.rng.IntN(30), map[key]bool{}), false, true, false)
		if extra := m.gen.pickExisting(existing, 1); len(extra) > 0 && g.rng.IntN(3) == 0 {
			rows = append(rows, g.row(&extra[0], m.evolvedColumns()))
		}
		m.merge(mergeSpec{mode: "append"}, rows, nil, format, "")
	case r < 74: // a target row matched by two source rows, no ordering column: refused
		rows := m.keyedRows(m.gen.pickExisting(existing, 1+g.rng.IntN(10)), m.gen.freshKeys(existing, g.rng.IntN(5), map[key]bool{}), false, false, false)
		if dup := m.gen.pickExisting(existing, 1); len(dup) > 0 {
			rows = append(rows, g.row(&dup[0], m.evolvedColumns()), g.row(&dup[0], m.evolvedColumns()))
			g.shuffle(rows)
		}
		mode := []string{"upsert", "update"}[g.rng.IntN(2)]
		m.merge(keyed(mode), rows, nil, format, "")
	case r < 84: // an upsert whose batch brings a new column
		m.evolved++
		col := fmt.Sprintf("x%d", m.evolved)
		evolution := []string{"addNewColumns", "addNewColumns", "failOnNewColumns", "", "none"}[g.rng.IntN(5)]
		m.gen.extraNew = col
		rows := m.keyedRows(m.gen.pickExisting(existing, 2+g.rng.IntN(10)), m.gen.freshKeys(existing, 1+g.rng.IntN(10), map[key]bool{}), false, false, false)
		m.gen.extraNew = ""
		m.merge(keyed("upsert"), rows, []string{col}, format, evolution)
	case r < 92 && m.sc.partitioned: // dynamic partition overwrite of one or two partitions
		parts := []int64{g.rng.Int64N(m.gen.parts)}
		if g.rng.IntN(2) == 0 {
			parts = append(parts, (parts[0]+1)%m.gen.parts)
		}
		deletes := g.rng.IntN(3) == 0
		rows := m.keyedRows(m.gen.pickExisting(existing, g.rng.IntN(10)), m.gen.freshKeys(existing, 1+g.rng.IntN(30), map[key]bool{}), false, false, deletes)
		for i := range rows {
			rows[i].p = parts[i%len(parts)]
		}
		spec := mergeSpec{mode: "overwrite", scope: "partitions"}
		if deletes {
			spec.deleteColumn = "del"
		}
		m.merge(spec, rows, nil, format, "")
	case r < 96:
		rows := m.keyedRows(nil, m.gen.freshKeys(nil, 50+g.rng.IntN(100), map[key]bool{}), false, true, false)
		m.merge(mergeSpec{mode: "overwrite", scope: "table"}, rows, nil, format, "")
	default:
		deletes := g.rng.IntN(3) == 0
		rows := m.keyedRows(nil, m.gen.freshKeys(nil, 50+g.rng.IntN(100), map[key]bool{}), false, false, deletes)
		spec := mergeSpec{mode: "truncateinsert"}
		if deletes {
			spec.deleteColumn = "del"
		}
		m.merge(spec, rows, nil, format, "")
	}
}

// evolvedColumns are the table's columns that schema evolution added.
func (m *model) evolvedColumns() []string { return m.cols[len(baseModelColumns):] }

// keyedRows builds a batch over the keys given: one row per key, or with dups 2–3 rows for about a third of
// them (only ever merged with an ordering column); nulls adds rows with a null key; deletes marks about a
// fifth of the rows for deletion.
func (m *model) keyedRows(existing, fresh []key, dups, nulls, deletes bool) []batchRow {
	g := m.gen
	extras := m.evolvedColumns()
	if g.extraNew != "" {
		extras = append(append([]string(nil), extras...), g.extraNew)
	}
	var rows []batchRow
	for _, k := range append(existing, fresh...) {
		n := 1
		if dups && g.rng.IntN(3) == 0 {
			n = 2 + g.rng.IntN(2)
		}
		for range n {
			rows = append(rows, g.row(&k, extras))
		}
	}
	if nulls {
		for range g.rng.IntN(3) {
			rows = append(rows, g.row(nil, extras))
		}
	}
	if deletes {
		for i := range rows {
			rows[i].del = g.rng.IntN(5) == 0
		}
	}
	if len(rows) == 0 {
		rows = append(rows, g.row(nil, extras))
	}
	g.shuffle(rows)
	return rows
}

// deleteWhere runs `deltakeeper delete --where` with a key range, a partition value or a null test; the
// model keeps the rows for which the predicate is not true (SQL's three-valued logic: NULL keeps the row).
func (m *model) deleteWhere(existing []key) {
	g := m.gen
	var pred string
	switch r := g.rng.IntN(10); {
	case r < 5 && len(existing) > 0:
		lo := existing[g.rng.IntN(len(existing))].k
		pred = fmt.Sprintf("k >= %d AND k < %d", lo, lo+1+g.rng.Int64N(2000))
	case r < 8:
		pred = fmt.Sprintf("p = %d", g.rng.Int64N(g.parts))
	case r < 9:
		pred = "k IS NULL"
	default: // worker/expr joins conditions with AND only
		var in []string
		for _, k := range m.gen.pickExisting(existing, 1+g.rng.IntN(8)) {
			in = append(in, fmt.Sprint(k.k))
		}
		in = append(in, fmt.Sprint(g.rng.Int64N(keySpace)))
		pred = fmt.Sprintf("k IN (%s) AND k2 != %d AND p <= 2", strings.Join(in, ", "), g.rng.Int64N(3))
	}
	before := m.versions[len(m.versions)-1]
	run := runCLI(m.t, "delete", m.dir, "--where", pred, "-o", "json")
	if run.code != result.ExitSucceeded && run.code != result.ExitNothingToDo {
		m.fatalf("delete failed:\n%s", run)
	}
	m.exec(fmt.Sprintf("CREATE OR REPLACE TABLE next AS SELECT * FROM prev WHERE NOT coalesce((%s), false)", pred))
	kept := m.count("SELECT count(*) FROM next")
	m.settle(run, before, rowIDChange{unchanged: kept, deleted: m.count("SELECT count(*) FROM prev") - kept})
}

// optimize runs OPTIMIZE (clustering a clustered table); the rows stay what they were.
func (m *model) optimize() {
	m.counts.optimizes.Add(1)
	before := m.versions[len(m.versions)-1]
	run := runCLI(m.t, "optimize", m.dir, "-o", "json")
	if run.code != result.ExitSucceeded && run.code != result.ExitNothingToDo {
		m.fatalf("optimize failed:\n%s", run)
	}
	if v := m.latest(); v != before {
		m.recordVersion(v)
		m.checkVersion(v, true)
		m.checkRowIDs(v, rowIDChange{unchanged: m.count("SELECT count(*) FROM prev")})
	}
}

// checkTimeTravel reads every version whose rows the model knows again, through `scan --version`.
func (m *model) checkTimeTravel() {
	for _, v := range m.versions {
		m.checkVersion(v, false)
		m.counts.timeTravel.Add(1)
	}
}

// checkVersion compares version v as `deltakeeper scan` reads it with table exp_<v>; with direct, and no
// live file of v carrying a DV, DuckDB's own read of the live Parquet files too.
func (m *model) checkVersion(v delta.Version, direct bool) {
	m.t.Helper()
	want := fmt.Sprintf("exp_%d", v)
	cols := m.tableColumns(want)
	out := filepath.Join(m.batches, fmt.Sprintf("scan-v%d-%d.parquet", v, m.batchFile))
	run := runCLI(m.t, "scan", m.dir, "--version", fmt.Sprint(v), "--format", "parquet", "--out", out, "-o", "json")
	if run.code != 0 {
		m.fatalf("scan of version %d failed:\n%s", v, run)
	}
	if _, err := os.Stat(out); err != nil {
		m.fatalf("scan of version %d wrote no file: %v\n%s", v, err, run)
	}
	m.compare(fmt.Sprintf("version %d as scan reads it", v), fmt.Sprintf("SELECT %s FROM read_parquet('%s')", quoteIdents(cols, ""), out), want, cols)
	os.Remove(out)
	if !direct {
		return
	}
	snap, err := delta.NewTable(m.store).At(context.Background(), v)
	if err != nil {
		m.fatalf("loading version %d: %v", v, err)
	}
	var files []string
	for _, f := range snap.Files() {
		if f.DeletionVector != nil {
			m.counts.dvVersions.Add(1)
			return
		}
		key, err := delta.ObjectKey(snap.Table().Location(), f.Path)
		if err != nil {
			m.fatalf("%v", err)
		}
		files = append(files, "'"+filepath.Join(m.dir, filepath.FromSlash(key))+"'")
	}
	if len(files) == 0 {
		if n := m.count("SELECT count(*) FROM " + want); n != 0 {
			m.fatalf("version %d has no live file, the model %d rows", v, n)
		}
		return
	}
	src := fmt.Sprintf("read_parquet([%s], hive_partitioning = %t, union_by_name = true)", strings.Join(files, ", "), m.sc.partitioned)
	have := map[string]bool{}
	for _, c := range m.tableColumns("(SELECT * FROM " + src + ")") {
		have[c] = true
	}
	sel := make([]string, len(cols))
	for i, c := range cols {
		switch {
		case !have[c]:
			sel[i] = fmt.Sprintf(`NULL::%s AS "%s"`, modelColumnType(c), c)
		default:
			sel[i] = fmt.Sprintf(`"%s"::%s AS "%s"`, c, modelColumnType(c), c)
		}
	}
	m.compare(fmt.Sprintf("version %d's live files as DuckDB reads them", v), fmt.Sprintf("SELECT %s FROM %s", strings.Join(sel, ", "), src), want, cols)
}

// tableColumns lists the columns of a DuckDB relation.
func (m *model) tableColumns(rel string) []string {
	rows, err := m.db.Query("SELECT column_name FROM (DESCRIBE " + rel + ")")
	if err != nil {
		m.fatalf("DuckDB: %v", err)
	}
	defer rows.Close()
	var cols []string
	for rows.Next() {
		var c string
		if err := rows.Scan(&c); err != nil {
			m.fatalf("DuckDB: %v", err)
		}
		cols = append(cols, c)
	}
	return cols
}

// compare checks that the rows of query got equal those of table want, as multisets over cols.
func (m *model) compare(what, got, want string, cols []string) {
	m.t.Helper()
	wantRows := fmt.Sprintf("SELECT %s FROM %s", quoteIdents(cols, ""), want)
	missing := m.count(fmt.Sprintf("SELECT count(*) FROM (%s EXCEPT ALL %s)", wantRows, got))
	extra := m.count(fmt.Sprintf("SELECT count(*) FROM (%s EXCEPT ALL %s)", got, wantRows))
	if missing == 0 && extra == 0 {
		return
	}
	sample := func(q string) string {
		rows, err := m.db.Query(q + " LIMIT 3")
		if err != nil {
			return err.Error()
		}
		defer rows.Close()
		var out []string
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		for rows.Next() {
			rows.Scan(ptrs...)
			parts := make([]string, len(cols))
			for i, v := range vals {
				parts[i] = cols[i] + "=" + canonDuck(v)
			}
			out = append(out, strings.Join(parts, " "))
		}
		return strings.Join(out, "\n   ")
	}
	m.fatalf("%s: %d rows of the model missing, %d rows not in the model (model %d rows, table %d)\n missing: %s\n extra:   %s",
		what, missing, extra, m.count("SELECT count(*) FROM "+want), m.count(fmt.Sprintf("SELECT count(*) FROM (%s)", got)),
		sample(fmt.Sprintf("(%s) EXCEPT ALL (%s)", wantRows, got)), sample(fmt.Sprintf("(%s) EXCEPT ALL (%s)", got, wantRows)))
}
