package merge

import (
	"bytes"
	"errors"
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
	"github.com/deltakeeper/deltakeeper/worker/table/tabletest"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// parquetBatch writes each row set as one Parquet file of baseSchema (with codec) into a fresh
// directory and lists it as a batch.
func (fx *fixture) parquetBatch(codec string, files ...[]types.Struct) Batch {
	fx.t.Helper()
	fx.n++
	dir := filepath.Join(fx.dir, fmt.Sprintf("src%d", fx.n))
	if err := os.MkdirAll(dir, 0o755); err != nil {
		fx.t.Fatal(err)
	}
	for n, rows := range files {
		writeParquet(fx.t, filepath.Join(dir, fmt.Sprintf("part-%d.parquet", n)), baseSchema(),
			parquetio.WriterOptions{Codec: codec, PageRows: 1000, RowGroupRows: 3000}, rows)
	}
	b, err := ListBatch(fx.t.Context(), dir, storage.Config{})
	if err != nil {
		fx.t.Fatal(err)
	}
	return b
}

// newStats is the statistics of the data files the latest commit added that were not live before.
func (fx *fixture) newStats(before map[string]bool) []string {
	fx.t.Helper()
	var out []string
	for _, f := range fx.latest().Files() {
		if !before[f.Path] {
			out = append(out, f.Stats)
		}
	}
	slices.Sort(out)
	return out
}

func (fx *fixture) livePaths() map[string]bool {
	live := map[string]bool{}
	for _, f := range fx.latest().Files() {
		live[f.Path] = true
	}
	return live
}

// TestUpsert_CopiesTheBatchFilePagesWithTheEncodersStatistics: an upsert writing every row of a
// one-file Parquet batch as it is copies the file's pages (FilesCopied) and leaves a table whose rows
// and new file statistics equal what the encoder writes for the same batch stored in another codec
// (which cannot be copied); a batch of several small files goes through the encoder.
func TestUpsert_CopiesTheBatchFilePagesWithTheEncodersStatistics(t *testing.T) {
	target := make([]types.Struct, 0, 4000)
	for id := range int64(4000) {
		target = append(target, row(id*2, id, []string{"a", "b"}[id%2]))
	}
	batch := make([]types.Struct, 0, 7000)
	for k := range int64(7000) {
		id := k*3 - 500 // some below, among and above the target's ids
		var name types.Value = fmt.Sprintf("new-%d", id)
		if k%13 == 0 {
			name = nil
		}
		batch = append(batch, types.Struct{id, name, -k, []string{"x", "a"}[k%2]})
	}
	for _, dv := range []bool{true, false} {
		t.Run(fmt.Sprintf("deletion vectors %v", dv), func(t *testing.T) {
			props := map[string]string{"delta.enableDeletionVectors": fmt.Sprint(dv)}
			fo, err := format.ParseOptions("parquet", nil, format.FailOnNewColumns)
			if err != nil {
				t.Fatal(err)
			}
			o := Options{Mode: Upsert, Keys: []string{"id"}, Format: fo}
			results := map[string][]string{}
			var tables [][]string
			for _, codec := range []string{"zstd", "snappy"} {
				fx := newFixture(t, nil, props)
				fx.appendFile(target[:2500]...)
				fx.appendFile(target[2500:]...)
				before := fx.livePaths()
				rep := fx.merge(fx.parquetBatch(codec, batch), o)
				if wantCopied := map[string]int{"zstd": 1, "snappy": 0}[codec]; rep.FilesCopied != wantCopied {
					t.Fatalf("%s batch: %d files copied, want %d (%+v)", codec, rep.FilesCopied, wantCopied, rep)
				}
				if rep.RowsUpdated+rep.RowsInserted != int64(len(batch)) || rep.RowsUpdated == 0 || rep.RowsInserted == 0 {
					t.Fatalf("%s batch: %+v", codec, rep)
				}
				results[codec] = fx.newStats(before)
				tables = append(tables, fx.rows())
			}
			if !slices.Equal(tables[0], tables[1]) {
				t.Fatal("the table after the copied upsert differs from the table after the encoded one")
			}
			// With deletion vectors the batch's file is the only new one; copy-on-write adds the
			// rewritten target files too (written alike by both).
			if (dv && len(results["zstd"]) != 1) || !slices.Equal(results["zstd"], results["snappy"]) {
				t.Fatalf("new file statistics differ:\ncopied  %v\nencoded %v", results["zstd"], results["snappy"])
			}
			// The model: the target without the batch's keys, plus the batch.
			keys := map[int64]bool{}
			for _, r := range batch {
				keys[r[0].(int64)] = true
			}
			var model []types.Struct
			for _, r := range target {
				if !keys[r[0].(int64)] {
					model = append(model, r)
				}
			}
			if got, exp := tables[0], want(append(model, batch...)...); !slices.Equal(got, exp) {
				t.Fatalf("the table holds %d rows, the model %d (or other rows)", len(got), len(exp))
			}
		})
	}

	// Several small files: one new file through the encoder, not one per batch file.
	fx := newFixture(t, nil, map[string]string{"delta.enableDeletionVectors": "true"})
	fx.appendFile(target...)
	fo, err := format.ParseOptions("parquet", nil, format.FailOnNewColumns)
	if err != nil {
		t.Fatal(err)
	}
	rep := fx.merge(fx.parquetBatch("zstd", batch[:3000], batch[3000:]), Options{Mode: Upsert, Keys: []string{"id"}, Format: fo})
	if rep.FilesCopied != 0 || rep.FilesAdded != 1 {
		t.Fatalf("a batch of two small files: %d copied, %d added; want 0 and 1", rep.FilesCopied, rep.FilesAdded)
	}
}

// TestUpsert_AColumnReadAfterPlanningFailsTheMergeAndLeavesNothing: the batch columns that planning
// does not need are read while the merge plans (readBatch's first); a corrupt page among them
// refuses the merge as a bad file, after the match has written deletion vectors, and leaves the
// table and its directory as they were.
func TestUpsert_AColumnReadAfterPlanningFailsTheMergeAndLeavesNothing(t *testing.T) {
	fx := newFixture(t, nil, map[string]string{"delta.enableDeletionVectors": "true"})
	var target, batch []types.Struct
	for id := range int64(3000) {
		target = append(target, row(id, id, "a"))
		batch = append(batch, types.Struct{id * 2, fmt.Sprintf("b%d", id), id, fmt.Sprintf("zz-%04d", id)})
	}
	fx.appendFile(target...)
	b := fx.parquetBatch("uncompressed", batch)
	path := filepath.Join(fx.dir, fmt.Sprintf("src%d", fx.n), "part-0.parquet")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	// The length prefix of one PLAIN string of column p (uncompressed: the bytes are visible).
	at := bytes.LastIndex(data, []byte("zz-1777"))
	if at < 4 {
		t.Fatal("the batch file does not hold the value to corrupt")
	}
	copy(data[at-4:at], []byte{0xff, 0xff, 0xff, 0x7f})
	if err := os.WriteFile(path, data, 0o644); err != nil {
		t.Fatal(err)
	}
	before := fx.rows()
	entries := func() []string {
		var names []string
		des, err := os.ReadDir(filepath.Join(fx.dir, "table"))
		if err != nil {
			t.Fatal(err)
		}
		for _, de := range des {
			names = append(names, de.Name())
		}
		return names
	}
	dirBefore := entries()
	fo, err := format.ParseOptions("parquet", nil, format.FailOnNewColumns)
	if err != nil {
		t.Fatal(err)
	}
	_, err = fx.tryMerge(b, Options{Mode: Upsert, Keys: []string{"id"}, Format: fo})
	var re *result.Error
	if !errors.As(err, &re) || re.Reason != result.ReasonBadFile || !strings.Contains(err.Error(), "part-0.parquet") {
		t.Fatalf("merge of a batch with a corrupt column: %v; want a bad-file refusal naming the file", err)
	}
	if after := fx.rows(); !slices.Equal(before, after) {
		t.Fatal("the failed merge changed the table's rows")
	}
	if after := entries(); !slices.Equal(dirBefore, after) {
		t.Fatalf("the failed merge left files: before %v, after %v", dirBefore, after)
	}
}

// TestUpsert_CopiesPagesIntoAColumnMappingTable: under column mapping the copied file stores the
// table's physical names (and field ids in id mode), as the encoder writes them, so the table reads the
// upserted rows back.
func TestUpsert_CopiesPagesIntoAColumnMappingTable(t *testing.T) {
	for _, mode := range []delta.ColumnMappingMode{delta.ColumnMappingName, delta.ColumnMappingID} {
		t.Run(string(mode), func(t *testing.T) {
			dir := t.TempDir()
			store, err := storage.NewLocal(filepath.Join(dir, "table"))
			if err != nil {
				t.Fatal(err)
			}
			tbl, _, err := tabletest.Create(t.Context(), store, baseSchema(), nil, mode, map[string]string{"delta.enableDeletionVectors": "true"})
			if err != nil {
				t.Fatal(err)
			}
			fx := &fixture{t: t, dir: dir, tbl: tbl}
			fx.appendFile(row(1, 1, "a"), row(2, 2, "a"), row(3, 3, "b"))
			batch := []types.Struct{{int64(2), "two", int64(20), "a"}, {int64(9), nil, int64(90), "c"}}
			fo, err := format.ParseOptions("parquet", nil, format.FailOnNewColumns)
			if err != nil {
				t.Fatal(err)
			}
			rep := fx.merge(fx.parquetBatch("zstd", batch), Options{Mode: Upsert, Keys: []string{"id"}, Format: fo})
			if rep.FilesCopied != 1 || rep.RowsUpdated != 1 || rep.RowsInserted != 1 {
				t.Fatalf("%+v: want the batch file copied, one row updated and one inserted", rep)
			}
			fx.expectRows(row(1, 1, "a"), batch[0], row(3, 3, "b"), batch[1])
		})
	}
}
