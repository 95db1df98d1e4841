package format

import (
	"errors"
	"io"
	"unicode/utf8"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// jsonColumnReader is the newline-delimited JSON reader with the columnar path. A line that is one
// flat object — keys named exactly as table columns, each once, values that are strings without
// escapes, numbers, booleans or null — is scanned in place into the vectors. Any other line (an
// escape, a nested value, a key in another case or unknown, invalid JSON) goes through the row
// path's parser and conversion (jsonlite, jsonStruct) and its row is appended to the vectors, so
// both paths accept the same input and report the same errors.
type jsonColumnReader struct {
	*jsonReader
	c     *columnar
	exact map[string]int // table column index by exact name
	names []string       // table column names
}

func newJSONColumnReader(r *jsonReader) *jsonColumnReader {
	jr := &jsonColumnReader{jsonReader: r}
	if r.p.o.MultiLine {
		return jr
	}
	if jr.c = newColumnar(r.p); jr.c != nil {
		jr.exact = make(map[string]int, len(r.p.schema.Fields))
		for i, f := range r.p.schema.Fields {
			jr.exact[f.Name] = i
			jr.names = append(jr.names, f.Name)
		}
	}
	return jr
}

func (r *jsonColumnReader) Columnar() bool { return r.c != nil }

func (r *jsonColumnReader) NextColumns() (*parquetio.FlatBatch, error) {
	if r.done {
		return nil, io.EOF
	}
	r.c.begin()
	for r.c.b.Rows < ChunkRows {
		line, err := r.nextLine()
		if err == io.EOF {
			break
		}
		if err != nil {
			return nil, r.wrapRead(err)
		}
		rc := &row{num: r.rows + 1, line: r.line}
		if !utf8.Valid(line) {
			return nil, &Error{File: r.p.uri, Row: rc.num, Line: rc.line, Err: errors.New("the line is not valid UTF-8: re-encode the file as UTF-8")}
		}
		ok, err := r.scanLine(line, rc)
		if err != nil {
			return nil, err
		}
		if !ok {
			r.c.resetRow()
			if err := r.slowLine(line, rc); err != nil {
				return nil, err
			}
		}
		r.rows++
	}
	if r.c.b.Rows == 0 {
		r.done = true
		if r.rows == 0 {
			return nil, &Error{File: r.p.uri, Err: errors.New("the file has no JSON rows: remove it, or set onBadFile to skip")}
		}
		return nil, io.EOF
	}
	return r.c.b, nil
}

// slowLine converts one line through the row path and appends its row.
func (r *jsonColumnReader) slowLine(line []byte, rc *row) error {
	out, err := r.parseRow(line, rc)
	if err != nil {
		return err
	}
	return r.c.appendRow(out)
}

// scanLine converts a line that is one flat object. ok=false (with nothing appended) leaves the
// line to the row path; an error is a value of this line that cannot be converted.
func (r *jsonColumnReader) scanLine(s []byte, rc *row) (bool, error) {
	// Values are converted into the vectors only once the whole line has been scanned: first the
	// fields are located, so that a line handed to the row path leaves no partial row behind.
	type field struct {
		col        int
		start, end int
		kind       byte // '"' string, 'n' number, 't' true, 'f' false, 'z' null
	}
	var buf [32]field
	fields := buf[:0]
	expect := 0
	i := skipWS(s, 0)
	if i >= len(s) || s[i] != '{' {
		return false, nil
	}
	i = skipWS(s, i+1)
	if i < len(s) && s[i] == '}' {
		i++
	} else {
		for {
			if i >= len(s) || s[i] != '"' {
				return false, nil
			}
			ks, ke, ok := scanString(s, i)
			if !ok {
				return false, nil
			}
			// Writers put the keys of every line in the same order, mostly the table's: try the
			// column after the previous key before hashing.
			key := unsafeString(s[ks:ke])
			col, known := expect, false
			if col < len(r.names) && r.names[col] == key {
				known = true
			} else {
				col, known = r.exact[key]
			}
			expect = col + 1
			if !known || r.c.set[col] {
				r.c.resetRow()
				return false, nil // unknown or differently cased key, or a duplicate: the row path decides
			}
			r.c.set[col] = true
			i = skipWS(s, ke+1)
			if i >= len(s) || s[i] != ':' {
				r.c.resetRow()
				return false, nil
			}
			i = skipWS(s, i+1)
			if i >= len(s) {
				r.c.resetRow()
				return false, nil
			}
			f := field{col: col, start: i}
			switch ch := s[i]; {
			case ch == '"':
				vs, ve, ok := scanString(s, i)
				if !ok {
					r.c.resetRow()
					return false, nil
				}
				f.kind, f.start, f.end, i = '"', vs, ve, ve+1
			case ch == '-' || (ch >= '0' && ch <= '9'):
				e, ok := scanNumber(s, i)
				if !ok {
					r.c.resetRow()
					return false, nil
				}
				f.kind, f.end, i = 'n', e, e
			case hasWord(s, i, "true"):
				f.kind, i = 't', i+4
			case hasWord(s, i, "false"):
				f.kind, i = 'f', i+5
			case hasWord(s, i, "null"):
				f.kind, i = 'z', i+4
			default:
				r.c.resetRow()
				return false, nil // an object or an array
			}
			fields = append(fields, f)
			i = skipWS(s, i)
			if i < len(s) && s[i] == ',' {
				i = skipWS(s, i+1)
				continue
			}
			if i < len(s) && s[i] == '}' {
				i++
				break
			}
			r.c.resetRow()
			return false, nil
		}
	}
	if skipWS(s, i) != len(s) {
		r.c.resetRow()
		return false, nil // more after the object: the row path names the error
	}
	// Only values the row path converts the same way are taken here; the rest of the line is left
	// to it (before anything is appended).
	for _, f := range fields {
		name := r.c.prims[f.col].Name
		switch f.kind {
		case 't', 'f':
			if name != types.TypeBoolean {
				r.c.resetRow()
				return false, nil
			}
		case 'n':
			switch name {
			case types.TypeString, types.TypeByte, types.TypeShort, types.TypeInteger, types.TypeLong, types.TypeFloat, types.TypeDouble:
			default:
				r.c.resetRow()
				return false, nil
			}
		case '"':
			if name == types.TypeBinary {
				r.c.resetRow()
				return false, nil
			}
		}
	}
	for _, f := range fields {
		v := &r.c.b.Cols[f.col]
		switch f.kind {
		case 'z':
			r.c.set[f.col] = false // null: endRow appends it (and checks NOT NULL)
		case 't', 'f':
			v.Bool = append(v.Bool, f.kind == 't')
			v.Null = append(v.Null, false)
		case 'n':
			if name := r.c.prims[f.col].Name; name == types.TypeString {
				v.AppendBytes(s[f.start:f.end])
				continue
			}
			if err := r.c.appendText(f.col, s[f.start:f.end]); err != nil {
				r.c.resetRow()
				return false, r.p.fail(rc, r.p.schema.Fields[f.col].Name, err)
			}
		case '"':
			if r.c.prims[f.col].Name == types.TypeString {
				v.AppendBytes(s[f.start:f.end]) // the line is valid UTF-8, and so its strings
				continue
			}
			if err := r.c.appendText(f.col, s[f.start:f.end]); err != nil {
				r.c.resetRow()
				return false, r.p.fail(rc, r.p.schema.Fields[f.col].Name, err)
			}
		}
	}
	return true, r.c.endRow(rc)
}

func skipWS(s []byte, i int) int {
	for i < len(s) && (s[i] == ' ' || s[i] == '\t' || s[i] == '\r' || s[i] == '\n') {
		i++
	}
	return i
}

func hasWord(s []byte, i int, w string) bool {
	return len(s)-i >= len(w) && unsafeString(s[i:i+len(w)]) == w
}

// scanString finds the contents [start, end) of the string whose quote is at s[i]; end is the
// closing quote. Strings with escapes or control characters are not taken (ok=false).
func scanString(s []byte, i int) (start, end int, ok bool) {
	for j := i + 1; j < len(s); j++ {
		switch ch := s[j]; {
		case ch == '"':
			return i + 1, j, true
		case ch == '\\' || ch < 0x20:
			return 0, 0, false
		}
	}
	return 0, 0, false
}

// scanNumber finds the end of the JSON number at s[i], strictly by the JSON grammar:
// -?(0|[1-9][0-9]*)(.[0-9]+)?([eE][+-]?[0-9]+)?
func scanNumber(s []byte, i int) (int, bool) {
	isDigit := func(j int) bool { return j < len(s) && s[j] >= '0' && s[j] <= '9' }
	if i < len(s) && s[i] == '-' {
		i++
	}
	switch {
	case i < len(s) && s[i] == '0':
		i++
	case isDigit(i):
		for isDigit(i) {
			i++
		}
	default:
		return 0, false
	}
	if i < len(s) && s[i] == '.' {
		i++
		if !isDigit(i) {
			return 0, false
		}
		for isDigit(i) {
			i++
		}
	}
	if i < len(s) && (s[i] == 'e' || s[i] == 'E') {
		i++
		if i < len(s) && (s[i] == '+' || s[i] == '-') {
			i++
		}
		if !isDigit(i) {
			return 0, false
		}
		for isDigit(i) {
			i++
		}
	}
	if i < len(s) && s[i] != ',' && s[i] != '}' && s[i] != ' ' && s[i] != '\t' && s[i] != '\r' && s[i] != '\n' {
		return 0, false
	}
	return i, true
}
