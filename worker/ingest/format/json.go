package format

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/parquet-go/jsonlite"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// jsonReader reads newline-delimited JSON (one object per line, blank lines skipped) or, with
// multiLine, one JSON value per file: an object or an array of objects. Lines are parsed with
// github.com/parquet-go/jsonlite (maintained with parquet-go, already a dependency): it keeps object
// keys in order and costs a fraction of encoding/json's decoding into map[string]any, which is
// what dominates a JSON batch.
type jsonReader struct {
	p     *projector
	br    *bufio.Reader
	close func() error
	line  int64
	rows  int64
	multi []*jsonlite.Value // multiLine: the file's objects, consumed in order
	done  bool
	buf   []byte
}

func newJSONReader(body io.Reader, closer func() error, p *projector) (Reader, error) {
	r := &jsonReader{p: p, br: bufio.NewReaderSize(body, readBuffer(body)), close: closer}
	if p.o.MultiLine {
		if err := r.readWhole(); err != nil {
			closer()
			return nil, err
		}
	}
	return r, nil
}

func (r *jsonReader) Rescued() int64 { return r.p.rescued }
func (r *jsonReader) Close() error   { return r.close() }

// readWhole parses a multi-line file, which Spark reads as one value (so it is held whole, as
// Spark holds it).
func (r *jsonReader) readWhole() error {
	data, err := io.ReadAll(r.br)
	if err != nil {
		return r.wrapRead(err)
	}
	if !utf8.Valid(data) {
		return &Error{File: r.p.uri, Err: errors.New("the file is not valid UTF-8: re-encode it as UTF-8")}
	}
	v, err := jsonlite.Parse(string(data))
	if err != nil {
		return &Error{File: r.p.uri, Err: fmt.Errorf("invalid JSON (multiLine JSON holds one object or one array of objects): %v", err)}
	}
	switch v.Kind() {
	case jsonlite.Object:
		r.multi = []*jsonlite.Value{v}
	case jsonlite.Array:
		for e := range v.Array {
			r.multi = append(r.multi, e)
		}
	default:
		return &Error{File: r.p.uri, Err: fmt.Errorf("the file holds a JSON %s, not an object or an array of objects", liteKind(v))}
	}
	if len(r.multi) == 0 {
		return &Error{File: r.p.uri, Err: errors.New("the file holds an empty array: no rows")}
	}
	return nil
}

// syntax names the row and line of a line that does not parse.
func (r *jsonReader) syntax(err error, rc *row) error {
	return &Error{File: r.p.uri, Row: rc.num, Line: rc.line, Err: fmt.Errorf("invalid JSON: %v", err)}
}

func (r *jsonReader) wrapRead(err error) error {
	var fe *Error
	if errors.As(err, &fe) {
		if fe.Line == 0 && !r.p.o.MultiLine {
			fe.Row, fe.Line = r.rows+1, r.line+1
		}
		return fe
	}
	return fmt.Errorf("read %s: %w", r.p.uri, err)
}

// nextLine returns the next non-blank line, or io.EOF.
func (r *jsonReader) nextLine() ([]byte, error) {
	for {
		r.buf = r.buf[:0]
		var line []byte
		for {
			part, err := r.br.ReadSlice('\n')
			if err == nil && len(r.buf) == 0 {
				line = part // the whole line is in the reader's buffer: no copy
				break
			}
			r.buf = append(r.buf, part...)
			if err == bufio.ErrBufferFull {
				continue
			}
			if err == io.EOF && len(r.buf) > 0 {
				break
			}
			if err != nil {
				return nil, err
			}
			break
		}
		r.line++
		if line == nil {
			line = r.buf
		}
		if line = bytes.TrimSpace(line); len(line) > 0 {
			return line, nil
		}
	}
}

func (r *jsonReader) Next() ([]types.Struct, error) {
	if r.done {
		return nil, io.EOF
	}
	var out []types.Struct
	for len(out) < ChunkRows {
		var v *jsonlite.Value
		rc := &row{num: r.rows + 1}
		if r.p.o.MultiLine {
			if int(r.rows) == len(r.multi) {
				break
			}
			v = r.multi[r.rows]
		} else {
			line, err := r.nextLine()
			if err == io.EOF {
				break
			}
			if err != nil {
				return nil, r.wrapRead(err)
			}
			rc.line = r.line
			if !utf8.Valid(line) {
				return nil, &Error{File: r.p.uri, Row: rc.num, Line: rc.line, Err: errors.New("the line is not valid UTF-8: re-encode the file as UTF-8")}
			}
			if v, err = r.parseLine(line, rc); err != nil {
				return nil, err
			}
		}
		rowOut, err := r.convertRow(v, rc)
		if err != nil {
			return nil, err
		}
		out = append(out, rowOut)
		r.rows++
	}
	if len(out) == 0 {
		r.done = true
		if r.rows == 0 {
			return nil, &Error{File: r.p.uri, Err: errors.New("the file has no JSON rows: remove it, or set onBadFile to skip")}
		}
		return nil, io.EOF
	}
	return out, nil
}

// parseLine parses one line of newline-delimited JSON.
func (r *jsonReader) parseLine(line []byte, rc *row) (*jsonlite.Value, error) {
	v, err := jsonlite.Parse(string(line))
	if err != nil {
		if strings.Contains(err.Error(), "after root value") {
			return nil, &Error{File: r.p.uri, Row: rc.num, Line: rc.line, Err: errors.New("more than one JSON value on the line: write one object per line, or set multiLine=true")}
		}
		return nil, r.syntax(err, rc)
	}
	return v, nil
}

// convertRow converts one parsed row into the table schema.
func (r *jsonReader) convertRow(v *jsonlite.Value, rc *row) (types.Struct, error) {
	if v.Kind() != jsonlite.Object {
		return nil, &Error{File: r.p.uri, Row: rc.num, Line: rc.line, Err: fmt.Errorf("the row is a JSON %s, not an object", liteKind(v))}
	}
	out, err := r.p.jsonStruct(v, r.p.schema, nil, rc)
	if err != nil {
		return nil, err
	}
	if err := r.p.finish(rc, out); err != nil {
		return nil, err
	}
	return out, nil
}

// parseRow is parseLine and convertRow: one line through the row path.
func (r *jsonReader) parseRow(line []byte, rc *row) (types.Struct, error) {
	v, err := r.parseLine(line, rc)
	if err != nil {
		return nil, err
	}
	return r.convertRow(v, rc)
}

// liteKind names a value's JSON type for messages.
func liteKind(v *jsonlite.Value) string {
	switch v.Kind() {
	case jsonlite.Null:
		return "null"
	case jsonlite.True, jsonlite.False:
		return "boolean"
	case jsonlite.Number:
		return "number"
	case jsonlite.String:
		return "string"
	case jsonlite.Array:
		return "array"
	}
	return "object"
}

// raw is a value as it stands in the source, for the rescued-data JSON.
func raw(v *jsonlite.Value) json.RawMessage { return json.RawMessage(v.JSON()) }

func joinPath(path []string, name string) string {
	if len(path) == 0 {
		return name
	}
	return strings.Join(path, ".") + "." + name
}

// jsonStruct converts an object into a struct of st; path is the struct's column path.
func (p *projector) jsonStruct(obj *jsonlite.Value, st *types.StructType, path []string, r *row) (types.Struct, error) {
	out := make(types.Struct, len(st.Fields))
	var unknown []string
	var unknownVals []*jsonlite.Value
	for k, v := range obj.Object {
		i := p.field(st, k)
		if i < 0 {
			unknown, unknownVals = append(unknown, k), append(unknownVals, v)
			continue
		}
		f := st.Fields[i]
		col := joinPath(path, f.Name)
		val, err := p.jsonValue(v, f.Type, append(slices.Clip(path), f.Name), r)
		if err != nil {
			var ce *convertError
			if p.o.Evolution == Rescue && errors.As(err, &ce) {
				r.rescueValue(col, raw(v))
				continue
			}
			return nil, p.fail(r, col, err)
		}
		out[i] = val
	}
	if len(unknown) > 0 {
		if err := p.unknownJSON(unknown, unknownVals, path, r); err != nil {
			return nil, err
		}
	}
	if st != p.schema {
		for i, f := range st.Fields {
			if out[i] == nil && !f.Nullable {
				return nil, p.fail(r, joinPath(path, f.Name), errors.New("the field is NOT NULL but the object has no value for it"))
			}
		}
	}
	return out, nil
}

// unknownJSON handles object keys the schema lacks, by the evolution mode.
func (p *projector) unknownJSON(keys []string, vals []*jsonlite.Value, path []string, r *row) error {
	switch p.o.Evolution {
	case None:
		return nil
	case Rescue:
		for i, k := range keys {
			r.rescueValue(joinPath(path, k), raw(vals[i]))
		}
		return nil
	}
	e := &NewColumnsError{File: p.uri}
	for i, k := range keys {
		e.Columns = append(e.Columns, NewColumn{Path: append(slices.Clone(path), k), Field: &types.StructField{Name: k, Type: inferLite(vals[i]), Nullable: true}})
	}
	slices.SortFunc(e.Columns, func(a, b NewColumn) int { return strings.Compare(a.Field.Name, b.Field.Name) })
	return e
}

// inferLite is the type of one JSON value for a new column (string when only null is known).
func inferLite(v *jsonlite.Value) types.DataType {
	dec := json.NewDecoder(strings.NewReader(v.JSON()))
	dec.UseNumber()
	var x any
	if err := dec.Decode(&x); err == nil {
		if t := inferJSON(x, nil); t != nil {
			fixNulls(t)
			return t
		}
	}
	return tString
}

func (p *projector) jsonValue(v *jsonlite.Value, t types.DataType, path []string, r *row) (types.Value, error) {
	if v.Kind() == jsonlite.Null {
		return nil, nil
	}
	switch tt := t.(type) {
	case *types.PrimitiveType:
		switch v.Kind() {
		case jsonlite.Number:
			return p.o.jsonNumber(v.JSON(), tt)
		case jsonlite.String:
			return p.o.jsonString(v.String(), tt)
		case jsonlite.True, jsonlite.False:
			b := v.Kind() == jsonlite.True
			switch tt.Name {
			case types.TypeBoolean:
				return b, nil
			case types.TypeString:
				return fmt.Sprint(b), nil
			}
			return nil, badValue(fmt.Sprint(b), t, "a boolean cannot be read into this type")
		default:
			if tt.Name == types.TypeString {
				return v.JSON(), nil
			}
			return nil, badValue(liteKind(v), t, "a JSON "+liteKind(v)+" cannot be read into this type")
		}
	case *types.StructType:
		if v.Kind() != jsonlite.Object {
			return nil, &convertError{fmt.Sprintf("want a JSON object for %s, got a JSON %s", t, liteKind(v))}
		}
		return p.jsonStruct(v, tt, path, r)
	case *types.ArrayType:
		if v.Kind() != jsonlite.Array {
			return nil, &convertError{fmt.Sprintf("want a JSON array for %s, got a JSON %s", t, liteKind(v))}
		}
		out := make(types.Array, 0, v.Len())
		i := 0
		for e := range v.Array {
			if e.Kind() == jsonlite.Null && !tt.ContainsNull {
				return nil, &convertError{fmt.Sprintf("element %d is null but the array's elements are NOT NULL", i)}
			}
			ev, err := p.jsonValue(e, tt.ElementType, path, r)
			if err != nil {
				return nil, err
			}
			out = append(out, ev)
			i++
		}
		return out, nil
	case *types.MapType:
		if v.Kind() != jsonlite.Object {
			return nil, &convertError{fmt.Sprintf("want a JSON object for %s, got a JSON %s", t, liteKind(v))}
		}
		kt, ok := tt.KeyType.(*types.PrimitiveType)
		if !ok {
			return nil, &convertError{fmt.Sprintf("JSON object keys are text and cannot be read as %s", tt.KeyType)}
		}
		out := make(types.Map, 0, v.Len())
		for k, e := range v.Object {
			kv, err := p.o.parseText(k, kt)
			if err != nil {
				return nil, err
			}
			if e.Kind() == jsonlite.Null && !tt.ValueContainsNull {
				return nil, &convertError{fmt.Sprintf("the value of key %q is null but the map's values are NOT NULL", k)}
			}
			vv, err := p.jsonValue(e, tt.ValueType, path, r)
			if err != nil {
				return nil, err
			}
			out = append(out, types.MapEntry{Key: kv, Value: vv})
		}
		return out, nil
	}
	return nil, &convertError{fmt.Sprintf("type %s cannot be ingested", t)}
}
