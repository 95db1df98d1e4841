package format

import (
	"errors"
	"fmt"
	"io"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// flatSchema has one column of every type the columnar path takes.
func flatSchema() *types.StructType {
	col := func(name, typ string, nullable bool) *types.StructField {
		return &types.StructField{Name: name, Type: types.Primitive(typ), Nullable: nullable}
	}
	return &types.StructType{Fields: []*types.StructField{
		col("id", types.TypeLong, false), col("s", types.TypeString, true), col("i", types.TypeInteger, true),
		col("sh", types.TypeShort, true), col("b", types.TypeByte, true), col("d", types.TypeDouble, true),
		col("f", types.TypeFloat, true), col("ok", types.TypeBoolean, true), col("day", types.TypeDate, true),
		col("ts", types.TypeTimestamp, true), col("ntz", types.TypeTimestampNTZ, true), col("bin", types.TypeBinary, true),
	}}
}

// readBoth reads the same text through the row path (Next) and the columnar path (NextColumns)
// and returns the rows of each (the columnar ones turned back into logical values) and the errors.
func readBoth(t *testing.T, format, text string, schema *types.StructType, kv map[string]string, ev Evolution) (rows, cols []types.Struct, rowErr, colErr error) {
	t.Helper()
	o, err := ParseOptions(format, kv, ev)
	if err != nil {
		t.Fatal(err)
	}
	open := func() Reader {
		p := newProjector("file:///src/f", schema, &o)
		var rd Reader
		var err error
		if format == CSV {
			var cr Reader
			if cr, err = newCSVReader(strings.NewReader(text), func() error { return nil }, p); err == nil {
				rd = &csvColumnReader{csvReader: cr.(*csvReader), c: newColumnar(p)}
			}
		} else {
			var jr Reader
			if jr, err = newJSONReader(strings.NewReader(text), func() error { return nil }, p); err == nil {
				rd = newJSONColumnReader(jr.(*jsonReader))
			}
		}
		if err != nil {
			rd = &failing{err}
		}
		return rd
	}
	rd := open()
	for {
		chunk, err := rd.Next()
		if err != nil {
			if err != io.EOF {
				rowErr = err
			}
			break
		}
		rows = append(rows, chunk...)
	}
	cr, ok := open().(ColumnReader)
	if !ok {
		return rows, nil, rowErr, errors.New("no column reader")
	}
	if f, ok := cr.(*failing); ok {
		return rows, nil, rowErr, f.err
	}
	if !cr.Columnar() {
		t.Fatalf("%s reader over %s is not columnar", format, schema)
	}
	for {
		b, err := cr.NextColumns()
		if err != nil {
			if err != io.EOF {
				colErr = err
			}
			break
		}
		for r := range b.Rows {
			row := make(types.Struct, len(schema.Fields))
			for i, f := range schema.Fields {
				row[i] = b.Cols[i].Value(f.Type, r)
			}
			cols = append(cols, row)
		}
	}
	return rows, cols, rowErr, colErr
}

type failing struct{ err error }

func (f *failing) Next() ([]types.Struct, error)              { return nil, f.err }
func (f *failing) Rescued() int64                             { return 0 }
func (f *failing) Close() error                               { return nil }
func (f *failing) Columnar() bool                             { return true }
func (f *failing) NextColumns() (*parquetio.FlatBatch, error) { return nil, f.err }

func sameRows(t *testing.T, name string, rows, cols []types.Struct, rowErr, colErr error) {
	t.Helper()
	if fmt.Sprint(rowErr) != fmt.Sprint(colErr) {
		t.Errorf("%s: row path error %v, columnar path error %v", name, rowErr, colErr)
		return
	}
	if rowErr != nil {
		return
	}
	if len(rows) != len(cols) {
		t.Errorf("%s: %d rows on the row path, %d on the columnar path", name, len(rows), len(cols))
		return
	}
	for i := range rows {
		if a, b := fmt.Sprintf("%#v", rows[i]), fmt.Sprintf("%#v", cols[i]); a != b {
			t.Errorf("%s: row %d\nrow path: %s\ncolumnar: %s", name, i+1, a, b)
		}
	}
}

func TestColumnar_JSONLinesGiveTheRowPathsRowsAndErrors(t *testing.T) {
	schema := flatSchema()
	for _, tc := range []struct{ name, text string }{
		{"every type", `{"id":1,"s":"a","i":-7,"sh":300,"b":-128,"d":1.5e3,"f":0.25,"ok":true,"day":"2024-02-29","ts":"2024-01-01 10:00:00.123456","ntz":"2024-01-01T10:00:00Z","bin":"aGk="}` + "\n"},
		{"nulls and missing keys", `{"id":2,"s":null,"ok":false}` + "\n" + `{"id":3}` + "\n\n  \n" + `{"id":4,"ts":null,"d":null}` + "\n"},
		{"zones and fractions", `{"id":5,"ts":"2024-01-01T10:00:00+02:00","ntz":"2024-01-01 10:00:00.5-03:30"}` + "\n" + `{"id":6,"ts":"1969-12-31T23:59:59.9999999Z"}` + "\n" + `{"id":7,"ts":"2024-01-01T10:00"}` + "\n"},
		{"numbers into strings and text into numbers", `{"id":8,"s":12.50,"i":"42","d":"NaN","ok":"TRUE","day":" 2024-01-02 "}` + "\n"},
		{"escapes and nesting go through the row path", `{"id":9,"s":"tab\there \"q\" \u00e9"}` + "\n" + `{"id":10,"s":"é ünïcode"}` + "\n"},
		{"key in another case", `{"ID":11,"S":"x"}` + "\n"},
		{"duplicate key: the last one wins", `{"id":12,"s":"a","s":"b"}` + "\n"},
		{"whitespace", "  { \"id\" : 13 , \"s\" : \"x\" }  \r\n"},
		{"integer out of range", `{"id":14,"b":128}` + "\n"},
		{"long of 19 digits", `{"id":9223372036854775807,"i":2147483647}` + "\n"},
		{"a fraction into an integer", `{"id":15,"i":1.5}` + "\n"},
		{"bad date", `{"id":16,"day":"2023-02-29"}` + "\n"},
		{"bad timestamp", `{"id":17,"ts":"2024-13-01 10:00:00"}` + "\n"},
		{"NOT NULL missing", `{"s":"no id"}` + "\n"},
		{"NOT NULL null", `{"id":null}` + "\n"},
		{"boolean into a number", `{"id":18,"i":true}` + "\n"},
		{"object into a string", `{"id":19,"s":{"a":1}}` + "\n"},
		{"array into a number", `{"id":20,"i":[1]}` + "\n"},
		{"two values on a line", `{"id":21}{"id":22}` + "\n"},
		{"not an object", `[1,2]` + "\n"},
		{"invalid JSON", `{"id":23,}` + "\n"},
		{"leading zero", `{"id":023}` + "\n"},
		{"number into a timestamp", `{"id":24,"ts":1700000000.5}` + "\n"},
		{"empty file", "\n\n"},
	} {
		rows, cols, rowErr, colErr := readBoth(t, JSON, tc.text, schema, nil, None)
		sameRows(t, tc.name, rows, cols, rowErr, colErr)
	}
	// Unknown keys: reported under failOnNewColumns, dropped under none, by both paths.
	for _, ev := range []Evolution{FailOnNewColumns, None, AddNewColumns} {
		rows, cols, rowErr, colErr := readBoth(t, JSON, `{"id":1,"extra":"x"}`+"\n", schema, nil, ev)
		sameRows(t, "unknown key, "+string(ev), rows, cols, rowErr, colErr)
		if ev == FailOnNewColumns && colErr == nil {
			t.Errorf("an unknown key under %s was not reported", ev)
		}
	}
}

func TestColumnar_CSVRecordsGiveTheRowPathsRowsAndErrors(t *testing.T) {
	schema := flatSchema()
	header := "id,s,i,sh,b,d,f,ok,day,ts,ntz,bin\n"
	for _, tc := range []struct {
		name, text string
		kv         map[string]string
	}{
		{"every type", header + "1,a,-7,300,-128,1.5e3,0.25,true,2024-02-29,2024-01-01 10:00:00.123456,2024-01-01T10:00:00Z,hi\n", nil},
		{"empty fields are null except for strings", header + "2,,,,,,,,,,,\n3,\"\",,,,,,,,,,\"\"\n", nil},
		{"nullValue", header + "4,NA,NA,,,NA,,,,NA,,\n", map[string]string{"nullValue": "NA"}},
		{"quoted null text is a value", header + "5,\"NA\",,,,,,,,,,\n", map[string]string{"nullValue": "NA"}},
		{"spaces, signs and other spellings", header + "6, x , 42 ,+7,-0, 1e3 ,Inf,TRUE, 2024-01-02 ,2024-01-01T10:00+01:00,2024-01-01,\n", nil},
		{"long of 19 digits", header + "9223372036854775807,,2147483647,,,,,,,,,\n", nil},
		{"integer out of range", header + "7,,,40000,,,,,,,,\n", nil},
		{"not a number", header + "8,,,,,x1,,,,,,\n", nil},
		{"bad boolean", header + "9,,,,,,,yes,,,,\n", nil},
		{"bad timestamp", header + "10,,,,,,,,,2024-01-01 25:00:00,,\n", nil},
		{"NOT NULL", header + ",x,,,,,,,,,,\n", nil},
		{"field count", header + "11,x\n", nil},
		{"quoted and multi-line", header + "12,\"a,\"\"b\"\"\nc\",,,,,,,,,,\n", nil},
		{"columns in another order, some absent", "s,ID,ts\nx,13,2024-05-06 07:08:09\n", nil},
		{"timestamp format", header + "14,,,,,,,,,06/05/2024 07:08,,\n", map[string]string{"timestampFormat": "dd/MM/yyyy HH:mm"}},
		{"date format", header + "15,,,,,,,,06/05/2024,,,\n", map[string]string{"dateFormat": "dd/MM/yyyy"}},
		{"header only", header, nil},
	} {
		kv := map[string]string{"header": "true"}
		for k, v := range tc.kv {
			kv[k] = v
		}
		rows, cols, rowErr, colErr := readBoth(t, CSV, tc.text, schema, kv, None)
		sameRows(t, tc.name, rows, cols, rowErr, colErr)
	}
}

// The timestamp scanner agrees with time.Parse on the ISO layouts, value for value.
func TestParseISOTimestamp_AgreesWithTimeParse(t *testing.T) {
	o, _ := ParseOptions(CSV, nil, "")
	for _, s := range []string{
		"2024-01-01 10:00:00", "2024-01-01T10:00:00", "2024-01-01T10:00:00Z", "2024-01-01 10:00:00.1+05:45",
		"1900-03-01T00:00:00.000001-00:30", "0001-01-01T00:00:00Z", "9999-12-31 23:59:59.999999999",
		"1969-12-31T23:59:59.5Z", "2000-02-29 12:00:00", "2024-06-30T23:59:59.123456789+14:00",
	} {
		wall, off, ok := parseISOTimestamp([]byte(s))
		if !ok {
			t.Errorf("%q: not scanned", s)
			continue
		}
		tm, err := parseTime(o.tsLayout, s)
		if err != nil {
			t.Fatalf("%q: %v", s, err)
		}
		if got, want := wall-off*1e6, tm.UnixMicro(); got != want {
			t.Errorf("%q: %d µs, time.Parse %d µs (%s)", s, got, want, tm.Format(time.RFC3339Nano))
		}
	}
	for _, s := range []string{"2024-01-01 24:00:00", "2024-02-30 10:00:00", "2024-01-01 10:00:60", "2024-01-01T10:00:00.", "2024-01-01T10:00:00+0200", "2024-01-01 10:00"} {
		if _, _, ok := parseISOTimestamp([]byte(s)); ok {
			t.Errorf("%q: scanned, want it left to time.Parse", s)
		}
	}
}
