package merge

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// fixture is a table and a source directory on local disk.
type fixture struct {
	t   *testing.T
	dir string
	tbl *delta.Table
	n   int // source files written
}

var (
	tLong   = types.Primitive(types.TypeLong)
	tString = types.Primitive(types.TypeString)
)

// baseSchema is id long, name string, v long, p string.
func baseSchema() *types.StructType {
	return &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: tLong, Nullable: true},
		{Name: "name", Type: tString, Nullable: true},
		{Name: "v", Type: tLong, Nullable: true},
		{Name: "p", Type: tString, Nullable: true},
	}}
}

func newFixture(t *testing.T, parts []string, props map[string]string) *fixture {
	t.Helper()
	dir := t.TempDir()
	store, err := storage.NewLocal(filepath.Join(dir, "table"))
	if err != nil {
		t.Fatal(err)
	}
	tbl, _, err := tabletest.Create(t.Context(), store, baseSchema(), parts, "", props)
	if err != nil {
		t.Fatal(err)
	}
	return &fixture{t: t, dir: dir, tbl: tbl}
}

func (fx *fixture) latest() *delta.Snapshot {
	fx.t.Helper()
	snap, err := fx.tbl.Latest(fx.t.Context())
	if err != nil {
		fx.t.Fatal(err)
	}
	return snap
}

// appendFile commits one file of rows (id, name, v, p).
func (fx *fixture) appendFile(rows ...types.Struct) {
	fx.t.Helper()
	if _, err := table.Append(fx.t.Context(), fx.latest(), rows, table.WriteOptions{}); err != nil {
		fx.t.Fatal(err)
	}
}

// row builds a target row: id, name "n<id>", v, p.
func row(id int64, v int64, p string) types.Struct {
	return types.Struct{id, fmt.Sprintf("n%d", id), v, p}
}

// source writes a JSON-lines batch into a fresh directory and returns it as a Batch.
func (fx *fixture) source(lines ...string) Batch {
	fx.t.Helper()
	fx.n++
	dir := filepath.Join(fx.dir, fmt.Sprintf("src%d", fx.n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fx.t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "batch.json"), []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		fx.t.Fatal(err)
	}
	b, err := ListBatch(fx.t.Context(), dir, storage.Config{})
	if err != nil {
		fx.t.Fatal(err)
	}
	return b
}

func jsonOptions(t *testing.T, evo format.Evolution) format.Options {
	t.Helper()
	o, err := format.ParseOptions("json", nil, evo)
	if err != nil {
		t.Fatal(err)
	}
	return o
}

// merge runs a merge of b into the table and fails the test on error.
func (fx *fixture) merge(b Batch, o Options) *Report {
	fx.t.Helper()
	rep, err := fx.tryMerge(b, o)
	if err != nil {
		fx.t.Fatalf("merge: %v", err)
	}
	return rep
}

type Report = result.Merge

func (fx *fixture) tryMerge(b Batch, o Options) (*Report, error) {
	if o.Format.Format == "" {
		o.Format = jsonOptions(fx.t, o.Format.Evolution)
	}
	rep, err := Run(context.Background(), fx.tbl, b, o)
	return rep, err
}

// rows returns the table's rows canonically rendered and sorted.
func (fx *fixture) rows() []string {
	fx.t.Helper()
	rows, err := tabletest.SortedRows(fx.t.Context(), fx.latest())
	if err != nil {
		fx.t.Fatal(err)
	}
	return rows
}

// want renders expected rows the way rows does.
func want(rows ...types.Struct) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = table.CanonicalRow(r)
	}
	slices.Sort(out)
	return out
}

func (fx *fixture) expectRows(rows ...types.Struct) {
	fx.t.Helper()
	got, exp := fx.rows(), want(rows...)
	if !slices.Equal(got, exp) {
		fx.t.Fatalf("table rows\n got %s\nwant %s", strings.Join(got, "\n     "), strings.Join(exp, "\n     "))
	}
}

// writeParquet writes rows as one Parquet file at path with the project's writer.
func writeParquet(t *testing.T, path string, schema *types.StructType, opts parquetio.WriterOptions, rows []types.Struct) {
	t.Helper()
	fh, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	w, err := parquetio.NewWriter(fh, schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if err := fh.Close(); err != nil {
		t.Fatal(err)
	}
}
