package format

import (
	"io"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// csvColumnReader is the CSV reader with the columnar path: fields are converted from the
// tokenizer's buffer straight into the column vectors.
type csvColumnReader struct {
	*csvReader
	c *columnar
}

func (r *csvColumnReader) Columnar() bool { return r.c != nil }

// fieldBytes is field i of the current record, valid until the next record.
func (t *csvTokenizer) fieldBytes(i int) []byte {
	s := 0
	if i > 0 {
		s = t.ends[i-1]
	}
	return t.buf[s:t.ends[i]]
}

func (r *csvColumnReader) NextColumns() (*parquetio.FlatBatch, error) {
	if r.done {
		return nil, io.EOF
	}
	r.c.begin()
	for r.c.b.Rows < ChunkRows {
		line, ok, err := r.nextLine()
		if err != nil {
			return nil, err
		}
		if !ok {
			break
		}
		rc := &row{num: r.rows + 1, line: line}
		if err := r.convertColumns(rc); err != nil {
			return nil, err
		}
		r.rows++
	}
	if r.c.b.Rows == 0 {
		return nil, r.finished()
	}
	return r.c.b, nil
}

// convertColumns is convert for the columnar path (never in rescue mode): the same null rules, the
// same conversions (appendText), the same errors.
func (r *csvColumnReader) convertColumns(rc *row) error {
	n := r.tok.fields()
	if n != len(r.cols) {
		r.c.resetRow()
		return r.fieldCountError(rc, n)
	}
	null := r.p.o.NullValue
	for i, idx := range r.cols {
		if idx < 0 {
			continue
		}
		s := r.tok.fieldBytes(i)
		quoted := r.tok.quoted[i]
		if !quoted && unsafeString(s) == null {
			continue
		}
		if len(s) == 0 && !quoted && r.c.prims[idx].Name != types.TypeString {
			continue // an empty field of a non-string column is null, as Spark reads it
		}
		if err := r.c.appendText(idx, s); err != nil {
			r.c.resetRow()
			return r.p.fail(rc, r.p.schema.Fields[idx].Name, err)
		}
	}
	return r.c.endRow(rc)
}
