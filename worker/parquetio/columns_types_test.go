package parquetio

import (
	"bytes"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/parquet-go/parquet-go"
	"github.com/parquet-go/parquet-go/format"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// typedRecord has every primitive the columnar reader decodes, with nulls, in the stored forms
// other writers use: INT32 of 8 bits (parquet-go miscounts its int16 pages, so shorts are read
// from INT32 below), dates, timestamps of three units (INT96 timestamps come
// from Spark's files in the conformance corpus, TestColumns_MatchRowsOnEveryConformanceFile).
type typedRecord struct {
	I8     int8       `parquet:"i8"`
	I32    int32      `parquet:"i32"`
	I64    *int64     `parquet:"i64,optional"`
	U32    uint32     `parquet:"u32"`
	F32    *float32   `parquet:"f32,optional"`
	F64    float64    `parquet:"f64"`
	B      *bool      `parquet:"b,optional"`
	S      *string    `parquet:"s,optional"`
	Bin    []byte     `parquet:"bin,optional"`
	Day    *int32     `parquet:"day,optional,date"`
	Micros *time.Time `parquet:"micros,optional,timestamp(microsecond)"`
	Millis time.Time  `parquet:"millis,timestamp(millisecond)"`
	Nanos  *time.Time `parquet:"nanos,optional,timestamp(nanosecond)"`
}

func typedRecords(n int) []typedRecord {
	recs := make([]typedRecord, n)
	for i := range recs {
		r := &recs[i]
		r.I8, r.I32, r.U32, r.F64 = int8(i*37), int32(i*7919-1e6), uint32(i)*2654435761, float64(i)/7
		r.Millis = time.UnixMilli(int64(i)*86_399_001 - 5e12).UTC()
		// Few distinct values in some columns (dictionary pages), many in others (plain).
		if i%5 != 0 {
			v64, f, b := int64(i)*1_000_000_007, float32(i%9)/4, i%3 == 0
			r.I64, r.F32, r.B = &v64, &f, &b
		}
		if i%4 != 1 {
			s := fmt.Sprintf("name-%d", i%50)
			day := int32(i%20000 - 10000)
			us := time.UnixMicro(int64(i)*3_600_000_123 - 1e15).UTC()
			ns := time.Unix(0, int64(i)*1_000_000_999-7).UTC()
			r.S, r.Day, r.Micros, r.Nanos, r.Bin = &s, &day, &us, &ns, []byte{byte(i), 0, byte(i >> 8)}
		}
	}
	return recs
}

func TestColumns_DecodeEveryPrimitiveAsRowsDoes(t *testing.T) {
	own := structOf(
		field("i8", prim(types.TypeByte), false),
		field("i32", prim(types.TypeInteger), false), field("i64", prim(types.TypeLong), true),
		field("u32", prim(types.TypeLong), false), field("f32", prim(types.TypeFloat), true),
		field("f64", prim(types.TypeDouble), false), field("b", prim(types.TypeBoolean), true),
		field("s", prim(types.TypeString), true), field("bin", prim(types.TypeBinary), true),
		field("day", prim(types.TypeDate), true), field("micros", prim(types.TypeTimestamp), true),
		field("millis", prim(types.TypeTimestamp), false), field("nanos", prim(types.TypeTimestampNTZ), true),
	)
	// Delta type widening, as the row reader applies it.
	widened := structOf(
		field("i8", prim(types.TypeLong), false),
		field("i32", prim(types.TypeDouble), false), field("i64", prim(types.TypeDouble), true),
		field("f32", prim(types.TypeDouble), true), field("day", prim(types.TypeTimestampNTZ), true),
		field("millis", prim(types.TypeTimestampNTZ), false), field("absent", prim(types.TypeDouble), true),
	)
	// Narrowing reads the row reader performs by truncation (byte and short from 32 bits), and
	// other widths of one column: a schema names a stored column once.
	narrowed := structOf(field("i32", prim(types.TypeByte), false), field("u32", prim(types.TypeLong), false))
	shorts := structOf(field("i32", prim(types.TypeShort), false), field("i8", prim(types.TypeInteger), false))
	shortAsLong := structOf(field("i8", prim(types.TypeShort), false), field("i32", prim(types.TypeLong), false))
	recs := typedRecords(3000)
	for _, version := range []int{1, 2} {
		for _, dict := range []bool{false, true} {
			t.Run(fmt.Sprintf("v%d/dictionary=%v", version, dict), func(t *testing.T) {
				opts := []parquet.WriterOption{parquet.DataPageVersion(version), parquet.PageBufferSize(2048)}
				if !dict {
					// parquet-go dictionary-encodes only the columns tagged dict; with the tags
					// off every page is plain. With dict, re-tag through a schema of its own.
					opts = append(opts, parquet.MaxRowsPerRowGroup(1100))
				} else {
					opts = append(opts, dictionarySchema(t))
				}
				var buf bytes.Buffer
				w := parquet.NewGenericWriter[typedRecord](&buf, opts...)
				if _, err := w.Write(recs); err != nil {
					t.Fatal(err)
				}
				if err := w.Close(); err != nil {
					t.Fatal(err)
				}
				f := openBytes(t, buf.Bytes())
				got := readAll(t, f, own, ReadOptions{})
				if len(got) != len(recs) || got[1][8] != nil || got[0][2] != nil || got[2][0] != int8(74) {
					t.Fatalf("the row reader reads %d rows, first %v: the file is not what the test wrote", len(got), got[:3])
				}
				dictChunks := 0
				for _, c := range f.metadata().RowGroups[0].Columns {
					if slices.Contains(c.MetaData.Encoding, format.RLEDictionary) {
						dictChunks++
					}
				}
				if dict != (dictChunks > len(own.Fields)/2) {
					t.Fatalf("%d of %d column chunks dictionary encoded", dictChunks, len(own.Fields))
				}
				for _, schema := range []*types.StructType{own, widened, narrowed, shorts, shortAsLong} {
					assertColumnsMatchRows(t, f, schema, 1, 333, 4096)
				}
			})
		}
	}
}

// dictionarySchema is typedRecord's schema with every column dictionary encoded.
func dictionarySchema(t *testing.T) *parquet.Schema {
	t.Helper()
	base := parquet.SchemaOf(typedRecord{})
	group := parquet.Group{}
	for _, f := range base.Fields() {
		group[f.Name()] = parquet.Encoded(f, &parquet.RLEDictionary)
	}
	return parquet.NewSchema("typed", group)
}
