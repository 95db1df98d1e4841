package duckcheck

import (
	"context"
	"fmt"
	"io"
	"log/slog"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/bench/internal/ducktest"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// ingestColumns are the columns DuckDB generates, with their DuckDB and Delta types. CSV cannot hold
// the nested ones.
var ingestColumns = []struct {
	name, duckType, expr string
	delta                types.DataType
	nested               bool
}{
	{"id", "BIGINT", "i", types.Primitive(types.TypeLong), false},
	{"grp", "BIGINT", "i % 4", types.Primitive(types.TypeLong), false},
	{"b", "BOOLEAN", "CASE WHEN i % 11 = 0 THEN NULL ELSE i % 3 = 0 END", types.Primitive(types.TypeBoolean), false},
	{"i8", "TINYINT", "(i % 250 - 125)::TINYINT", types.Primitive(types.TypeByte), false},
	{"i16", "SMALLINT", "(i % 60000 - 30000)::SMALLINT", types.Primitive(types.TypeShort), false},
	{"i32", "INTEGER", "(i * 7919 % 2000000000 - 1000000000)::INTEGER", types.Primitive(types.TypeInteger), false},
	{"f32", "FLOAT", "(i / 8)::FLOAT", types.Primitive(types.TypeFloat), false},
	{"f64", "DOUBLE", "CASE WHEN i % 13 = 0 THEN NULL ELSE (i * 1.25 - 999.5)::DOUBLE END", types.Primitive(types.TypeDouble), false},
	{"dec", "DECIMAL(18,6)", "(i * 1234.5678 - 1e6)::DECIMAL(18,6)", types.Decimal(18, 6), false},
	// DuckDB's JSON reader parses decimals through a double (123456789012.0123456789 reads back as
	// …012335104, where the worker keeps every digit), so the 38-digit column holds values a double
	// carries exactly.
	{"dec38", "DECIMAL(38,10)", "(i::DECIMAL(38,10) * 1024.0625 - 5e5)::DECIMAL(38,10)", types.Decimal(38, 10), false},
	{"s", "VARCHAR", "CASE WHEN i % 17 = 0 THEN NULL WHEN i % 5 = 0 THEN 'quote \"and, comma' || i ELSE 'é' || i END", types.Primitive(types.TypeString), false},
	{"d", "DATE", "DATE '1969-12-25' + (i % 1000)::INTEGER", types.Primitive(types.TypeDate), false},
	{"ts", "TIMESTAMP", "TIMESTAMP '2024-01-01' + to_microseconds(i * 1234567)", types.Primitive(types.TypeTimestamp), false},
	{"st", "STRUCT(x BIGINT, y VARCHAR)", "CASE WHEN i % 7 = 0 THEN NULL ELSE {'x': i, 'y': 'y' || i} END", &types.StructType{Fields: []*types.StructField{
		{Name: "x", Type: types.Primitive(types.TypeLong), Nullable: true}, {Name: "y", Type: types.Primitive(types.TypeString), Nullable: true}}}, true},
	{"arr", "BIGINT[]", "CASE WHEN i % 9 = 0 THEN [] ELSE [i, NULL, i + 1] END", &types.ArrayType{ElementType: types.Primitive(types.TypeLong), ContainsNull: true}, true},
}

// TestIngest_DuckDBReadsTheSameRowsFromTheTableAsFromTheSources writes sources with DuckDB (several
// files per format, compressed and not), ingests them with the worker, and has DuckDB compare the
// table's live Parquet files with the source files themselves, as multisets. The "flat" cases leave
// out the decimal and nested columns, so that CSV and JSON take the columnar path (into a
// partitioned table) and Parquet the column copy (into an unpartitioned one); the others take the
// row path.
func TestIngest_DuckDBReadsTheSameRowsFromTheTableAsFromTheSources(t *testing.T) {
	db := ducktest.Open(t)
	for _, tc := range []struct {
		format, copyOpts, ext string
		flat                  bool
	}{
		{"parquet", "FORMAT parquet", "parquet", false},
		{"json", "FORMAT json", "json", false},
		{"json", "FORMAT json, COMPRESSION gzip", "json.gz", false},
		{"csv", "FORMAT csv, HEADER", "csv", false},
		{"csv", "FORMAT csv, HEADER, COMPRESSION zstd", "csv.zst", false},
		{"parquet", "FORMAT parquet", "parquet", true},
		{"json", "FORMAT json", "json", true},
		{"csv", "FORMAT csv, HEADER", "csv", true},
	} {
		name := tc.ext
		if tc.flat {
			name += "-flat"
		}
		t.Run(name, func(t *testing.T) {
			dir := t.TempDir()
			src := filepath.Join(dir, "src")
			if err := os.MkdirAll(src, 0o755); err != nil {
				t.Fatal(err)
			}
			var cols, duckCols, colNames []string
			schema := &types.StructType{}
			for _, c := range ingestColumns {
				if c.nested && tc.format == "csv" {
					continue
				}
				if tc.flat && (c.nested || strings.HasPrefix(c.duckType, "DECIMAL")) {
					continue
				}
				cols = append(cols, c.expr+" AS "+c.name)
				duckCols = append(duckCols, fmt.Sprintf("'%s': '%s'", c.name, c.duckType))
				colNames = append(colNames, c.name)
				schema.Fields = append(schema.Fields, &types.StructField{Name: c.name, Type: c.delta, Nullable: true})
			}
			for f := range 4 {
				if _, err := db.Exec(fmt.Sprintf("COPY (SELECT %s FROM range(%d, %d) t(i)) TO '%s' (%s)", strings.Join(cols, ", "),
					f*2500, (f+1)*2500, filepath.Join(src, fmt.Sprintf("part-%d.%s", f, tc.ext)), tc.copyOpts)); err != nil {
					t.Fatal(err)
				}
			}
			store, err := storage.NewLocal(filepath.Join(dir, "table"))
			if err != nil {
				t.Fatal(err)
			}
			tbl := delta.NewTable(store)
			parts := []string{"grp"}
			if tc.flat && tc.format == "parquet" {
				parts = nil // the column copy takes unpartitioned tables
			}
			if _, err := tbl.Create(context.Background(), delta.CreateOptions{Schema: schema, PartitionColumns: parts}); err != nil {
				t.Fatal(err)
			}
			if tc.flat && tc.format == "parquet" {
				// DuckDB's files must be ones the column copy takes, or this case tests the row path.
				snap, err := tbl.Latest(context.Background())
				if err != nil {
					t.Fatal(err)
				}
				srcStore, err := storage.NewLocal(src)
				if err != nil {
					t.Fatal(err)
				}
				ra, err := srcStore.Open(context.Background(), "part-0.parquet")
				if err != nil {
					t.Fatal(err)
				}
				pf, err := parquetio.Open(context.Background(), ra)
				if err != nil {
					t.Fatal(err)
				}
				fits := table.CopyFits(snap, pf)
				ra.Close()
				if !fits {
					t.Fatal("DuckDB's Parquet file does not fit the table for the column copy")
				}
			}
			var kv map[string]string
			if tc.format == "csv" {
				kv = map[string]string{"header": "true", "escape": "\""}
			}
			fo, err := format.ParseOptions(tc.format, kv, "")
			if err != nil {
				t.Fatal(err)
			}
			rep, err := ingest.Run(context.Background(), tbl, ingest.Options{Source: src, Format: fo, AvailableNow: true, MaxFilesPerTrigger: 3,
				Logger: slog.New(slog.NewTextHandler(io.Discard, nil))})
			if err != nil {
				t.Fatal(err)
			}
			if len(rep.Batches) != 2 {
				t.Fatalf("%d batches, want 2", len(rep.Batches))
			}
			snap, err := tbl.Latest(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			var live []string
			for _, f := range snap.Files() {
				key, err := delta.ObjectKey(store.Location(), f.Path)
				if err != nil {
					t.Fatal(err)
				}
				live = append(live, "'"+filepath.Join(store.Root(), filepath.FromSlash(key))+"'")
			}
			sel := strings.Join(colNames, ", ")
			sel = strings.Replace(sel, "grp", "grp::BIGINT AS grp", 1)
			tableRows := fmt.Sprintf("(SELECT %s FROM read_parquet([%s], hive_partitioning = true))", sel, strings.Join(live, ","))
			glob := "'" + filepath.Join(src, "*."+tc.ext) + "'"
			var source string
			switch tc.format {
			case "parquet":
				source = "read_parquet(" + glob + ")"
			case "json":
				source = fmt.Sprintf("read_json(%s, format = 'newline_delimited', columns = {%s})", glob, strings.Join(duckCols, ", "))
			case "csv":
				source = fmt.Sprintf("read_csv(%s, header = true, columns = {%s})", glob, strings.Join(duckCols, ", "))
			}
			sourceRows := fmt.Sprintf("(SELECT %s FROM %s)", strings.Join(colNames, ", "), source)
			var nt, ns, missing, extra int64
			q := fmt.Sprintf(`SELECT (SELECT count(*) FROM %[1]s), (SELECT count(*) FROM %[2]s),
				(SELECT count(*) FROM (SELECT * FROM %[2]s EXCEPT ALL SELECT * FROM %[1]s)),
				(SELECT count(*) FROM (SELECT * FROM %[1]s EXCEPT ALL SELECT * FROM %[2]s))`, tableRows, sourceRows)
			if err := db.QueryRow(q).Scan(&nt, &ns, &missing, &extra); err != nil {
				t.Fatal(err)
			}
			if nt != 10000 || ns != 10000 || missing != 0 || extra != 0 {
				first := func(q string) string {
					rows, err := db.Query(q + " LIMIT 1")
					if err != nil {
						return err.Error()
					}
					defer rows.Close()
					cols, _ := rows.Columns()
					vals := make([]any, len(cols))
					ptrs := make([]any, len(cols))
					for i := range vals {
						ptrs[i] = &vals[i]
					}
					if !rows.Next() {
						return "none"
					}
					rows.Scan(ptrs...)
					return fmt.Sprint(vals...)
				}
				t.Errorf("a source row missing from the table: %s\nan extra row in the table: %s",
					first("SELECT * FROM "+sourceRows+" EXCEPT ALL SELECT * FROM "+tableRows), first("SELECT * FROM "+tableRows+" EXCEPT ALL SELECT * FROM "+sourceRows))
				t.Fatalf("table %d rows, source %d: %d source rows missing from the table, %d extra", nt, ns, missing, extra)
			}
		})
	}
}
