package format

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"strings"
	"unicode/utf8"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// jsonReader reads newline-delimited JSON (one object per line, blank lines skipped) or, with
// multiLine, one JSON value per file: an object or an array of objects.
type jsonReader struct {
	p     *projector
	br    *bufio.Reader
	close func() error
	line  int64
	rows  int64
	multi []any // multiLine: the file's objects, consumed in order
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

// readWhole decodes a multi-line file, which Spark reads as one value (so it is held whole, as
// Spark holds it).
func (r *jsonReader) readWhole() error {
	data, err := io.ReadAll(r.br)
	if err != nil {
		return r.wrapRead(err)
	}
	if !utf8.Valid(data) {
		return &Error{File: r.p.uri, Err: errors.New("the file is not valid UTF-8: re-encode it as UTF-8")}
	}
	dec := json.NewDecoder(bytes.NewReader(data))
	dec.UseNumber()
	var v any
	if err := dec.Decode(&v); err != nil {
		return r.syntax(err, data, 0)
	}
	if dec.More() {
		return &Error{File: r.p.uri, Err: errors.New("multiLine JSON holds one value (an object or an array of objects), and this file has more: for one object per line, set multiLine=false")}
	}
	switch x := v.(type) {
	case map[string]any:
		r.multi = []any{x}
	case []any:
		r.multi = x
	default:
		return &Error{File: r.p.uri, Err: fmt.Errorf("the file holds a JSON %s, not an object or an array of objects", jsonKind(v))}
	}
	if len(r.multi) == 0 {
		return &Error{File: r.p.uri, Err: errors.New("the file holds an empty array: no rows")}
	}
	return nil
}

// syntax turns a decoder error into an Error naming the line it is on.
func (r *jsonReader) syntax(err error, data []byte, firstLine int64) error {
	var se *json.SyntaxError
	line := firstLine
	if errors.As(err, &se) {
		line += int64(bytes.Count(data[:min(int(se.Offset), len(data))], []byte("\n"))) + 1
	} else if firstLine == 0 {
		line = 0
	}
	e := &Error{File: r.p.uri, Line: line, Err: fmt.Errorf("invalid JSON: %v", err)}
	if !r.p.o.MultiLine {
		e.Row = r.rows + 1
	}
	return e
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
		for {
			part, err := r.br.ReadSlice('\n')
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
		if line := bytes.TrimSpace(r.buf); len(line) > 0 {
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
		var v any
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
			dec := json.NewDecoder(bytes.NewReader(line))
			dec.UseNumber()
			if err := dec.Decode(&v); err != nil {
				return nil, r.syntax(err, line, r.line-1)
			}
			if dec.More() {
				return nil, &Error{File: r.p.uri, Row: rc.num, Line: rc.line, Err: errors.New("more than one JSON value on the line: write one object per line, or set multiLine=true")}
			}
		}
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, &Error{File: r.p.uri, Row: rc.num, Line: rc.line, Err: fmt.Errorf("the row is a JSON %s, not an object", jsonKind(v))}
		}
		rowOut, err := r.p.jsonStruct(obj, r.p.schema, nil, rc)
		if err != nil {
			return nil, err
		}
		if err := r.p.finish(rc, rowOut); err != nil {
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

func jsonKind(v any) string {
	switch v.(type) {
	case nil:
		return "null"
	case bool:
		return "boolean"
	case json.Number:
		return "number"
	case string:
		return "string"
	case []any:
		return "array"
	case map[string]any:
		return "object"
	}
	return fmt.Sprintf("%T", v)
}

func joinPath(path []string, name string) string {
	if len(path) == 0 {
		return name
	}
	return strings.Join(path, ".") + "." + name
}

// jsonStruct converts an object into a struct of st; path is the struct's column path.
func (p *projector) jsonStruct(obj map[string]any, st *types.StructType, path []string, r *row) (types.Struct, error) {
	out := make(types.Struct, len(st.Fields))
	var unknown []string
	for k, v := range obj {
		i := p.field(st, k)
		if i < 0 {
			unknown = append(unknown, k)
			continue
		}
		f := st.Fields[i]
		col := joinPath(path, f.Name)
		val, err := p.jsonValue(v, f.Type, append(slices.Clip(path), f.Name), r)
		if err != nil {
			var ce *convertError
			if p.o.Evolution == Rescue && errors.As(err, &ce) {
				r.rescueValue(col, v)
				continue
			}
			return nil, p.fail(r, col, err)
		}
		out[i] = val
	}
	if len(unknown) > 0 {
		slices.Sort(unknown)
		if err := p.unknownJSON(obj, unknown, path, r); err != nil {
			return nil, err
		}
	}
	for i, f := range st.Fields {
		if out[i] == nil && !f.Nullable && !(st == p.schema) {
			return nil, p.fail(r, joinPath(path, f.Name), errors.New("the field is NOT NULL but the object has no value for it"))
		}
	}
	return out, nil
}

// unknownJSON handles object keys the schema lacks, by the evolution mode.
func (p *projector) unknownJSON(obj map[string]any, keys []string, path []string, r *row) error {
	switch p.o.Evolution {
	case None:
		return nil
	case Rescue:
		for _, k := range keys {
			r.rescueValue(joinPath(path, k), obj[k])
		}
		return nil
	}
	e := &NewColumnsError{File: p.uri}
	for _, k := range keys {
		e.Columns = append(e.Columns, NewColumn{Path: append(slices.Clone(path), k), Field: &types.StructField{Name: k, Type: inferJSON(obj[k], p.o), Nullable: true}})
	}
	return e
}

func (p *projector) jsonValue(v any, t types.DataType, path []string, r *row) (types.Value, error) {
	if v == nil {
		return nil, nil
	}
	switch tt := t.(type) {
	case *types.PrimitiveType:
		switch x := v.(type) {
		case json.Number:
			return p.o.jsonNumber(string(x), tt)
		case string:
			return p.o.jsonString(x, tt)
		case bool:
			switch tt.Name {
			case types.TypeBoolean:
				return x, nil
			case types.TypeString:
				return fmt.Sprint(x), nil
			}
			return nil, badValue(fmt.Sprint(x), t, "a boolean cannot be read into this type")
		default:
			if tt.Name == types.TypeString {
				b, _ := json.Marshal(x)
				return string(b), nil
			}
			return nil, badValue(jsonKind(v), t, "a JSON "+jsonKind(v)+" cannot be read into this type")
		}
	case *types.StructType:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, &convertError{fmt.Sprintf("want a JSON object for %s, got a JSON %s", t, jsonKind(v))}
		}
		return p.jsonStruct(obj, tt, path, r)
	case *types.ArrayType:
		arr, ok := v.([]any)
		if !ok {
			return nil, &convertError{fmt.Sprintf("want a JSON array for %s, got a JSON %s", t, jsonKind(v))}
		}
		out := make(types.Array, len(arr))
		for i, e := range arr {
			if e == nil && !tt.ContainsNull {
				return nil, &convertError{fmt.Sprintf("element %d is null but the array's elements are NOT NULL", i)}
			}
			ev, err := p.jsonValue(e, tt.ElementType, path, r)
			if err != nil {
				return nil, err
			}
			out[i] = ev
		}
		return out, nil
	case *types.MapType:
		obj, ok := v.(map[string]any)
		if !ok {
			return nil, &convertError{fmt.Sprintf("want a JSON object for %s, got a JSON %s", t, jsonKind(v))}
		}
		kt, ok := tt.KeyType.(*types.PrimitiveType)
		if !ok {
			return nil, &convertError{fmt.Sprintf("JSON object keys are text and cannot be read as %s", tt.KeyType)}
		}
		out := make(types.Map, 0, len(obj))
		for _, k := range slices.Sorted(maps.Keys(obj)) {
			kv, err := p.o.parseText(k, kt)
			if err != nil {
				return nil, err
			}
			if obj[k] == nil && !tt.ValueContainsNull {
				return nil, &convertError{fmt.Sprintf("the value of key %q is null but the map's values are NOT NULL", k)}
			}
			vv, err := p.jsonValue(obj[k], tt.ValueType, path, r)
			if err != nil {
				return nil, err
			}
			out = append(out, types.MapEntry{Key: kv, Value: vv})
		}
		return out, nil
	}
	return nil, &convertError{fmt.Sprintf("type %s cannot be ingested", t)}
}
