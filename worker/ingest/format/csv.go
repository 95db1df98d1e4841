package format

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"strconv"
	"strings"

	"github.com/deltakeeper/deltakeeper/worker/types"
)

// csvTokenizer splits CSV records with a configurable delimiter, quote and escape character (Spark's
// options). encoding/csv, which apache/arrow-go's CSV reader is built on, has neither a quote nor an
// escape option, so Spark-style files (a backslash escape, or single-quoted fields) could not be read with it.
// Inside quotes, the escape character makes the next quote or escape literal, a doubled quote is one
// quote (RFC 4180), and line breaks belong to the field. Blank lines and comment lines are skipped.
type csvTokenizer struct {
	br                      *bufio.Reader
	delim, quote, esc, cmnt byte
	line                    int64 // lines consumed
	buf                     []byte
	ends                    []int  // end offset of each field in buf
	quoted                  []bool // whether each field was quoted
	raw                     []byte
}

func (t *csvTokenizer) readLine() ([]byte, error) {
	t.raw = t.raw[:0]
	var l []byte
	for {
		part, err := t.br.ReadSlice('\n')
		if err == nil && len(t.raw) == 0 {
			l = part // the whole line is in the reader's buffer: no copy (valid until the next read)
			break
		}
		t.raw = append(t.raw, part...)
		if errors.Is(err, bufio.ErrBufferFull) {
			continue
		}
		if errors.Is(err, io.EOF) && len(t.raw) > 0 {
			break
		}
		if err != nil {
			return nil, err
		}
		break
	}
	t.line++
	if l == nil {
		l = t.raw
	}
	if n := len(l); n > 0 && l[n-1] == '\n' {
		l = l[:n-1]
		if n := len(l); n > 0 && l[n-1] == '\r' {
			l = l[:n-1]
		}
	}
	return l, nil
}

// next reads one record; it returns the line the record starts on, or io.EOF.
func (t *csvTokenizer) next() (int64, error) {
	var l []byte
	for {
		var err error
		if l, err = t.readLine(); err != nil {
			return 0, err
		}
		if len(l) == 0 || (t.cmnt != 0 && l[0] == t.cmnt) {
			continue
		}
		break
	}
	start := t.line
	t.buf, t.ends, t.quoted = t.buf[:0], t.ends[:0], t.quoted[:0]
	i := 0
	for {
		// At the start of a field.
		if i < len(l) && l[i] == t.quote {
			i++
			for {
				if i >= len(l) {
					// The quoted field goes on in the next line.
					t.buf = append(t.buf, '\n')
					var err error
					if l, err = t.readLine(); err != nil {
						if errors.Is(err, io.EOF) {
							return start, fmt.Errorf("a quoted field opened on line %d is never closed", start)
						}
						return start, err
					}
					i = 0
					continue
				}
				c := l[i]
				if c == t.esc && t.esc != t.quote && i+1 < len(l) && (l[i+1] == t.quote || l[i+1] == t.esc) {
					t.buf = append(t.buf, l[i+1])
					i += 2
					continue
				}
				if c == t.quote {
					if i+1 < len(l) && l[i+1] == t.quote {
						t.buf = append(t.buf, t.quote)
						i += 2
						continue
					}
					i++
					break
				}
				t.buf = append(t.buf, c)
				i++
			}
			// Text after the closing quote up to the delimiter is kept, as Spark's parser does.
			for i < len(l) && l[i] != t.delim {
				t.buf = append(t.buf, l[i])
				i++
			}
			t.quoted = append(t.quoted, true)
		} else {
			j := len(l)
			if k := bytes.IndexByte(l[i:], t.delim); k >= 0 {
				j = i + k
			}
			t.buf = append(t.buf, l[i:j]...)
			i = j
			t.quoted = append(t.quoted, false)
		}
		t.ends = append(t.ends, len(t.buf))
		if i >= len(l) {
			return start, nil
		}
		i++ // the delimiter
		if i == len(l) {
			t.ends = append(t.ends, len(t.buf)) // a trailing delimiter ends an empty last field
			t.quoted = append(t.quoted, false)
			return start, nil
		}
	}
}

func (t *csvTokenizer) field(i int) string {
	s := 0
	if i > 0 {
		s = t.ends[i-1]
	}
	return string(t.buf[s:t.ends[i]])
}

func (t *csvTokenizer) fields() int { return len(t.ends) }

func newTokenizer(body io.Reader, o *Options) *csvTokenizer {
	return &csvTokenizer{br: bufio.NewReaderSize(body, readBuffer(body)), delim: o.Delimiter, quote: o.Quote, esc: o.Escape, cmnt: o.Comment}
}

// csvReader converts CSV records into rows of the table schema.
type csvReader struct {
	p       *projector
	tok     *csvTokenizer
	close   func() error
	cols    []int    // table field of each CSV column, -1 when the table has none
	names   []string // CSV column names (header, or _c<i>)
	rows    int64
	done    bool
	pending bool // the tokenizer holds a record not yet converted (the first one, without a header)
	pendLn  int64
}

func newCSVReader(body io.Reader, closer func() error, p *projector) (Reader, error) {
	r := &csvReader{p: p, tok: newTokenizer(body, p.o), close: closer}
	if err := r.start(); err != nil {
		return nil, errors.Join(err, closer())
	}
	return r, nil
}

func (r *csvReader) Rescued() int64 { return r.p.rescued }
func (r *csvReader) Close() error   { return r.close() }

func (r *csvReader) readErr(err error, line int64) error {
	var fe *Error
	if errors.As(err, &fe) {
		if fe.Row == 0 {
			fe.Row, fe.Line = r.rows+1, line
		}
		return fe
	}
	return &Error{File: r.p.uri, Row: r.rows + 1, Line: line, Err: err}
}

// start reads the header (or the first record, to count columns) and maps columns to the table.
func (r *csvReader) start() error {
	line, err := r.tok.next()
	if errors.Is(err, io.EOF) {
		return &Error{File: r.p.uri, Err: errors.New("the file has no records: remove it, or set onBadFile to skip")}
	}
	if err != nil {
		return r.readErr(err, r.tok.line)
	}
	n := r.tok.fields()
	table := r.p.schema
	seen := map[int]string{}
	var unknown []NewColumn
	for i := range n {
		name := "_c" + strconv.Itoa(i)
		idx := -1
		if r.p.o.Header {
			name = strings.TrimSpace(r.tok.field(i))
			if name == "" {
				return &Error{File: r.p.uri, Row: 0, Line: line, Err: fmt.Errorf("header column %d has no name", i+1)}
			}
			idx = r.p.field(table, name)
		} else {
			// Without a header, columns are the table's in order (the rescued-data column aside).
			k := 0
			for j := range table.Fields {
				if j == r.p.rescue {
					continue
				}
				if k == i {
					idx = j
					break
				}
				k++
			}
		}
		if idx >= 0 {
			if prev, dup := seen[idx]; dup {
				return &Error{File: r.p.uri, Line: line, Err: fmt.Errorf("header columns %q and %q both name table column %s", prev, name, table.Fields[idx].Name)}
			}
			seen[idx] = name
			if _, ok := table.Fields[idx].Type.(*types.PrimitiveType); !ok {
				return &Error{File: r.p.uri, Column: table.Fields[idx].Name, Err: fmt.Errorf("CSV cannot fill the %s column %s", table.Fields[idx].Type, table.Fields[idx].Name)}
			}
		} else {
			unknown = append(unknown, NewColumn{Path: []string{name}, Field: &types.StructField{Name: name, Type: tString, Nullable: true}})
		}
		r.cols = append(r.cols, idx)
		r.names = append(r.names, name)
	}
	if len(unknown) > 0 && (r.p.o.Evolution == AddNewColumns || r.p.o.Evolution == FailOnNewColumns) {
		return &NewColumnsError{File: r.p.uri, Columns: unknown}
	}
	if !r.p.o.Header {
		r.pending, r.pendLn = true, line
	}
	return nil
}

// nextLine returns the line of the next record: the first row itself when it was not a header, else
// the tokenizer's next record. ok is false at the end of the file.
func (r *csvReader) nextLine() (line int64, ok bool, err error) {
	if r.pending {
		r.pending = false
		return r.pendLn, true, nil
	}
	line, err = r.tok.next()
	if errors.Is(err, io.EOF) {
		return 0, false, nil
	}
	if err != nil {
		return 0, false, r.readErr(err, r.tok.line)
	}
	return line, true, nil
}

// finished ends the file: io.EOF, or an error when a header had no rows after it.
func (r *csvReader) finished() error {
	r.done = true
	if r.rows == 0 {
		return &Error{File: r.p.uri, Err: errors.New("the file has a header but no rows: remove it, or set onBadFile to skip")}
	}
	return io.EOF
}

func (r *csvReader) Next() ([]types.Struct, error) {
	if r.done {
		return nil, io.EOF
	}
	var out []types.Struct
	for len(out) < ChunkRows {
		line, ok, err := r.nextLine()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		rc := &row{num: r.rows + 1, line: line}
		rowOut, err := r.convert(rc)
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
		return nil, r.finished()
	}
	return out, nil
}

func (r *csvReader) convert(rc *row) (types.Struct, error) {
	n := r.tok.fields()
	if n != len(r.cols) {
		if r.p.o.Evolution != Rescue {
			return nil, r.fieldCountError(rc, n)
		}
		for i := len(r.cols); i < n; i++ {
			rc.rescueValue("_c"+strconv.Itoa(i), r.tok.field(i))
		}
	}
	out := make(types.Struct, len(r.p.schema.Fields))
	for i := range min(n, len(r.cols)) {
		s := r.tok.field(i)
		idx := r.cols[i]
		if idx < 0 {
			if r.p.o.Evolution == Rescue {
				rc.rescueValue(r.names[i], s)
			}
			continue
		}
		if !r.tok.quoted[i] && s == r.p.o.NullValue {
			continue
		}
		f := r.p.schema.Fields[idx]
		pt := f.Type.(*types.PrimitiveType)
		if s == "" && !r.tok.quoted[i] && pt.Name != types.TypeString {
			continue // an empty field of a non-string column is null, as Spark reads it
		}
		v, err := r.p.o.parseText(s, pt)
		if err != nil {
			if r.p.o.Evolution == Rescue {
				rc.rescueValue(f.Name, s)
				continue
			}
			return nil, r.p.fail(rc, f.Name, err)
		}
		out[idx] = v
	}
	return out, nil
}

// fieldCountError is the error of a record whose field count differs from the header's.
func (r *csvReader) fieldCountError(rc *row, n int) error {
	what := "the first record has"
	if r.p.o.Header {
		what = "the header has"
	}
	return &Error{File: r.p.uri, Row: rc.num, Line: rc.line, Err: fmt.Errorf("the record has %d fields but %s %d: check the delimiter (%q) and quoting", n, what, len(r.cols), r.p.o.Delimiter)}
}

// sampleCSV widens acc by the types of up to SampleRows records.
func sampleCSV(body io.Reader, uri string, o *Options, acc *types.StructType) error {
	tok := newTokenizer(body, o)
	var names []string
	if _, err := tok.next(); err != nil {
		return nil // the read pass reports it
	}
	first := true
	for i := range tok.fields() {
		name := "_c" + strconv.Itoa(i)
		if o.Header {
			name = strings.TrimSpace(tok.field(i))
		}
		names = append(names, name)
		if fieldFold(acc, name) == nil {
			acc.Fields = append(acc.Fields, &types.StructField{Name: name, Nullable: true})
		}
	}
	for n := 0; n < SampleRows; n++ {
		if !first || o.Header {
			if _, err := tok.next(); err != nil {
				break
			}
		}
		first = false
		for i := range min(tok.fields(), len(names)) {
			s := tok.field(i)
			null := !tok.quoted[i] && s == o.NullValue
			f := fieldFold(acc, names[i])
			f.Type = mergeTypes(f.Type, o.inferText(s, null))
		}
	}
	return nil
}
