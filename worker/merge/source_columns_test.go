package merge

import (
	"context"
	"fmt"
	"path/filepath"
	"runtime"
	"slices"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// TestReadBatchColumns_ColumnsReadInParallelKeepEveryRowInOrder: batch files of several row groups,
// large enough that their columns decode on several cores, read as columns into exactly the rows, in
// the order, that the row path reads (nulls, strings and the file of each row included).
func TestReadBatchColumns_ColumnsReadInParallelKeepEveryRowInOrder(t *testing.T) {
	// At least four readers at once, whatever the machine.
	defer runtime.GOMAXPROCS(runtime.GOMAXPROCS(max(4, runtime.GOMAXPROCS(0))))
	dir := t.TempDir()
	schema := baseSchema()
	const files, rowsPerFile = 2, 3*minParallelRows + 777
	for fi := range files {
		rows := make([]types.Struct, rowsPerFile)
		for r := range rows {
			id := int64(fi*rowsPerFile + r)
			var name types.Value = fmt.Sprintf("name-%d", id*7919%100003)
			if id%11 == 0 {
				name = nil
			}
			rows[r] = types.Struct{id, name, id % 13, []string{"a", "b"}[id%2]}
		}
		// Several row groups, the last one short.
		writeParquet(t, filepath.Join(dir, fmt.Sprintf("b%d.parquet", fi)), schema, parquetio.WriterOptions{RowGroupRows: 2*minParallelRows + 5}, rows)
	}
	b, err := ListBatch(context.Background(), dir, storage.Config{})
	if err != nil {
		t.Fatal(err)
	}
	if len(b.Files) != files {
		t.Fatalf("%d source files listed", len(b.Files))
	}
	fo, err := format.ParseOptions("parquet", nil, format.AddNewColumns)
	if err != nil {
		t.Fatal(err)
	}
	cols, err := readBatchColumns(context.Background(), b, schema, &fo, nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := readBatchRows(context.Background(), b, schema, &fo)
	if err != nil {
		t.Fatal(err)
	}
	if cols.len() != files*rowsPerFile || rows.len() != cols.len() {
		t.Fatalf("columns read %d rows, rows %d; want %d", cols.len(), rows.len(), files*rowsPerFile)
	}
	// The keys first (id and p), the other columns after the read returns: the same rows once awaited.
	split, err := readBatchColumns(context.Background(), b, schema, &fo, []int{0, 3})
	if err != nil {
		t.Fatal(err)
	}
	if split.rest == nil || split.len() != cols.len() || !slices.Equal(split.fileOf, cols.fileOf) {
		t.Fatalf("the split read: rest %v, %d rows (want %d)", split.rest, split.len(), cols.len())
	}
	if err := split.await(); err != nil {
		t.Fatal(err)
	}
	for n := range cols.len() {
		if cols.fileOf[n] != rows.fileOf[n] {
			t.Fatalf("row %d: file %d, the row path says %d", n, cols.fileOf[n], rows.fileOf[n])
		}
		for i := range schema.Fields {
			if c, r, sp := cols.value(n, i), rows.value(n, i), split.value(n, i); c != r || sp != r {
				t.Fatalf("row %d column %s: columns read %v, split read %v, rows %v", n, schema.Fields[i].Name, c, sp, r)
			}
		}
	}
}
