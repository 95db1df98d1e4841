package cli

import (
	"bufio"
	"bytes"
	"context"
	"encoding/csv"
	"encoding/json"
	"errors"
	"path/filepath"
	"strconv"
	"strings"
	"testing"

	"github.com/spf13/cobra"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
)

// execute runs one table command as the CLI would and returns stdout, stderr and the exit code.
func execute(t *testing.T, newCmd func(Mode) *cobra.Command, args ...string) (string, string, int) {
	t.Helper()
	cmd := newCmd(Interactive)
	var stdout, stderr bytes.Buffer
	cmd.SetOut(&stdout)
	cmd.SetErr(&stderr)
	cmd.SetArgs(args)
	cmd.SilenceUsage, cmd.SilenceErrors = true, true
	err := cmd.ExecuteContext(t.Context())
	code := 0
	var ec interface{ ExitCode() int }
	if errors.As(err, &ec) {
		code = ec.ExitCode()
	} else if err != nil {
		t.Fatalf("%v: %v", args, err)
	}
	return stdout.String(), stderr.String(), code
}

func decodeResult(t *testing.T, s string) *result.Result {
	t.Helper()
	r, err := result.Decode([]byte(strings.TrimSpace(s)))
	if err != nil {
		t.Fatalf("result %q: %v", s, err)
	}
	return r
}

func demoTable(t *testing.T, location string, files, rows int, extra ...string) {
	t.Helper()
	args := append([]string{location, "--files", strconv.Itoa(files), "--rows-per-file", strconv.Itoa(rows)}, extra...)
	if _, errOut, code := execute(t, newDemoDataCmd, args...); code != 0 {
		t.Fatalf("demo-data exited %d: %s", code, errOut)
	}
}

func TestInspect_ReportsTableFactsAsJSON(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 6, 500, "--partitioned")
	out, _, code := execute(t, newInspectCmd, loc, "-o", "json")
	if code != 0 {
		t.Fatalf("exit %d", code)
	}
	r := decodeResult(t, out)
	if r.Outcome != result.Succeeded || r.Table == nil || *r.Version != 6 {
		t.Fatalf("result %+v", r)
	}
	tb := r.Table
	if tb.NumFiles != 6 || tb.NumSmallFiles != 6 || tb.SmallFileThreshold != 64<<20 || strings.Join(tb.PartitionColumns, ",") != "order_date" {
		t.Errorf("table facts %+v", tb)
	}
	text, _, _ := execute(t, newInspectCmd, loc)
	for _, want := range []string{"Version          6", "order_date: date NOT NULL", "Partitioned by   order_date", "Small files      6 below 64.0 MiB", "< 1.0 MiB"} {
		if !strings.Contains(text, want) {
			t.Errorf("text report lacks %q:\n%s", want, text)
		}
	}
}

func TestInspect_AppliesTheDeclarationOnceAndReportsIt(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 2, 100)
	args := []string{loc, "-o", "json", "--set-property", "delta.targetFileSize=32mb", "--cluster-by", "region,order_ts", "--quality"}
	out, _, code := execute(t, newInspectCmd, args...)
	if code != 0 {
		t.Fatalf("exit %d: %s", code, out)
	}
	r := decodeResult(t, out)
	if r.Applied == nil || r.Applied.Version == nil || *r.Applied.Version != 3 || strings.Join(r.Table.ClusteringColumns, ",") != "region,order_ts" {
		t.Fatalf("first run: applied %+v table %+v", r.Applied, r.Table)
	}
	if r.Table.SmallFileThreshold != 16<<20 || len(r.Table.Quality) != 2 || r.Table.UnclusteredBytes == 0 {
		t.Errorf("facts after apply: %+v", r.Table)
	}
	out, _, _ = execute(t, newInspectCmd, args...)
	if r := decodeResult(t, out); r.Applied == nil || r.Applied.Version != nil || *r.Version != 3 {
		t.Errorf("second run committed: %+v", r.Applied)
	}
	_, errOut, code := execute(t, newInspectCmd, loc, "--cluster-by", "quantity,note,status,region,order_id")
	if code != 2 || !strings.Contains(errOut, "1 to 4") {
		t.Errorf("5 columns: exit %d, %s", code, errOut)
	}
}

func TestInspect_RefusesAMissingTable(t *testing.T) {
	out, _, code := execute(t, newInspectCmd, t.TempDir(), "-o", "json")
	r := decodeResult(t, out)
	if code != 2 || r.Reason != result.ReasonTableNotFound {
		t.Errorf("exit %d, result %+v", code, r)
	}
}

func scanJSONL(t *testing.T, args ...string) ([]map[string]any, string) {
	t.Helper()
	out, errOut, code := execute(t, newScanCmd, args...)
	if code != 0 {
		t.Fatalf("scan %v exited %d: %s", args, code, errOut)
	}
	var rows []map[string]any
	sc := bufio.NewScanner(strings.NewReader(out))
	for sc.Scan() {
		var m map[string]any
		d := json.NewDecoder(strings.NewReader(sc.Text()))
		d.UseNumber()
		if err := d.Decode(&m); err != nil {
			t.Fatalf("line %q: %v", sc.Text(), err)
		}
		rows = append(rows, m)
	}
	return rows, errOut
}

func TestScan_WritesRowsInEveryFormatWithTheResultOnStderr(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 4, 250)
	rows, errOut := scanJSONL(t, loc, "-o", "json")
	if len(rows) != 1000 {
		t.Fatalf("%d rows, want 1000", len(rows))
	}
	r := decodeResult(t, errOut)
	if r.Outcome != result.Succeeded || *r.Version != 4 || !strings.Contains(r.Message, "1000 rows from 4 of 4 files") {
		t.Errorf("result %+v", r)
	}
	first := rows[0]
	if _, ok := first["amount"].(string); !ok {
		t.Errorf("decimal amount encoded as %T, want an exact string", first["amount"])
	}
	if ts, _ := first["order_ts"].(string); !strings.HasSuffix(ts, "Z") || len(ts) != len("2024-01-01T00:00:00.000000Z") {
		t.Errorf("order_ts %q is not RFC 3339 UTC with microseconds", ts)
	}

	filtered, _ := scanJSONL(t, loc, "--where", "order_id >= 250 AND order_id < 260", "--columns", "order_id,region")
	if len(filtered) != 10 || len(filtered[0]) != 2 {
		t.Errorf("filtered: %d rows %v", len(filtered), filtered)
	}
	old, _ := scanJSONL(t, loc, "--version", "2")
	if len(old) != 500 {
		t.Errorf("version 2: %d rows, want 500", len(old))
	}

	csvOut, _, _ := execute(t, newScanCmd, loc, "--format", "csv", "--columns", "order_id,note")
	recs, err := csv.NewReader(strings.NewReader(csvOut)).ReadAll()
	if err != nil || len(recs) != 1001 || strings.Join(recs[0], ",") != "order_id,note" {
		t.Errorf("csv: %d records, header %v, err %v", len(recs), recs[0], err)
	}

	pq := filepath.Join(t.TempDir(), "out.parquet")
	if _, errOut, code := execute(t, newScanCmd, loc, "--format", "parquet", "--out", pq); code != 0 {
		t.Fatalf("parquet: %s", errOut)
	}
	if n := parquetRows(t, pq); n != 1000 {
		t.Errorf("parquet output has %d rows", n)
	}

	_, errOut, code := execute(t, newScanCmd, loc, "--where", "amount >> 1")
	if code != 2 || !strings.Contains(errOut, "position 9") {
		t.Errorf("bad predicate: exit %d, %s", code, errOut)
	}
}

func parquetRows(t *testing.T, path string) int64 {
	t.Helper()
	s, _ := storage.NewLocal(filepath.Dir(path))
	r, err := s.Open(context.Background(), filepath.Base(path))
	if err != nil {
		t.Fatal(err)
	}
	defer r.Close()
	f, err := parquetio.Open(context.Background(), r)
	if err != nil {
		t.Fatal(err)
	}
	return f.NumRows()
}

// TestTableCommands_WorkAgainstARealS3Server runs demo-data, inspect and scan against the project's
// S3 test server with credentials from the standard AWS environment, as Jobs get them.
func TestTableCommands_WorkAgainstARealS3Server(t *testing.T) {
	srv := s3server.Start(t)
	t.Setenv("AWS_ACCESS_KEY_ID", srv.AccessKeyID)
	t.Setenv("AWS_SECRET_ACCESS_KEY", srv.SecretAccessKey)
	t.Setenv("AWS_REGION", s3server.Region)
	t.Setenv("AWS_ENDPOINT_URL_S3", srv.Endpoint)
	t.Setenv(storage.EnvS3PathStyle, "true")
	loc := srv.Location("lake/orders")
	demoTable(t, loc, 3, 200, "--partitioned")

	out, errOut, code := execute(t, newInspectCmd, loc, "-o", "json", "--set-property", "owner=team-a")
	if code != 0 {
		t.Fatalf("inspect: %s", errOut)
	}
	r := decodeResult(t, out)
	if r.Table.NumFiles != 3 || r.Applied == nil || r.Applied.Version == nil {
		t.Errorf("inspect on S3: %+v %+v", r.Table, r.Applied)
	}
	rows, _ := scanJSONL(t, loc, "--where", "order_id < 10")
	if len(rows) != 10 {
		t.Errorf("scan on S3: %d rows, want 10", len(rows))
	}

	// The same rows through the library, compared with a local copy written with the same seed.
	local := filepath.Join(t.TempDir(), "orders")
	demoTable(t, local, 3, 200, "--partitioned")
	if a, b := canonicalScan(t, loc), canonicalScan(t, local); strings.Join(a, "\n") != strings.Join(b, "\n") {
		t.Error("rows on S3 differ from the same demo data on disk")
	}
}

func canonicalScan(t *testing.T, location string) []string {
	t.Helper()
	store, err := storage.Open(t.Context(), location, storage.ConfigFromEnv())
	if err != nil {
		t.Fatal(err)
	}
	snap, err := delta.NewTable(store).Latest(t.Context())
	if err != nil {
		t.Fatal(err)
	}
	out, err := tabletest.SortedRows(t.Context(), snap) // sorted: file order follows random file names
	if err != nil {
		t.Fatal(err)
	}
	return out
}
