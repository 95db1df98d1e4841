package ingest

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

func gz(s string) string {
	var b bytes.Buffer
	w := gzip.NewWriter(&b)
	_, _ = w.Write([]byte(s)) // into a bytes.Buffer: cannot fail
	w.Close()
	return b.String()
}

// parquetFile renders rows as a Parquet file of schema.
func parquetFile(t *testing.T, schema *types.StructType, rows ...types.Struct) string {
	t.Helper()
	var b bytes.Buffer
	w, err := parquetio.NewWriter(&b, schema, parquetio.WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.Write(rows); err != nil {
		t.Fatal(err)
	}
	if _, err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}

func longCol(name string) *types.StructField {
	return &types.StructField{Name: name, Type: types.Primitive(types.TypeLong), Nullable: true}
}

func TestRun_BadInputNamesFileRowAndColumnCommitsNothingAndResumesWhenFixed(t *testing.T) {
	longID := &types.StructType{Fields: []*types.StructField{longCol("id")}}
	stringID := &types.StructType{Fields: []*types.StructField{{Name: "id", Type: types.Primitive(types.TypeString), Nullable: true}}}
	for _, tc := range []struct {
		name, format string
		opts         map[string]string
		good         string // a good file ingested first (creates the table), "" for none
		key, bad     string
		fixed        string // the content that fixes the input ("" deletes the file)
		row          int64
		column, msg  string
	}{
		{name: "corrupt parquet", format: format.Parquet, key: "b.parquet", bad: "PAR1 this is not parquet PAR1", msg: "not a readable Parquet file"},
		{name: "truncated parquet", format: format.Parquet, key: "b.parquet", msg: "", row: 0},
		{name: "truncated gzip", format: format.JSON, good: `{"id":1}`, key: "b.json.gz", fixed: gz(`{"id":2}`), msg: "truncated"},
		{name: "csv with a wrong column count", format: format.CSV, opts: map[string]string{"header": "true"}, good: "id,s\n1,a\n", key: "b.csv", bad: "id,s\n2,b\n3,c,extra\n", fixed: "id,s\n3,c\n", row: 2, msg: "3 fields but the header has 2"},
		{name: "json syntax error", format: format.JSON, good: `{"id":1}`, key: "b.json", bad: `{"id":2}` + "\n" + `{"id":3,}` + "\n", fixed: `{"id":3}`, row: 2, msg: "invalid JSON"},
		{name: "type mismatch", format: format.JSON, good: `{"id":1}`, key: "b.json", bad: `{"id":2}` + "\n\n" + `{"id":"three"}`, fixed: `{"id":3}`, row: 2, column: "id", msg: `cannot convert "three" to long`},
		{name: "non-UTF-8 text", format: format.CSV, opts: map[string]string{"header": "true"}, good: "id,s\n1,a\n", key: "b.csv", bad: "id,s\n2,b\xff\xfe\n", fixed: "id,s\n2,b\n", row: 1, column: "s", msg: "not valid UTF-8"},
		{name: "empty file", format: format.JSON, good: `{"id":1}`, key: "b.json", bad: "", fixed: `{"id":2}`, msg: "empty"},
		{name: "header-only csv", format: format.CSV, opts: map[string]string{"header": "true"}, good: "id\n1\n", key: "b.csv", bad: "id\n", fixed: "id\n2\n", msg: "header but no rows"},
		{name: "decimal that needs rounding", format: format.CSV, opts: map[string]string{"header": "true"}, key: "b.csv", msg: "digits after the point"},
		{name: "schema conflict", format: format.Parquet, key: "b.parquet", msg: "do not fit the table's schema"},
		{name: "new columns under failOnNewColumns", format: format.JSON, good: `{"id":1}`, key: "b.json", bad: `{"id":2,"extra":true,"more":"x"}`, fixed: `{"id":2}`, msg: "extra boolean, more string"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			fx := newFixture(t)
			o := fx.options(tc.format, tc.opts, "")
			o.AvailableNow = true
			switch tc.name {
			case "corrupt parquet":
				tc.good = parquetFile(t, longID, types.Struct{int64(1)})
				tc.fixed = parquetFile(t, longID, types.Struct{int64(2)})
			case "truncated parquet":
				tc.good = parquetFile(t, longID, types.Struct{int64(1)})
				full := parquetFile(t, longID, types.Struct{int64(2)})
				tc.bad, tc.fixed, tc.msg = full[:len(full)-20], full, "not a readable Parquet file"
			case "truncated gzip":
				g := gz(strings.Repeat(`{"id":2}`+"\n", 5000))
				tc.bad = g[:len(g)/2]
			case "schema conflict":
				tc.good = parquetFile(t, longID, types.Struct{int64(1)})
				tc.bad = parquetFile(t, stringID, types.Struct{"two"})
				tc.fixed = parquetFile(t, longID, types.Struct{int64(2)})
			case "decimal that needs rounding":
				// The table exists with a decimal(5,2) column.
				schema := &types.StructType{Fields: []*types.StructField{longCol("id"), {Name: "amount", Type: types.Decimal(5, 2), Nullable: true}}}
				if _, err := fx.tbl.Create(context.Background(), delta.CreateOptions{Schema: schema}); err != nil {
					t.Fatal(err)
				}
				tc.good = "id,amount\n1,1.25\n"
				tc.bad, tc.fixed, tc.row, tc.column = "id,amount\n2,3.14159\n", "id,amount\n2,3.14\n", 1, "amount"
			}
			fx.put("a."+tc.format, tc.good)
			fx.run(o)
			before := fx.snapshot().Version()
			fx.put(tc.key, tc.bad)
			_, err := Run(context.Background(), fx.tbl, o)
			if err == nil {
				t.Fatalf("the bad input was accepted")
			}
			var re *result.Error
			if !errors.As(err, &re) || re.Outcome != result.Refused {
				t.Errorf("error %v is not a refusal", err)
			}
			if !strings.Contains(err.Error(), filepath.Join(fx.src, tc.key)) {
				t.Errorf("error %q does not name the file %s", err, tc.key)
			}
			if tc.msg != "" && !strings.Contains(err.Error(), tc.msg) {
				t.Errorf("error %q does not say %q", err, tc.msg)
			}
			var fe *format.Error
			if tc.row > 0 || tc.column != "" {
				if !errors.As(err, &fe) {
					t.Fatalf("error %v carries no file, row and column", err)
				}
				if fe.Row != tc.row || fe.Column != tc.column {
					t.Errorf("error at row %d column %q, want row %d column %q", fe.Row, fe.Column, tc.row, tc.column)
				}
			}
			if v := fx.snapshot().Version(); v != before {
				t.Fatalf("the failed batch committed version %d", v)
			}
			// Fixed in place, the file is no longer the version the stored plan names, and the plan is
			// never changed: the batch says so until onBadFile=skip moves past the old version; with
			// allowOverwrites the fixed version is then taken by the next batch.
			fx.put(tc.key, tc.fixed)
			if _, err := Run(context.Background(), fx.tbl, o); err == nil || !strings.Contains(err.Error(), "changed after it was planned") {
				t.Fatalf("rerun after the fix: %v, want the changed file named", err)
			}
			o.OnBadFile = BadFileSkip
			o.AllowOverwrites = true
			rep := fx.run(o)
			if len(rep.Batches) == 0 {
				t.Fatalf("the stream did not resume")
			}
			if got := len(fx.rows("id")); got != 2 {
				t.Errorf("%d rows after the fix, want 2", got)
			}
		})
	}
}

func TestRun_MissingSourceDirectoryIsRefused(t *testing.T) {
	fx := newFixture(t)
	o := fx.options(format.JSON, nil, "")
	o.Source = filepath.Join(fx.src, "nope")
	_, err := Run(context.Background(), fx.tbl, o)
	if err == nil || !strings.Contains(err.Error(), "does not exist") || !strings.Contains(err.Error(), "nope") {
		t.Fatalf("err = %v, want a refusal naming the missing directory", err)
	}
}

func TestRun_FileDeletedAfterListingFailsThenSkipRecordsIt(t *testing.T) {
	fx := newFixture(t)
	fx.put("a.json", `{"id":1}`)
	fx.put("b.json", `{"id":2}`)
	o := fx.options(format.JSON, nil, "")
	o.AvailableNow = true
	CrashHook = func(p string) {
		if p == "planned" {
			os.Remove(filepath.Join(fx.src, "b.json"))
		}
	}
	_, err := Run(context.Background(), fx.tbl, o)
	CrashHook = nil
	if err == nil || !strings.Contains(err.Error(), "deleted after it was listed") || !strings.Contains(err.Error(), "b.json") {
		t.Fatalf("err = %v, want the deleted file named", err)
	}
	if _, err := fx.tbl.Latest(context.Background()); err == nil {
		if rows := fx.rows("id"); len(rows) != 0 {
			t.Fatalf("rows %v were committed by a failed batch", rows)
		}
	}
	o.OnBadFile = BadFileSkip
	rep := fx.run(o)
	if len(rep.Batches) != 1 || len(rep.Batches[0].Skipped) != 1 || !strings.Contains(rep.Batches[0].Skipped[0].Key, "b.json") {
		t.Fatalf("batches %+v, want one batch skipping b.json", rep.Batches)
	}
	if rows := fx.rows("id"); len(rows) != 1 || rows[0] != "id=1" {
		t.Fatalf("rows %v", rows)
	}
}
