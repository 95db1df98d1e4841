package format

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// SampleRows is how many rows of a batch inference looks at (per file, up to SampleFiles files).
const (
	SampleRows  = 1000
	SampleFiles = 10
)

var (
	tString  = types.Primitive(types.TypeString)
	tLong    = types.Primitive(types.TypeLong)
	tDouble  = types.Primitive(types.TypeDouble)
	tBool    = types.Primitive(types.TypeBoolean)
	tDate    = types.Primitive(types.TypeDate)
	tTimesta = types.Primitive(types.TypeTimestamp)
)

// Infer derives a table schema from the first files of a batch: Parquet files' own schema (the first
// file's, exactly), JSON's and CSV's from a sample of their rows. With InferColumnTypes, JSON numbers
// become long or double and booleans boolean, nested objects structs and arrays arrays; CSV fields
// are typed long, double, boolean, date or timestamp when every sampled value parses as one (else
// string). Without it every top-level column is a string. All inferred columns are nullable.
func Infer(ctx context.Context, store storage.Store, files []source.File, uri func(string) string, o *Options) (*types.StructType, error) {
	if len(files) == 0 {
		return nil, errors.New("no files to infer a schema from")
	}
	if o.Format == Parquet {
		ra, err := store.Open(ctx, files[0].Key)
		if err != nil {
			return nil, &Error{File: uri(files[0].Key), Err: fmt.Errorf("open for schema inference: %w", err)}
		}
		defer ra.Close()
		f, err := parquetio.Open(ctx, ra)
		if err != nil {
			return nil, &Error{File: uri(files[0].Key), Err: err}
		}
		st, err := f.Schema()
		if err != nil {
			return nil, &Error{File: uri(files[0].Key), Err: err}
		}
		return types.MapFields(st, func(f *types.StructField) *types.StructField {
			return &types.StructField{Name: f.Name, Type: f.Type, Nullable: true} // drop field ids: the table assigns its own
		}).(*types.StructType), nil
	}
	acc := &types.StructType{}
	for _, f := range files[:min(len(files), SampleFiles)] {
		if err := sampleFile(ctx, store, f, uri(f.Key), o, acc); err != nil {
			return nil, err
		}
	}
	if len(acc.Fields) == 0 {
		return nil, &Error{File: uri(files[0].Key), Err: errors.New("no columns found to create the table from")}
	}
	for _, f := range acc.Fields {
		if f.Type == nil {
			f.Type = tString // only nulls sampled
		}
		if !o.InferColumnTypes {
			f.Type = tString
		}
		fixNulls(f.Type)
	}
	if o.Evolution == Rescue && acc.Field(RescuedColumn) == nil {
		acc.Fields = append(acc.Fields, &types.StructField{Name: RescuedColumn, Type: tString, Nullable: true})
	}
	return acc, nil
}

// fixNulls turns the element/field types that saw only nulls into strings.
func fixNulls(t types.DataType) {
	switch tt := t.(type) {
	case *types.StructType:
		for _, f := range tt.Fields {
			if f.Type == nil {
				f.Type = tString
			}
			fixNulls(f.Type)
		}
	case *types.ArrayType:
		if tt.ElementType == nil {
			tt.ElementType = tString
		}
		fixNulls(tt.ElementType)
	}
}

func sampleFile(ctx context.Context, store storage.Store, f source.File, uri string, o *Options, acc *types.StructType) error {
	ra, err := store.Open(ctx, f.Key)
	if err != nil {
		if errors.Is(err, storage.ErrNotFound) {
			return &Error{File: uri, Err: fmt.Errorf("the file was deleted after it was listed: %w", err)}
		}
		return fmt.Errorf("open %s: %w", uri, err)
	}
	defer ra.Close()
	body, err := decompress(io.NewSectionReader(ra, 0, ra.Size()), f.Key, uri, ra.Size())
	if err != nil {
		return err
	}
	defer body.Close()
	if o.Format == CSV {
		return sampleCSV(body, uri, o, acc)
	}
	br := bufio.NewReaderSize(body, readBuffer(body))
	var dec *json.Decoder
	if o.MultiLine {
		dec = json.NewDecoder(br)
	}
	for n := 0; n < SampleRows; {
		var data []byte
		if dec == nil {
			line, err := br.ReadBytes('\n')
			if len(bytes.TrimSpace(line)) == 0 {
				if err != nil {
					break
				}
				continue
			}
			data = line
		}
		var src *json.Decoder
		if dec != nil {
			src = dec
		} else {
			src = json.NewDecoder(bytes.NewReader(data))
		}
		src.UseNumber()
		v, err := orderedValue(src)
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return nil // the read pass reports syntax errors with their row
		}
		objs := []any{v}
		if arr, ok := v.([]any); ok && dec != nil {
			objs = arr
		}
		for _, obj := range objs {
			if kv, ok := obj.(orderedObject); ok {
				mergeObject(acc, kv, o)
				n++
			}
		}
		if dec != nil && !dec.More() {
			break
		}
	}
	return nil
}

// orderedObject is a JSON object with its keys in file order (inference keeps the column order).
type orderedObject []orderedField

type orderedField struct {
	key string
	val any
}

func orderedValue(dec *json.Decoder) (any, error) {
	tok, err := dec.Token()
	if err != nil {
		return nil, err
	}
	switch t := tok.(type) {
	case json.Delim:
		switch t {
		case '{':
			var obj orderedObject
			for dec.More() {
				kt, err := dec.Token()
				if err != nil {
					return nil, err
				}
				v, err := orderedValue(dec)
				if err != nil {
					return nil, err
				}
				obj = append(obj, orderedField{fmt.Sprint(kt), v})
			}
			_, err := dec.Token()
			return obj, err
		case '[':
			arr := []any{}
			for dec.More() {
				v, err := orderedValue(dec)
				if err != nil {
					return nil, err
				}
				arr = append(arr, v)
			}
			_, err := dec.Token()
			return arr, err
		}
	}
	return tok, nil
}

// mergeObject widens acc by one object's fields (matched case-insensitively).
func mergeObject(acc *types.StructType, obj orderedObject, o *Options) {
	for _, f := range obj {
		t := inferJSON(f.val, o)
		var cur *types.StructField
		for _, g := range acc.Fields {
			if strings.EqualFold(g.Name, f.key) {
				cur = g
				break
			}
		}
		if cur == nil {
			acc.Fields = append(acc.Fields, &types.StructField{Name: f.key, Type: t, Nullable: true})
			continue
		}
		cur.Type = mergeTypes(cur.Type, t)
	}
}

// inferJSON is the type of one JSON value (nil for null: unknown yet).
func inferJSON(v any, o *Options) types.DataType {
	switch x := v.(type) {
	case nil:
		return nil
	case bool:
		return tBool
	case json.Number:
		if _, err := strconv.ParseInt(string(x), 10, 64); err == nil {
			return tLong
		}
		return tDouble
	case string:
		return tString
	case orderedObject:
		st := &types.StructType{}
		mergeObject(st, x, o)
		return st
	case map[string]any:
		st := &types.StructType{}
		var obj orderedObject
		for k, v := range x {
			obj = append(obj, orderedField{k, v})
		}
		mergeObject(st, obj, o)
		return st
	case []any:
		var et types.DataType
		for _, e := range x {
			et = mergeTypes(et, inferJSON(e, o))
		}
		return &types.ArrayType{ElementType: et, ContainsNull: true}
	}
	return tString
}

// mergeTypes is the narrowest type holding both (nil stands for "only nulls so far").
func mergeTypes(a, b types.DataType) types.DataType {
	switch {
	case a == nil:
		return b
	case b == nil:
		return a
	}
	pa, okA := a.(*types.PrimitiveType)
	pb, okB := b.(*types.PrimitiveType)
	if okA && okB {
		switch {
		case pa.Name == pb.Name:
			return a
		case (pa.Name == types.TypeLong && pb.Name == types.TypeDouble) || (pa.Name == types.TypeDouble && pb.Name == types.TypeLong):
			return tDouble
		case (pa.Name == types.TypeDate && pb.Name == types.TypeTimestamp) || (pa.Name == types.TypeTimestamp && pb.Name == types.TypeDate):
			return tTimesta
		}
		return tString
	}
	if sa, ok := a.(*types.StructType); ok {
		if sb, ok := b.(*types.StructType); ok {
			for _, f := range sb.Fields {
				if g := fieldFold(sa, f.Name); g != nil {
					g.Type = mergeTypes(g.Type, f.Type)
				} else {
					sa.Fields = append(sa.Fields, f)
				}
			}
			return sa
		}
	}
	if aa, ok := a.(*types.ArrayType); ok {
		if ab, ok := b.(*types.ArrayType); ok {
			return &types.ArrayType{ElementType: mergeTypes(aa.ElementType, ab.ElementType), ContainsNull: true}
		}
	}
	return tString
}

func fieldFold(st *types.StructType, name string) *types.StructField {
	for _, f := range st.Fields {
		if strings.EqualFold(f.Name, name) {
			return f
		}
	}
	return nil
}

// inferText is the type CSV text parses as (nil for a null).
func (o *Options) inferText(s string, null bool) types.DataType {
	if null {
		return nil
	}
	t := strings.TrimSpace(s)
	if t == "" {
		return tString
	}
	if _, err := strconv.ParseInt(t, 10, 64); err == nil {
		return tLong
	}
	if _, err := strconv.ParseFloat(t, 64); err == nil {
		return tDouble
	}
	if strings.EqualFold(t, "true") || strings.EqualFold(t, "false") {
		return tBool
	}
	if _, err := parseTime(o.dateLayout, t); err == nil {
		return tDate
	}
	if _, err := parseTime(o.tsLayout, t); err == nil {
		return tTimesta
	}
	return tString
}
