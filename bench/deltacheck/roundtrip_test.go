// Package deltacheck cross-checks tables written by deltakeeper against DuckDB: every live file the
// log lists is read by DuckDB's Parquet reader, the rows completed with the partition values from the
// log, and the result must equal both the rows that were written and what deltakeeper's own scan
// returns. The log is replayed here independently (JSON commits only), so a bug shared by our writer
// and our reader cannot hide.
package deltacheck

import (
	"bufio"
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/bench/internal/ducktest"

	"github.com/duckdb/duckdb-go/v2"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// liveFile is an add action that survived the replay.
type liveFile struct {
	Path            string             `json:"path"`
	PartitionValues map[string]*string `json:"partitionValues"`
}

// replayJSONLog returns the live files of the latest version by applying every JSON commit in order.
func replayJSONLog(t *testing.T, root string) []liveFile {
	t.Helper()
	commits, err := filepath.Glob(filepath.Join(root, "_delta_log", "*.json"))
	if err != nil || len(commits) == 0 {
		t.Fatalf("no commits under %s: %v", root, err)
	}
	sort.Strings(commits)
	live := map[string]liveFile{}
	for _, c := range commits {
		data, err := os.ReadFile(c)
		if err != nil {
			t.Fatal(err)
		}
		sc := bufio.NewScanner(bytes.NewReader(data))
		sc.Buffer(make([]byte, 1<<20), 1<<26)
		for sc.Scan() {
			var a struct {
				Add    *liveFile `json:"add"`
				Remove *struct {
					Path string `json:"path"`
				} `json:"remove"`
			}
			if err := json.Unmarshal(sc.Bytes(), &a); err != nil {
				t.Fatalf("%s: %v", c, err)
			}
			if a.Add != nil {
				live[a.Add.Path] = *a.Add
			}
			if a.Remove != nil {
				delete(live, a.Remove.Path)
			}
		}
	}
	out := make([]liveFile, 0, len(live))
	for _, f := range live {
		out = append(out, f)
	}
	return out
}

// duckTable reads the table's live files with DuckDB and returns canonical rows in logical column
// order. Data columns are found by their physical names in the files; partition columns come from the
// raw log values.
func duckTable(t *testing.T, db *sql.DB, root string, snap *delta.Snapshot) []string {
	t.Helper()
	logical, physical := snap.Schema(), snap.PhysicalSchema()
	parts := snap.Metadata().PartitionColumns
	var rows []string
	for _, f := range replayJSONLog(t, root) {
		rel, err := url.PathUnescape(f.Path)
		if err != nil {
			t.Fatal(err)
		}
		path := filepath.Join(root, filepath.FromSlash(rel))
		q, err := db.Query("SELECT * FROM read_parquet('" + strings.ReplaceAll(path, "'", "''") + "', hive_partitioning = false)")
		if err != nil {
			t.Fatalf("duckdb read %s: %v", path, err)
		}
		cols, _ := q.Columns()
		for q.Next() {
			vals := make([]any, len(cols))
			ptrs := make([]any, len(cols))
			for i := range vals {
				ptrs[i] = &vals[i]
			}
			if err := q.Scan(ptrs...); err != nil {
				t.Fatal(err)
			}
			row := make(types.Struct, len(logical.Fields))
			for i, lf := range logical.Fields {
				pf := physical.Fields[i]
				if slices.Contains(parts, lf.Name) {
					raw, ok := f.PartitionValues[pf.Name]
					if !ok {
						t.Fatalf("%s: no partition value for %s", f.Path, pf.Name)
					}
					row[i] = fromLog(t, raw, lf.Type)
					continue
				}
				j := slices.Index(cols, pf.Name)
				if j < 0 {
					t.Fatalf("%s: DuckDB sees no column %s (has %v)", f.Path, pf.Name, cols)
				}
				row[i] = fromDuck(t, vals[j], pf.Type)
			}
			rows = append(rows, table.CanonicalRow(row))
		}
		if err := q.Err(); err != nil {
			t.Fatal(err)
		}
		q.Close()
	}
	sort.Strings(rows)
	return rows
}

// fromLog types a raw partition value with the protocol's rules, independently of worker/delta.
func fromLog(t *testing.T, raw *string, typ types.DataType) types.Value {
	if raw == nil || *raw == "" {
		return nil
	}
	switch typ.(*types.PrimitiveType).Name {
	case types.TypeString:
		return *raw
	case types.TypeDate:
		d, err := time.Parse("2006-01-02", *raw)
		if err != nil {
			t.Fatal(err)
		}
		return types.Date(d.Unix() / 86400)
	}
	t.Fatalf("partition type %s not handled by the test", typ)
	return nil
}

// fromDuck converts a value scanned from DuckDB into a logical value of the (physical) type.
func fromDuck(t *testing.T, v any, typ types.DataType) types.Value {
	if v == nil {
		return nil
	}
	switch tt := typ.(type) {
	case *types.StructType:
		m := v.(map[string]any)
		s := make(types.Struct, len(tt.Fields))
		for i, f := range tt.Fields {
			s[i] = fromDuck(t, m[f.Name], f.Type)
		}
		return s
	case *types.ArrayType:
		a := v.([]any)
		out := make(types.Array, len(a))
		for i, e := range a {
			out[i] = fromDuck(t, e, tt.ElementType)
		}
		return out
	case *types.MapType:
		m := v.(duckdb.OrderedMap)
		keys, vals := m.Keys(), m.Values()
		out := make(types.Map, len(keys))
		for i := range keys {
			out[i] = types.MapEntry{Key: fromDuck(t, keys[i], tt.KeyType), Value: fromDuck(t, vals[i], tt.ValueType)}
		}
		return out
	}
	switch tt := typ.(*types.PrimitiveType); tt.Name {
	case types.TypeDecimal:
		d := v.(duckdb.Decimal)
		if int(d.Scale) != tt.Scale {
			t.Fatalf("DuckDB reads decimal scale %d, the table says %s", d.Scale, tt)
		}
		return types.DecimalValue{Unscaled: d.Value, Scale: int(d.Scale)}
	case types.TypeDate:
		return types.Date(v.(time.Time).Unix() / 86400)
	case types.TypeTimestamp:
		return types.Timestamp(v.(time.Time).UnixMicro())
	case types.TypeTimestampNTZ:
		return types.TimestampNTZ(v.(time.Time).UnixMicro())
	}
	return v // bool, integers, floats, string, []byte already have their logical Go types
}

func ourTable(t *testing.T, snap *delta.Snapshot) []string {
	t.Helper()
	rows, err := tabletest.SortedRows(t.Context(), snap)
	if err != nil {
		t.Fatal(err)
	}
	return rows
}

func canonical(rows []types.Struct) []string {
	out := make([]string, len(rows))
	for i, r := range rows {
		out[i] = table.CanonicalRow(r)
	}
	sort.Strings(out)
	return out
}

func firstDiff(a, b []string) string {
	for i := range min(len(a), len(b)) {
		if a[i] != b[i] {
			return fmt.Sprintf("row %d:\n  %s\n  %s", i, a[i], b[i])
		}
	}
	return fmt.Sprintf("lengths %d and %d", len(a), len(b))
}

func TestRoundTrip_EveryTypeReadsBackIdenticallyInDuckDBAndOurScan(t *testing.T) {
	db := ducktest.Open(t)
	rows := tabletest.AllTypesRows(700)
	want := canonical(rows)
	for _, mode := range []delta.ColumnMappingMode{delta.ColumnMappingNone, delta.ColumnMappingName, delta.ColumnMappingID} {
		for _, parts := range [][]string{nil, {"part", "pday"}} {
			t.Run(fmt.Sprintf("%s/partitions=%v", mode, parts), func(t *testing.T) {
				root := t.TempDir()
				store, err := storage.NewLocal(root)
				if err != nil {
					t.Fatal(err)
				}
				tbl, snap, err := tabletest.Create(t.Context(), store, tabletest.AllTypesSchema(), parts, mode,
					map[string]string{delta.PropTargetFileSize: "96kb"})
				if err != nil {
					t.Fatal(err)
				}
				// Two appends, the second with roll-over inside a partition.
				if _, err := table.Append(t.Context(), snap, rows[:300], table.WriteOptions{}); err != nil {
					t.Fatal(err)
				}
				if snap, err = tbl.Latest(t.Context()); err != nil {
					t.Fatal(err)
				}
				if _, err := table.Append(t.Context(), snap, rows[300:], table.WriteOptions{TargetFileSize: 4 << 10}); err != nil {
					t.Fatal(err)
				}
				if snap, err = tbl.Latest(t.Context()); err != nil {
					t.Fatal(err)
				}
				duck, ours := duckTable(t, db, root, snap), ourTable(t, snap)
				if !slices.Equal(duck, want) {
					t.Errorf("DuckDB reads other rows than were written: %s", firstDiff(duck, want))
				}
				if !slices.Equal(ours, want) {
					t.Errorf("our scan returns other rows than were written: %s", firstDiff(ours, want))
				}
				t.Logf("%d files, %d rows identical in DuckDB and our scan", snap.NumFiles(), len(want))
			})
		}
	}
}

func TestRoundTrip_DemoDataReadsBackIdenticallyInDuckDB(t *testing.T) {
	db := ducktest.Open(t)
	for _, partitioned := range []bool{false, true} {
		t.Run(fmt.Sprintf("partitioned=%v", partitioned), func(t *testing.T) {
			root := t.TempDir()
			store, err := storage.NewLocal(root)
			if err != nil {
				t.Fatal(err)
			}
			tbl := delta.NewTable(store)
			opts := table.DemoOptions{Files: 12, RowsPerFile: 400, Partitioned: partitioned, Seed: 7}
			if _, err := table.WriteDemoData(context.Background(), tbl, opts, nil); err != nil {
				t.Fatal(err)
			}
			snap, err := tbl.Latest(t.Context())
			if err != nil {
				t.Fatal(err)
			}
			var written []types.Struct
			for i := range opts.Files {
				written = append(written, table.OrdersRows(opts.Seed, i, int64(i*opts.RowsPerFile), opts.RowsPerFile)...)
			}
			want := canonical(written)
			duck, ours := duckTable(t, db, root, snap), ourTable(t, snap)
			if !slices.Equal(duck, want) {
				t.Errorf("DuckDB: %s", firstDiff(duck, want))
			}
			if !slices.Equal(ours, want) {
				t.Errorf("our scan: %s", firstDiff(ours, want))
			}
			if snap.NumFiles() != opts.Files || snap.CheckpointVersion() != 10 {
				t.Errorf("%d files, checkpoint at %d: want %d files and the automatic checkpoint at 10", snap.NumFiles(), snap.CheckpointVersion(), opts.Files)
			}
		})
	}
}
