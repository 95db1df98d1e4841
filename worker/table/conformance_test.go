package table

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// conformanceTable is one record of delta-conformance/index.json.
type conformanceTable struct {
	Name       string `json:"name"`
	Source     string `json:"source"`
	Role       string `json:"role"`
	TableRoot  string `json:"table_root"`
	MaxVersion *int64 `json:"max_version"`
	LiveFiles  int    `json:"live_files"`
	LiveRows   *int64 `json:"live_rows_from_stats"`
	Notes      string `json:"notes"`
	Expected   struct {
		Kind       string   `json:"kind"`
		File       string   `json:"file"`
		ExtraFiles []string `json:"extra_files"`
	} `json:"expected"`
}

// readOnly keeps the shared tables untouched whatever the code under test does.
type readOnly struct{ storage.Store }

func (readOnly) Put(context.Context, string, []byte) error { return errors.New("read-only") }
func (readOnly) PutIfAbsent(context.Context, string, []byte) error {
	return errors.New("read-only")
}
func (readOnly) Create(context.Context, string) (storage.Writer, error) {
	return nil, errors.New("read-only")
}
func (readOnly) Delete(context.Context, string) error { return errors.New("read-only") }

// TestConformance_RowsMatchEveryReferenceTable reads every table of the shared conformance corpus and
// compares what our scan returns with the rows the reference implementations expect, as a multiset.
// One line per table says PASS or FAIL and why; any failure fails the test, including tables we do
// not support (they are listed with the reason).
func TestConformance_RowsMatchEveryReferenceTable(t *testing.T) {
	dir := testutil.ConformanceDir(t)
	data, err := os.ReadFile(filepath.Join(dir, "index.json"))
	if err != nil {
		t.Fatal(err)
	}
	var tables []conformanceTable
	if err := json.Unmarshal(data, &tables); err != nil {
		t.Fatal(err)
	}
	sort.Slice(tables, func(i, j int) bool {
		return tables[i].Source+"/"+tables[i].Name < tables[j].Source+"/"+tables[j].Name
	})
	var pass, fail int
	var lines []string
	for _, c := range tables {
		home := filepath.Join(dir, c.Source, c.Name)
		note, err := checkConformance(t.Context(), home, c)
		id := c.Source + "/" + c.Name
		if err != nil {
			fail++
			lines = append(lines, fmt.Sprintf("FAIL %-75s %s: %v", id, c.Expected.Kind, err))
			t.Errorf("%s: %v", id, err)
			continue
		}
		pass++
		lines = append(lines, fmt.Sprintf("PASS %-75s %s%s", id, c.Expected.Kind, note))
	}
	for _, l := range lines {
		t.Log(l)
	}
	t.Logf("conformance: %d passed, %d failed (of %d tables)", pass, fail, len(tables))
	if len(tables) < 76 {
		t.Errorf("only %d tables in the index, want at least 76", len(tables))
	}
}

func checkConformance(ctx context.Context, home string, c conformanceTable) (string, error) {
	local, err := storage.NewLocal(filepath.Join(home, c.TableRoot))
	if err != nil {
		return "", err
	}
	tbl := delta.NewTable(readOnly{local})
	switch {
	case c.Role == "negative":
		return "", expectRefusal(ctx, tbl)
	case c.Expected.Kind == "log-only":
		return checkLogOnly(ctx, tbl, c)
	case c.Expected.Kind == "dat":
		return checkDAT(ctx, tbl, home)
	}
	snap, err := tbl.Latest(ctx)
	if err != nil {
		return "", err
	}
	if c.MaxVersion != nil && int64(snap.Version()) != *c.MaxVersion {
		return "", fmt.Errorf("latest version %d, want %d", snap.Version(), *c.MaxVersion)
	}
	exp := filepath.Join(home, "expected")
	switch c.Expected.Kind {
	case "parquet-spark-read":
		want, err := readExpectedParquet(ctx, exp)
		if err != nil {
			return "", err
		}
		return compareWithShift(ctx, snap, want, c.Name == "data-reader-partition-values")
	case "text-table-from-tests", "jsonl-derived-from-tests":
		files := append([]string{c.Expected.File}, c.Expected.ExtraFiles...)
		note := ""
		for _, f := range files {
			if strings.HasPrefix(filepath.Base(f), "cdf_") {
				note = " (change-data-feed expectation " + filepath.Base(f) + " not compared: deltakeeper does not read CDF)"
				continue
			}
			var want *expectedRows
			if strings.HasSuffix(f, ".jsonl") {
				want, err = readExpectedJSONL(filepath.Join(home, f), snap.Schema())
			} else {
				want, err = readExpectedText(filepath.Join(home, f), snap.Schema())
			}
			if err != nil {
				return "", err
			}
			if err := compareRows(ctx, snap, want, !strings.HasSuffix(f, ".jsonl")); err != nil {
				return "", fmt.Errorf("%s: %w", filepath.Base(f), err)
			}
		}
		return note, nil
	case "stats-only":
		return checkAgainstStats(ctx, snap, c)
	case "partial":
		return checkPartial(ctx, snap, c)
	}
	return "", fmt.Errorf("unknown expectation kind %q", c.Expected.Kind)
}

// scanKeys scans the named columns and returns one canonical key per value. Nested columns are
// rendered as arrow text when arrowNested is set (text expectations).
func scanKeys(ctx context.Context, snap *delta.Snapshot, columns []string, arrowNested bool) ([][]string, error) {
	scan, err := NewScan(snap, ScanOptions{Columns: columns})
	if err != nil {
		return nil, err
	}
	out := scan.Schema()
	var got [][]string
	_, err = scan.Run(ctx, func(rows []types.Struct) error {
		for _, r := range rows {
			keys := make([]string, len(r))
			for i, v := range r {
				if arrowNested && isNested(out.Fields[i].Type) {
					keys[i] = "a:" + arrowText(v, out.Fields[i].Type)
				} else if s, ok := v.(string); ok && arrowNested && s == "" {
					keys[i] = "null" // arrow prints null and the empty string alike: an empty cell
				} else {
					keys[i] = canon(v)
				}
			}
			got = append(got, keys)
		}
		return nil
	})
	return got, err
}

func compareRows(ctx context.Context, snap *delta.Snapshot, want *expectedRows, arrowNested bool) error {
	got, err := scanKeys(ctx, snap, want.columns, arrowNested)
	if err != nil {
		return err
	}
	return multisetDiff(want.columns, got, want.rows)
}

// compareWithShift compares rows; when allowed and the rows differ, it retries with every expected
// timestamp shifted by one whole number of quarter hours (the expectation was written in a session
// time zone other than UTC, see the table's notes) and reports the shift it needed.
func compareWithShift(ctx context.Context, snap *delta.Snapshot, want *expectedRows, allowShift bool) (string, error) {
	got, err := scanKeys(ctx, snap, want.columns, false)
	if err != nil {
		return "", err
	}
	diff := multisetDiff(want.columns, got, want.rows)
	if diff == nil || !allowShift {
		return "", diff
	}
	for q := -56; q <= 56; q++ {
		shifted := shiftTimestamps(want.rows, int64(q)*15*60*1_000_000)
		if multisetDiff(want.columns, got, shifted) == nil {
			return fmt.Sprintf(" (expected file written in a UTC%+.2fh session zone: timestamps compared as instants after that shift)", float64(q)/4), nil
		}
	}
	return "", diff
}

func shiftTimestamps(rows [][]string, by int64) [][]string {
	out := make([][]string, len(rows))
	for i, r := range rows {
		out[i] = slices.Clone(r)
		for j, k := range r {
			var us int64
			if _, err := fmt.Sscanf(k, "T:%d", &us); err == nil {
				out[i][j] = fmt.Sprintf("T:%d", us+by)
			}
		}
	}
	return out
}

func multisetDiff(columns []string, got, want [][]string) error {
	count := map[string]int{}
	for _, r := range want {
		count[strings.Join(r, " | ")]++
	}
	for _, r := range got {
		count[strings.Join(r, " | ")]--
	}
	var missing, extra []string
	for k, n := range count {
		for ; n > 0; n-- {
			missing = append(missing, k)
		}
		for ; n < 0; n++ {
			extra = append(extra, k)
		}
	}
	if len(missing) == 0 && len(extra) == 0 {
		return nil
	}
	sort.Strings(missing)
	sort.Strings(extra)
	return fmt.Errorf("rows differ (got %d, want %d; columns %v): missing %s; unexpected %s",
		len(got), len(want), columns, head(missing), head(extra))
}

func head(s []string) string {
	if len(s) > 3 {
		return fmt.Sprintf("%q and %d more", s[:3], len(s)-3)
	}
	return fmt.Sprintf("%q", s)
}

// expectRefusal: loading or scanning a negative table must fail.
func expectRefusal(ctx context.Context, tbl *delta.Table) error {
	snap, err := tbl.Latest(ctx)
	if err != nil {
		return nil
	}
	scan, err := NewScan(snap, ScanOptions{})
	if err != nil {
		return nil
	}
	if _, err := scan.Run(ctx, func([]types.Struct) error { return nil }); err != nil {
		return nil
	}
	return fmt.Errorf("the table was read without error, but a correct reader must refuse it")
}

func checkLogOnly(ctx context.Context, tbl *delta.Table, c conformanceTable) (string, error) {
	snap, err := tbl.Latest(ctx)
	if err != nil {
		return "", err
	}
	if c.MaxVersion != nil && int64(snap.Version()) != *c.MaxVersion {
		return "", fmt.Errorf("latest version %d, want %d", snap.Version(), *c.MaxVersion)
	}
	if snap.NumFiles() != c.LiveFiles {
		return "", fmt.Errorf("%d live files, want %d", snap.NumFiles(), c.LiveFiles)
	}
	if _, err := NewScan(snap, ScanOptions{}); err != nil {
		return "", fmt.Errorf("the table could not be planned for reading: %w", err)
	}
	return fmt.Sprintf(" (snapshot facts: version %d, %d live files; data files are not part of the fixture)", snap.Version(), snap.NumFiles()), nil
}

// checkDAT compares every version the DAT case describes (time travel by version) with its rows and
// its protocol and properties.
func checkDAT(ctx context.Context, tbl *delta.Table, home string) (string, error) {
	dirs, err := filepath.Glob(filepath.Join(home, "expected", "*", "table_version_metadata.json"))
	if err != nil || len(dirs) == 0 {
		return "", fmt.Errorf("no DAT expectations under %s", home)
	}
	var checked []string
	for _, md := range dirs {
		vdir := filepath.Dir(md)
		var meta struct {
			Version          int64             `json:"version"`
			Properties       map[string]string `json:"properties"`
			MinReaderVersion int               `json:"min_reader_version"`
			MinWriterVersion int               `json:"min_writer_version"`
		}
		data, err := os.ReadFile(md)
		if err != nil {
			return "", err
		}
		if err := json.Unmarshal(data, &meta); err != nil {
			return "", fmt.Errorf("%s: %w", md, err)
		}
		var snap *delta.Snapshot
		if filepath.Base(vdir) == "latest" {
			snap, err = tbl.Latest(ctx)
			if err == nil && int64(snap.Version()) != meta.Version {
				return "", fmt.Errorf("latest is version %d, want %d", snap.Version(), meta.Version)
			}
		} else {
			snap, err = tbl.At(ctx, delta.Version(meta.Version))
		}
		if err != nil {
			return "", fmt.Errorf("%s: %w", filepath.Base(vdir), err)
		}
		p := snap.Protocol()
		if p.MinReaderVersion != meta.MinReaderVersion || p.MinWriterVersion != meta.MinWriterVersion {
			return "", fmt.Errorf("%s: protocol %d/%d, want %d/%d", filepath.Base(vdir), p.MinReaderVersion, p.MinWriterVersion, meta.MinReaderVersion, meta.MinWriterVersion)
		}
		for k, v := range meta.Properties {
			if got := snap.Properties()[k]; got != v {
				return "", fmt.Errorf("%s: property %s = %q, want %q", filepath.Base(vdir), k, got, v)
			}
		}
		want, err := readExpectedParquet(ctx, filepath.Join(vdir, "table_content"))
		if err != nil {
			return "", err
		}
		if err := compareRows(ctx, snap, want, false); err != nil {
			return "", fmt.Errorf("%s (version %d): %w", filepath.Base(vdir), meta.Version, err)
		}
		checked = append(checked, filepath.Base(vdir))
	}
	return fmt.Sprintf(" (%s)", strings.Join(checked, ", ")), nil
}

// checkPartial checks the rows the source repository's test asserts: a predicate scan returning
// exactly the given rows, plus the table's row count from its statistics.
func checkPartial(ctx context.Context, snap *delta.Snapshot, c conformanceTable) (string, error) {
	partial := map[string]struct {
		where string
		want  []string // canonical rows
	}{
		// kernel-rs read/mod.rs partition_values_parsed_skipping: "part = 0" returns id=3.
		"v1-multi-part-partitioned-struct-stats-only": {where: "part = 0", want: []string{`i:3 | s:"value_3" | i:0`}},
	}
	p, ok := partial[c.Name]
	if !ok {
		return "", fmt.Errorf("no partial expectation is known for %s", c.Name)
	}
	e, err := expr.Parse(p.where)
	if err != nil {
		return "", err
	}
	scan, err := NewScan(snap, ScanOptions{Where: e})
	if err != nil {
		return "", err
	}
	var got []string
	if _, err := scan.Run(ctx, func(rows []types.Struct) error {
		for _, r := range rows {
			keys := make([]string, len(r))
			for i, v := range r {
				keys[i] = canon(v)
			}
			got = append(got, strings.Join(keys, " | "))
		}
		return nil
	}); err != nil {
		return "", err
	}
	if !slices.Equal(got, p.want) {
		return "", fmt.Errorf("where %s: got %q, want %q (columns %s)", p.where, got, p.want, columnNames(scan.Schema()))
	}
	note, err := checkAgainstStats(ctx, snap, c)
	return fmt.Sprintf(" (where %s → %d row%s)", p.where, len(got), note), err
}
