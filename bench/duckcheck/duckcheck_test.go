// Package duckcheck cross-checks the worker's Parquet layer against DuckDB, which lives in this
// separate module so that it never enters the main one.
package duckcheck

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"io"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/bench/internal/ducktest"

	"github.com/deltakeeper/deltakeeper/bench/internal/localfs"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

// duckRows reads a file with DuckDB as canonical rows, sorted.
func duckRows(db *sql.DB, path string) ([]string, error) {
	rows, err := db.Query("SELECT * FROM read_parquet('" + strings.ReplaceAll(path, "'", "''") + "', hive_partitioning = false)")
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	vals := make([]any, len(cols))
	ptrs := make([]any, len(cols))
	for i := range vals {
		ptrs[i] = &vals[i]
	}
	for rows.Next() {
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			parts[i] = canonDuck(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	sort.Strings(out)
	return out, rows.Err()
}

// ourRows reads a file with parquetio and the schema derived from the file, as canonical rows, sorted.
func ourRows(t *testing.T, r interface {
	io.ReaderAt
	io.Closer
	Size() int64
}) []string {
	f, err := parquetio.Open(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	schema, err := f.Schema()
	if err != nil {
		t.Fatal(err)
	}
	rr, err := f.Rows(context.Background(), schema, parquetio.ReadOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer rr.Close()
	var out []string
	for {
		b, err := rr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		for _, row := range b.Rows {
			out = append(out, canonRow(row, schema))
		}
	}
	sort.Strings(out)
	return out
}

func assertSameRows(t *testing.T, want, got []string) {
	t.Helper()
	if len(want) != len(got) {
		t.Fatalf("DuckDB read %d rows, parquetio %d", len(want), len(got))
	}
	for i := range want {
		if want[i] != got[i] {
			t.Fatalf("rows differ (sorted position %d):\n DuckDB    %s\n parquetio %s", i, want[i], got[i])
		}
	}
}

// TestReader_MatchesDuckDBOnEveryConformanceFile compares, for every .parquet of the conformance tables
// that DuckDB reads, the rows of parquetio (schema derived from the file) with DuckDB's, as multisets:
// timestamps as instants (INT96, millis, micros, nanos), decimals exactly, nested values structurally.
func TestReader_MatchesDuckDBOnEveryConformanceFile(t *testing.T) {
	root := testutil.ConformanceDir(t)
	db := ducktest.Open(t)
	var files []string
	filepath.WalkDir(root, func(p string, d os.DirEntry, err error) error {
		if err == nil && !d.IsDir() && strings.HasSuffix(p, ".parquet") {
			files = append(files, p)
		}
		return nil
	})
	if len(files) == 0 {
		t.Fatalf("no .parquet files under %s", root)
	}
	var compared int
	var duckFailed []string
	for _, p := range files {
		rel, _ := filepath.Rel(root, p)
		want, err := duckRows(db, p)
		if err != nil {
			duckFailed = append(duckFailed, rel+": "+err.Error())
			continue
		}
		t.Run(rel, func(t *testing.T) {
			r, err := localfs.Open(p)
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			assertSameRows(t, want, ourRows(t, r))
		})
		compared++
	}
	t.Logf("compared %d files with DuckDB; DuckDB could not read %d", compared, len(duckFailed))
	for _, f := range duckFailed {
		t.Logf("DuckDB failed: %s", f)
	}
	if compared < len(files)*9/10 {
		t.Fatalf("DuckDB read only %d of %d files; the comparison covers too little", compared, len(files))
	}
}

// bytesFile adapts written bytes to storage.ReaderAt.
type bytesFile struct{ *bytes.Reader }

func (bytesFile) Close() error { return nil }

func writeTemp(t *testing.T, data []byte) string {
	p := filepath.Join(t.TempDir(), "f.parquet")
	if err := os.WriteFile(p, data, 0o644); err != nil {
		t.Fatal(err)
	}
	return p
}

// TestWriter_FilesReadBackIdenticallyInDuckDB writes every Delta type (nulls, nesting, decimals at
// p=9/18/38, µs timestamps, negative dates, NaN) with parquetio's Writer and with Rewrite, and checks
// that DuckDB reads exactly the written rows.
func TestWriter_FilesReadBackIdenticallyInDuckDB(t *testing.T) {
	db := ducktest.Open(t)
	schema := allTypesSchema()
	rows := generateRows(schema, 1500, 11)
	var want []string
	for _, r := range rows {
		want = append(want, canonRow(r, schema))
	}
	sort.Strings(want)

	var buf memWriter
	w, err := parquetio.NewWriter(&buf, schema, parquetio.WriterOptions{PageBytes: 8 << 10})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	written := append([]byte(nil), buf.Bytes()...)

	var rewritten memWriter
	_, err = parquetio.Rewrite(context.Background(), []parquetio.RewriteInput{{File: bytesFile{bytes.NewReader(written)}}, {File: bytesFile{bytes.NewReader(written)}}},
		func(int) (storageWriter, error) { return &rewritten, nil }, parquetio.RewriteOptions{Schema: schema, Writer: parquetio.WriterOptions{Codec: "snappy", RowGroupBytes: 64 << 10}})
	if err != nil {
		t.Fatal(err)
	}
	wantTwice := append(append([]string(nil), want...), want...)
	sort.Strings(wantTwice)

	for _, tc := range []struct {
		name string
		data []byte
		want []string
	}{{"writer", written, want}, {"rewrite of two copies", rewritten.Bytes(), wantTwice}} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := duckRows(db, writeTemp(t, tc.data))
			if err != nil {
				t.Fatalf("DuckDB cannot read our file: %v", err)
			}
			assertSameRows(t, tc.want, got)
		})
	}
}
