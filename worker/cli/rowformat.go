package cli

import (
	"bufio"
	"encoding/base64"
	"encoding/csv"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// rowSink writes scanned rows in one output format.
type rowSink interface {
	write(rows []types.Struct) error
	close() error
}

// newRowSink returns the sink for --format. Formats:
//
//	jsonl    one JSON object per row, keys = column names, values encoded by jsonValue
//	csv      a header line, then one line per row; null is an empty field, nested values are JSON
//	parquet  one Parquet file with the logical schema (zstd)
func newRowSink(format string, w io.Writer, schema *types.StructType) (rowSink, error) {
	switch format {
	case "jsonl":
		return &jsonlSink{w: bufio.NewWriterSize(w, 1<<16), schema: schema}, nil
	case "csv":
		cw := csv.NewWriter(w)
		header := make([]string, len(schema.Fields))
		for i, f := range schema.Fields {
			header[i] = f.Name
		}
		if err := cw.Write(header); err != nil {
			return nil, err
		}
		return &csvSink{w: cw, schema: schema}, nil
	case "parquet":
		pw, err := parquetio.NewWriter(w, logicalOnly(schema), parquetio.WriterOptions{Codec: "zstd"})
		if err != nil {
			return nil, err
		}
		return &parquetSink{w: pw}, nil
	}
	return nil, badArg("--format %q: use jsonl, csv or parquet", format)
}

// logicalOnly drops column-mapping metadata, so an exported file names columns logically and
// carries no field ids.
func logicalOnly(st *types.StructType) *types.StructType {
	return types.MapFields(st, func(f *types.StructField) *types.StructField {
		return &types.StructField{Name: f.Name, Nullable: f.Nullable}
	}).(*types.StructType)
}

type jsonlSink struct {
	w      *bufio.Writer
	schema *types.StructType
	buf    []byte
}

func (s *jsonlSink) write(rows []types.Struct) error {
	for _, r := range rows {
		s.buf = appendJSON(s.buf[:0], r, s.schema)
		s.buf = append(s.buf, '\n')
		if _, err := s.w.Write(s.buf); err != nil {
			return err
		}
	}
	return nil
}

func (s *jsonlSink) close() error { return s.w.Flush() }

type csvSink struct {
	w      *csv.Writer
	schema *types.StructType
}

func (s *csvSink) write(rows []types.Struct) error {
	rec := make([]string, len(s.schema.Fields))
	for _, r := range rows {
		for i, f := range s.schema.Fields {
			rec[i] = csvValue(r[i], f.Type)
		}
		if err := s.w.Write(rec); err != nil {
			return err
		}
	}
	return nil
}

func (s *csvSink) close() error { s.w.Flush(); return s.w.Error() }

type parquetSink struct{ w *parquetio.Writer }

func (s *parquetSink) write(rows []types.Struct) error { return s.w.Write(rows) }
func (s *parquetSink) close() error                    { _, err := s.w.Close(); return err }

func csvValue(v types.Value, t types.DataType) string {
	switch x := jsonValue(v, t).(type) {
	case nil:
		return ""
	case string:
		return x
	case json.Number:
		return x.String()
	case bool:
		return strconv.FormatBool(x)
	default:
		data, _ := json.Marshal(x)
		return string(data)
	}
}

// jsonValue encodes a logical value canonically for JSON output, without loss:
//
//	integers              numbers (exact, as written: consumers parsing into float64 lose digits past 2^53)
//	float, double         numbers in their shortest round-trip form; NaN, Infinity, -Infinity as strings
//	decimal               strings with exactly the column's scale ("12.50"), never rounded through floats
//	string                strings; binary: base64 (standard, padded)
//	date                  "YYYY-MM-DD"
//	timestamp             RFC 3339 in UTC with microseconds, "2024-01-02T03:04:05.123456Z"
//	timestamp_ntz         the same without zone, "2024-01-02T03:04:05.123456"
//	struct                an object keyed by field name, in schema order
//	array                 an array
//	map                   an object when the keys are strings; otherwise an array of {"key":…,"value":…}
//	variant               {"metadata": base64, "value": base64} (the unshredded binary encoding)
func jsonValue(v types.Value, t types.DataType) any {
	if v == nil {
		return nil
	}
	switch tt := t.(type) {
	case *types.StructType:
		s := v.(types.Struct)
		obj := make(orderedObject, len(tt.Fields))
		for i, f := range tt.Fields {
			obj[i] = kv{f.Name, jsonValue(s[i], f.Type)}
		}
		return obj
	case *types.ArrayType:
		a := v.(types.Array)
		out := make([]any, len(a))
		for i, e := range a {
			out[i] = jsonValue(e, tt.ElementType)
		}
		return out
	case *types.MapType:
		m := v.(types.Map)
		if p, ok := tt.KeyType.(*types.PrimitiveType); ok && p.Name == types.TypeString {
			obj := make(orderedObject, len(m))
			for i, e := range m {
				obj[i] = kv{e.Key.(string), jsonValue(e.Value, tt.ValueType)}
			}
			return obj
		}
		out := make([]any, len(m))
		for i, e := range m {
			out[i] = orderedObject{{"key", jsonValue(e.Key, tt.KeyType)}, {"value", jsonValue(e.Value, tt.ValueType)}}
		}
		return out
	}
	switch x := v.(type) {
	case bool, string:
		return x
	case int8, int16, int32, int64:
		return json.Number(fmt.Sprint(x))
	case float32:
		return jsonFloat(float64(x), 32)
	case float64:
		return jsonFloat(x, 64)
	case types.DecimalValue:
		return x.String()
	case []byte:
		return base64.StdEncoding.EncodeToString(x)
	case types.Date:
		return x.String()
	case types.Timestamp:
		return time.UnixMicro(int64(x)).UTC().Format("2006-01-02T15:04:05.000000Z")
	case types.TimestampNTZ:
		return time.UnixMicro(int64(x)).UTC().Format("2006-01-02T15:04:05.000000")
	case types.VariantValue:
		return orderedObject{{"metadata", base64.StdEncoding.EncodeToString(x.Metadata)}, {"value", base64.StdEncoding.EncodeToString(x.Value)}}
	}
	return fmt.Sprint(v)
}

func jsonFloat(f float64, bits int) any {
	switch {
	case math.IsNaN(f):
		return "NaN"
	case math.IsInf(f, 1):
		return "Infinity"
	case math.IsInf(f, -1):
		return "-Infinity"
	}
	return json.Number(strconv.FormatFloat(f, 'g', -1, bits))
}

// orderedObject is a JSON object that keeps its keys in order (schema order).
type orderedObject []kv

type kv struct {
	k string
	v any
}

func (o orderedObject) MarshalJSON() ([]byte, error) {
	buf := []byte{'{'}
	for i, e := range o {
		if i > 0 {
			buf = append(buf, ',')
		}
		k, err := json.Marshal(e.k)
		if err != nil {
			return nil, err
		}
		v, err := json.Marshal(e.v)
		if err != nil {
			return nil, err
		}
		buf = append(append(append(buf, k...), ':'), v...)
	}
	return append(buf, '}'), nil
}
