package merge

import (
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// typedSchema has a column of every flat type the columnar path reads.
func typedSchema() *types.StructType {
	f := func(name, t string) *types.StructField {
		return &types.StructField{Name: name, Type: types.Primitive(t), Nullable: true}
	}
	return &types.StructType{Fields: []*types.StructField{
		f("id", types.TypeLong), f("name", types.TypeString), f("qty", types.TypeInteger),
		f("amount", types.TypeDouble), f("ratio", types.TypeFloat), f("flag", types.TypeBoolean),
		f("day", types.TypeDate), f("ts", types.TypeTimestamp), f("p", types.TypeString),
	}}
}

// typedValue is a random value of column c (nil one time in eight, never for id unless nullKey).
func typedValue(rng *rand.Rand, c string, id int64) types.Value {
	if c != "id" && rng.IntN(8) == 0 {
		return nil
	}
	switch c {
	case "id":
		return id
	case "name":
		return fmt.Sprintf("n%d-%d", id, rng.IntN(100))
	case "qty":
		return int32(rng.IntN(60000) - 30000)
	case "amount":
		return float64(rng.IntN(1e6)) / 8
	case "ratio":
		return float32(rng.IntN(1000)) / 4
	case "flag":
		return rng.IntN(2) == 0
	case "day":
		return types.Date(rng.IntN(40000) - 20000)
	case "ts":
		return types.Timestamp(rng.Int64N(1 << 52))
	case "p":
		return []string{"a", "b", "c"}[rng.IntN(3)]
	}
	return nil
}

// pathFixtures are two identical tables, one merged through the columnar path, one through rows.
type pathFixtures struct {
	t          *testing.T
	cols, rows *fixture
	rng        *rand.Rand
	dir        string
	batches    int
}

func newPathFixtures(t *testing.T, parts []string, props map[string]string, seed uint64) *pathFixtures {
	pf := &pathFixtures{t: t, rng: rand.New(rand.NewPCG(seed, 3)), dir: t.TempDir()}
	mk := func() *fixture {
		dir := t.TempDir()
		store, err := storage.NewLocal(filepath.Join(dir, "table"))
		if err != nil {
			t.Fatal(err)
		}
		tbl, _, err := tabletest.Create(t.Context(), store, typedSchema(), parts, "", props)
		if err != nil {
			t.Fatal(err)
		}
		return &fixture{t: t, dir: dir, tbl: tbl}
	}
	pf.cols, pf.rows = mk(), mk()
	schema := typedSchema()
	for f := range 6 {
		var rows []types.Struct
		for i := range 40 {
			r := make(types.Struct, len(schema.Fields))
			for c, sf := range schema.Fields {
				r[c] = typedValue(pf.rng, sf.Name, int64(f*40+i))
			}
			rows = append(rows, r)
		}
		for _, fx := range []*fixture{pf.cols, pf.rows} {
			if _, err := table.Append(t.Context(), fx.latest(), rows, table.WriteOptions{}); err != nil {
				t.Fatal(err)
			}
		}
	}
	return pf
}

// batch writes a Parquet batch of 1–3 files: random and clustered keys, null keys, duplicates
// ordered by seq, delete markers, files lacking table columns, qty stored as short and amount as
// float in some files (type widening), and an extra column when extra is set.
func (pf *pathFixtures) batch(extra bool) Batch {
	pf.batches++
	dir := filepath.Join(pf.dir, fmt.Sprintf("batch%d", pf.batches))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		pf.t.Fatal(err)
	}
	rng := pf.rng
	base := rng.Int64N(260)
	for n := range 1 + rng.IntN(3) {
		var fields []*types.StructField
		for _, sf := range typedSchema().Fields {
			if sf.Name != "id" && rng.IntN(5) == 0 {
				continue // the file lacks the column: matched rows keep the target's value
			}
			c := *sf
			switch {
			case c.Name == "qty" && rng.IntN(2) == 0:
				c.Type = types.Primitive(types.TypeShort)
			case c.Name == "amount" && rng.IntN(2) == 0:
				c.Type = types.Primitive(types.TypeFloat)
			}
			fields = append(fields, &c)
		}
		fields = append(fields,
			&types.StructField{Name: "seq", Type: types.Primitive(types.TypeLong), Nullable: true},
			&types.StructField{Name: "gone", Type: types.Primitive(types.TypeBoolean), Nullable: true})
		if extra {
			fields = append(fields, &types.StructField{Name: "extra", Type: types.Primitive(types.TypeLong), Nullable: true})
		}
		schema := &types.StructType{Fields: fields}
		var rows []types.Struct
		for range 1 + rng.IntN(60) {
			id := base + rng.Int64N(40) // clustered
			if rng.IntN(2) == 0 {
				id = rng.Int64N(300) // random, some new
			}
			r := make(types.Struct, len(fields))
			for c, f := range fields {
				switch f.Name {
				case "seq":
					r[c] = rng.Int64N(4)
					if rng.IntN(6) == 0 {
						r[c] = nil
					}
				case "gone":
					r[c] = rng.IntN(6) == 0
				case "extra":
					r[c] = rng.Int64N(100)
				default:
					v := typedValue(rng, f.Name, id)
					if v != nil && f.Type.(*types.PrimitiveType).Name == types.TypeShort {
						v = int16(v.(int32) / 2)
					} else if v != nil && f.Type.(*types.PrimitiveType).Name == types.TypeFloat && f.Name == "amount" {
						v = float32(v.(float64))
					}
					r[c] = v
				}
			}
			if rng.IntN(12) == 0 {
				r[0] = nil // a null key never matches
			}
			rows = append(rows, r)
		}
		writeParquet(pf.t, filepath.Join(dir, fmt.Sprintf("part-%d.parquet", n)), schema, parquetio.WriterOptions{PageBytes: 512}, rows)
	}
	b, err := ListBatch(pf.t.Context(), dir, storage.Config{})
	if err != nil {
		pf.t.Fatal(err)
	}
	return b
}

// TestMerge_ColumnarAndRowPathsGiveIdenticalTables runs the same random merges through the
// columnar path and the row path on two copies of a table (deletion vectors or copy-on-write, row
// tracking, partitions) and compares, after each, the rows, the row ids and the reports.
func TestMerge_ColumnarAndRowPathsGiveIdenticalTables(t *testing.T) {
	for _, sc := range []struct {
		dv, rowTracking bool
		parts           []string
	}{
		{false, false, nil}, {true, true, nil}, {true, false, []string{"p"}}, {false, true, []string{"p"}},
	} {
		t.Run(fmt.Sprintf("dv=%v/rowTracking=%v/parts=%v", sc.dv, sc.rowTracking, sc.parts), func(t *testing.T) {
			props := map[string]string{"delta.enableDeletionVectors": fmt.Sprint(sc.dv)}
			if sc.rowTracking {
				props[delta.PropEnableRowTracking] = "true"
			}
			pf := newPathFixtures(t, sc.parts, props, uint64(len(sc.parts))*2+map[bool]uint64{false: 0, true: 1}[sc.dv])
			columnarBatches := 0
			var updated, inserted, deleted int64
			for round := range 14 {
				mode := []Mode{Upsert, Upsert, Update, Delete, Append}[pf.rng.IntN(5)]
				fo, err := format.ParseOptions("parquet", nil, format.AddNewColumns)
				if err != nil {
					t.Fatal(err)
				}
				o := Options{Mode: mode, Keys: []string{"id"}, DeleteColumn: "gone", OrderBy: "seq", Format: fo}
				if mode == Append {
					o.Keys, o.OrderBy = nil, ""
				}
				b := pf.batch(round == 9)
				oc, or := o, o
				oc.batchRead = func(columnar bool) {
					if columnar {
						columnarBatches++
					}
				}
				or.rowsOnly = true
				or.batchRead = func(columnar bool) {
					if columnar {
						t.Fatal("the row path read columns")
					}
				}
				repC, errC := pf.cols.tryMerge(b, oc)
				repR, errR := pf.rows.tryMerge(b, or)
				if fmt.Sprint(errC) != fmt.Sprint(errR) {
					t.Fatalf("round %d (%s): columnar error %v, row error %v", round, mode, errC, errR)
				}
				if errC != nil {
					t.Logf("round %d (%s): both refused: %v", round, mode, errC)
					continue
				}
				updated, inserted, deleted = updated+repC.RowsUpdated, inserted+repC.RowsInserted, deleted+repC.RowsDeleted
				if !reflect.DeepEqual(reportCounts(repC), reportCounts(repR)) {
					t.Fatalf("round %d (%s): reports differ\ncolumnar %+v\n    rows %+v", round, mode, repC, repR)
				}
				got, exp := pf.cols.rows(), pf.rows.rows()
				if !slices.Equal(got, exp) {
					t.Fatalf("round %d (%s): tables differ (%+v)\n%s", round, mode, repC, diff(got, exp))
				}
				if sc.rowTracking {
					idsC, err := tabletest.RowIdentities(t.Context(), pf.cols.latest())
					if err != nil {
						t.Fatal(err)
					}
					idsR, err := tabletest.RowIdentities(t.Context(), pf.rows.latest())
					if err != nil {
						t.Fatal(err)
					}
					if !reflect.DeepEqual(idsC, idsR) {
						t.Fatalf("round %d (%s): row identities differ:\ncolumnar %v\n    rows %v", round, mode, idsC, idsR)
					}
				}
			}
			if columnarBatches < 10 {
				t.Fatalf("only %d batches took the columnar path", columnarBatches)
			}
			if rows := pf.cols.rows(); len(rows) < 100 {
				t.Fatalf("%d rows left: the merges did not keep enough to compare", len(rows))
			}
			if updated == 0 || inserted == 0 || deleted == 0 || pf.cols.latest().Schema().FieldIndex("extra") < 0 {
				t.Fatalf("updated %d, inserted %d, deleted %d rows, schema %s: the merges did not exercise every path", updated, inserted, deleted, pf.cols.latest().Schema())
			}
		})
	}
}

// reportCounts is a report's row counts, without its bytes and files, which follow the encoder's
// choices and the write strategy: the columnar upsert writes its updated and inserted rows as one
// set of files (stageUpsertAsIs), the row path as two, so the tables' files differ from then on.
func reportCounts(r *Report) Report {
	return Report{Mode: r.Mode, SourceRows: r.SourceRows, SourceRowsDeduplicated: r.SourceRowsDeduplicated,
		RowsMatched: r.RowsMatched, RowsUpdated: r.RowsUpdated, RowsDeleted: r.RowsDeleted, RowsInserted: r.RowsInserted,
		Version: r.Version, Attempts: r.Attempts, AlreadyCommitted: r.AlreadyCommitted, SchemaChanges: r.SchemaChanges}
}
