package parquetio

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"testing"

	"github.com/parquet-go/parquet-go"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// copyRecord is a flat record as another writer (parquet-go's) stores it.
type copyRecord struct {
	ID   int64    `parquet:"id"`
	S    *string  `parquet:"s,optional,dict"`
	I    *int32   `parquet:"i,optional"`
	D    *float64 `parquet:"d,optional"`
	OK   *bool    `parquet:"ok,optional"`
	Blob []byte   `parquet:"blob,optional,plain"`
}

func copySchema() *types.StructType {
	col := func(name, typ string, nullable bool) *types.StructField {
		return &types.StructField{Name: name, Type: types.Primitive(typ), Nullable: nullable}
	}
	return &types.StructType{Fields: []*types.StructField{
		col("id", types.TypeLong, false), col("s", types.TypeString, true), col("i", types.TypeInteger, true),
		col("d", types.TypeDouble, true), col("ok", types.TypeBoolean, true), col("blob", types.TypeBinary, true),
	}}
}

// foreignCopyFile writes n records with parquet-go's writer: data page version, codec and page size
// as given, small row groups so that the file has several.
func foreignCopyFile(t *testing.T, n, version int, codec parquet.WriterOption) ([]byte, []types.Struct) {
	t.Helper()
	var recs []copyRecord
	var rows []types.Struct
	for r := range n {
		rec := copyRecord{ID: int64(r*3 - 1000)}
		row := types.Struct{rec.ID, nil, nil, nil, nil, nil}
		if r%7 != 0 {
			s := fmt.Sprintf("name-%04d", (r*31)%997)
			rec.S, row[1] = &s, s
		}
		if r%5 != 1 {
			v := int32(-r * 11)
			rec.I, row[2] = &v, v
		}
		if r%9 != 2 {
			v := float64(r) / 7
			rec.D, row[3] = &v, v
		}
		if r%4 != 3 {
			v := r%3 == 0
			rec.OK, row[4] = &v, v
		}
		if r%6 != 4 {
			rec.Blob = []byte{byte(r), byte(r >> 8), 0xff}
			row[5] = rec.Blob
		}
		recs = append(recs, rec)
		rows = append(rows, row)
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[copyRecord](&buf, parquet.DataPageVersion(version), codec, parquet.PageBufferSize(8<<10))
	for lo := 0; lo < n; lo += 3000 {
		if _, err := w.Write(recs[lo:min(lo+3000, n)]); err != nil {
			t.Fatal(err)
		}
		if err := w.Flush(); err != nil { // one row group per 3,000 rows
			t.Fatal(err)
		}
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), rows
}

// copyPagesOf copies src (whose rows batch holds from row from) into a new file.
func copyPagesOf(t *testing.T, schema *types.StructType, src *File, batch *FlatBatch, from int, opts WriterOptions) ([]byte, *WriteResult, error) {
	t.Helper()
	var buf memWriter
	w, err := NewWriter(&buf, schema, opts)
	if err != nil {
		t.Fatal(err)
	}
	names := make([]string, len(schema.Fields))
	for i, f := range schema.Fields {
		names[i] = f.Name
	}
	if err := w.CopyPages(context.Background(), src, names, batch, from); err != nil {
		return nil, nil, err
	}
	res, err := w.Close()
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes(), res, nil
}

func TestCopyPages_ForeignPagesWithTheStatisticsWriteColumnsComputes(t *testing.T) {
	schema := copySchema()
	file, rows := foreignCopyFile(t, 10000, 1, parquet.Compression(&parquet.Zstd))
	src := openBytes(t, file)
	if src.NumRows() != int64(len(rows)) || len(src.metadata().RowGroups) < 3 {
		t.Fatalf("the source has %d rows in %d row groups; want %d rows in several", src.NumRows(), len(src.metadata().RowGroups), len(rows))
	}
	names := []string{"id", "s", "i", "d", "ok", "blob"}
	if !PagesCopyable(src, schema, names, WriterOptions{}) {
		t.Fatal("PagesCopyable refuses a zstd data page v1 file of PLAIN and dictionary pages")
	}
	// The decoded rows sit after 17 other rows of the batch, as a second file of a merge batch does.
	batch := flatBatchOf(t, schema, append(flatRowsFiller(17), rows...))
	out, res, err := copyPagesOf(t, schema, src, batch, 17, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	got := readAll(t, openBytes(t, out), schema, ReadOptions{})
	if fmt.Sprint(got) != fmt.Sprint(rows) {
		t.Fatalf("the copy reads back %d rows that differ from the %d of the source", len(got), len(rows))
	}
	// The same statistics as the writer's own encoding of those rows.
	_, want := writeFlat(t, schema, flatBatchOf(t, schema, rows), WriterOptions{}, nil)
	if fmt.Sprint(res.Columns) != fmt.Sprint(want.Columns) || res.NumRows != want.NumRows {
		t.Errorf("statistics of the copy differ from WriteColumns':\n%v\n%v", res.Columns, want.Columns)
	}
	assertStats(t, schema, rows, res)

	// Pages were copied, not re-encoded: the source's row groups and page bodies are kept, and the
	// dictionary column is still dictionary-coded.
	cp := openBytes(t, out)
	md, smd := cp.metadata(), src.metadata()
	if len(md.RowGroups) != len(smd.RowGroups) {
		t.Fatalf("the copy has %d row groups, the source %d", len(md.RowGroups), len(smd.RowGroups))
	}
	for g := range md.RowGroups {
		for c := range md.RowGroups[g].Columns {
			oc, sc := &md.RowGroups[g].Columns[c].MetaData, &smd.RowGroups[g].Columns[c].MetaData
			if oc.NumValues != sc.NumValues || oc.TotalUncompressedSize < sc.TotalUncompressedSize/2 {
				t.Errorf("row group %d column %d: %d values, %d bytes; the source %d values, %d bytes", g, c, oc.NumValues, oc.TotalUncompressedSize, sc.NumValues, sc.TotalUncompressedSize)
			}
			if c == 1 && oc.DictionaryPageOffset <= 0 {
				t.Errorf("row group %d: the dictionary column lost its dictionary page", g)
			}
			if md.RowGroups[g].Columns[c].ColumnIndexOffset <= 0 || md.RowGroups[g].Columns[c].OffsetIndexOffset <= 0 {
				t.Errorf("row group %d column %d has no page index", g, c)
			}
		}
	}
	if !trustsPageStats(cp) {
		t.Errorf("created_by %q: the copy's page headers carry this package's exact statistics", cp.CreatedBy())
	}
	// Copying the copy, through the rewrite's page copy that trusts those headers, keeps every row.
	again, _, err := copyPagesOf(t, schema, cp, batch, 17, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, openBytes(t, again), schema, ReadOptions{}); fmt.Sprint(got) != fmt.Sprint(rows) {
		t.Fatal("a copy of the copy reads back different rows")
	}
}

// flatRowsFiller is n rows of copySchema's shape that no test row equals.
func flatRowsFiller(n int) []types.Struct {
	rows := make([]types.Struct, n)
	for r := range rows {
		rows[r] = types.Struct{int64(-1 << 40), "filler", int32(1 << 30), 1e300, true, []byte("x")}
	}
	return rows
}

func TestCopyPages_OwnFileKeepsNaNAndEveryType(t *testing.T) {
	schema := flatTestSchema()
	rows := flatTestRows(6000)
	batch := flatBatchOf(t, schema, rows)
	file, want := writeFlat(t, schema, batch, WriterOptions{RowGroupBytes: 16 << 10, PageRows: 700}, nil)
	src := openBytes(t, file)
	out, res, err := copyPagesOf(t, schema, src, batch, 0, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if got := readAll(t, openBytes(t, out), schema, ReadOptions{}); fmt.Sprint(got) != fmt.Sprint(rows) {
		t.Fatalf("the copy reads back %d rows that differ from the %d written", len(got), len(rows))
	}
	if fmt.Sprint(res.Columns) != fmt.Sprint(want.Columns) {
		t.Errorf("statistics differ (NaN must stay the double column's maximum):\n%v\n%v", res.Columns, want.Columns)
	}
}

func TestCopyPages_RefusesWhatWriterWouldNotWrite(t *testing.T) {
	schema := copySchema()
	names := []string{"id", "s", "i", "d", "ok", "blob"}
	zstdV1, rows := foreignCopyFile(t, 4000, 1, parquet.Compression(&parquet.Zstd))
	batch := flatBatchOf(t, schema, rows)
	for _, c := range []struct {
		name    string
		file    []byte
		schema  *types.StructType
		opts    WriterOptions
		footer  bool // PagesCopyable already says no
		wantErr bool
	}{
		{name: "another codec", file: zstdV1, schema: schema, opts: WriterOptions{Codec: "snappy"}, footer: true},
		{name: "a conversion (int stored, long wanted)", file: zstdV1, schema: retype(schema, "i", types.TypeLong), footer: true},
		{name: "nullability (required wanted, optional stored)", file: zstdV1, schema: renull(schema, "s", false), footer: true},
		{name: "data page v2", file: must(foreignCopyFile(t, 4000, 2, parquet.Compression(&parquet.Zstd))), schema: schema},
		{name: "a DELTA encoding", file: deltaEncodedFile(t, rows), schema: schema, footer: true},
	} {
		t.Run(c.name, func(t *testing.T) {
			src := openBytes(t, c.file)
			if got := PagesCopyable(src, c.schema, names, c.opts); got == c.footer {
				t.Errorf("PagesCopyable = %v", got)
			}
			var buf memWriter
			w, err := NewWriter(&buf, c.schema, c.opts)
			if err != nil {
				t.Fatal(err)
			}
			err = w.CopyPages(context.Background(), src, names, batch, 0)
			if !errors.Is(err, ErrPagesNotCopyable) {
				t.Fatalf("CopyPages: %v, want ErrPagesNotCopyable", err)
			}
			if _, err := w.Close(); err == nil {
				t.Error("the writer closes a file after a failed copy")
			}
		})
	}
	// Too few decoded rows for the file.
	var buf memWriter
	w, err := NewWriter(&buf, schema, WriterOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if err := w.CopyPages(context.Background(), openBytes(t, zstdV1), names, batch, 1); err == nil {
		t.Error("CopyPages copies a file whose rows the batch does not all hold")
	}
}

// deltaEncodedFile stores rows with DELTA_BINARY_PACKED ids and DELTA_LENGTH_BYTE_ARRAY blobs.
func deltaEncodedFile(t *testing.T, rows []types.Struct) []byte {
	t.Helper()
	type rec struct {
		ID   int64    `parquet:"id,delta"`
		S    *string  `parquet:"s,optional"`
		I    *int32   `parquet:"i,optional"`
		D    *float64 `parquet:"d,optional"`
		OK   *bool    `parquet:"ok,optional"`
		Blob []byte   `parquet:"blob,optional"`
	}
	var recs []rec
	for _, r := range rows {
		x := rec{ID: r[0].(int64)}
		if v, ok := r[1].(string); ok {
			x.S = &v
		}
		if v, ok := r[2].(int32); ok {
			x.I = &v
		}
		if v, ok := r[3].(float64); ok {
			x.D = &v
		}
		if v, ok := r[4].(bool); ok {
			x.OK = &v
		}
		if v, ok := r[5].([]byte); ok {
			x.Blob = v
		}
		recs = append(recs, x)
	}
	var buf bytes.Buffer
	w := parquet.NewGenericWriter[rec](&buf, parquet.DataPageVersion(1), parquet.Compression(&parquet.Zstd))
	if _, err := w.Write(recs); err != nil {
		t.Fatal(err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func must[T, U any](v T, _ U) T { return v }

func retype(s *types.StructType, name, typ string) *types.StructType {
	out := &types.StructType{}
	for _, f := range s.Fields {
		c := *f
		if c.Name == name {
			c.Type = types.Primitive(typ)
		}
		out.Fields = append(out.Fields, &c)
	}
	return out
}

func renull(s *types.StructType, name string, nullable bool) *types.StructType {
	out := &types.StructType{}
	for _, f := range s.Fields {
		c := *f
		if c.Name == name {
			c.Nullable = nullable
		}
		out.Fields = append(out.Fields, &c)
	}
	return out
}
