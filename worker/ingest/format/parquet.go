package format

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// parquetReader reads a Parquet source file through parquetio (which widens narrower stored types
// to the table's, as Delta type widening does, and reads absent columns as null).
type parquetReader struct {
	p      *projector
	ra     storage.ReaderAt
	rows   *parquetio.RowReader
	extra  []string // names of the source columns read only to be rescued, after the table's
	n      int64
	closed bool
}

func openParquet(ctx context.Context, ra storage.ReaderAt, p *projector) (Reader, error) {
	fail := func(err error) (Reader, error) {
		ra.Close()
		return nil, err
	}
	f, err := parquetio.Open(ctx, ra)
	if err != nil {
		return fail(&Error{File: p.uri, Err: err})
	}
	fileSchema, err := f.Schema()
	if err != nil {
		return fail(&Error{File: p.uri, Err: err})
	}
	read := &types.StructType{}
	matched := make([]bool, len(fileSchema.Fields))
	for i, tf := range p.schema.Fields {
		name := tf.Name
		var stored *types.StructField
		if i != p.rescue {
			if j := p.field(fileSchema, tf.Name); j >= 0 && !matched[j] {
				matched[j], stored = true, fileSchema.Fields[j]
				name = stored.Name
			}
		} else {
			name = "\x00rescued" // never stored: reads as null
		}
		t := tf.Type
		if stored != nil {
			t = readType(tf.Type, stored.Type, p)
		}
		read.Fields = append(read.Fields, &types.StructField{Name: name, Type: t, Nullable: true})
	}
	var unknown []NewColumn
	var extra []string
	for j, sf := range fileSchema.Fields {
		if matched[j] {
			continue
		}
		switch p.o.Evolution {
		case Rescue:
			read.Fields = append(read.Fields, &types.StructField{Name: sf.Name, Type: sf.Type, Nullable: true})
			extra = append(extra, sf.Name)
		case AddNewColumns, FailOnNewColumns:
			unknown = append(unknown, NewColumn{Path: []string{sf.Name}, Field: &types.StructField{Name: sf.Name, Type: sf.Type, Nullable: true}})
		}
	}
	if len(unknown) > 0 {
		return fail(&NewColumnsError{File: p.uri, Columns: unknown})
	}
	rows, err := f.Rows(ctx, read, parquetio.ReadOptions{BatchSize: ChunkRows})
	if err != nil {
		return fail(&Error{File: p.uri, Err: fmt.Errorf("the file's columns do not fit the table's schema: %w", err)})
	}
	return &parquetReader{p: p, ra: ra, rows: rows, extra: extra}, nil
}

// readType is the table type t with the struct field names as the file stores them (matched
// case-insensitively), so nested fields are found whatever their case.
func readType(t, stored types.DataType, p *projector) types.DataType {
	switch tt := t.(type) {
	case *types.StructType:
		ss, ok := stored.(*types.StructType)
		if !ok {
			return t
		}
		out := &types.StructType{}
		for _, f := range tt.Fields {
			name, ft := f.Name, f.Type
			for _, g := range ss.Fields {
				if g.Name == f.Name || (name == f.Name && equalFold(g.Name, f.Name)) {
					name, ft = g.Name, readType(f.Type, g.Type, p)
				}
			}
			out.Fields = append(out.Fields, &types.StructField{Name: name, Type: ft, Nullable: true})
		}
		return out
	case *types.ArrayType:
		if sa, ok := stored.(*types.ArrayType); ok {
			return &types.ArrayType{ElementType: readType(tt.ElementType, sa.ElementType, p), ContainsNull: true}
		}
	case *types.MapType:
		if sm, ok := stored.(*types.MapType); ok {
			return &types.MapType{KeyType: tt.KeyType, ValueType: readType(tt.ValueType, sm.ValueType, p), ValueContainsNull: true}
		}
	}
	return t
}

func equalFold(a, b string) bool { return len(a) == len(b) && (a == b || lowerEq(a, b)) }

func lowerEq(a, b string) bool {
	for i := range len(a) {
		x, y := a[i], b[i]
		if 'A' <= x && x <= 'Z' {
			x += 'a' - 'A'
		}
		if 'A' <= y && y <= 'Z' {
			y += 'a' - 'A'
		}
		if x != y {
			return false
		}
	}
	return true
}

func (r *parquetReader) Rescued() int64 { return r.p.rescued }

func (r *parquetReader) Close() error {
	if r.closed {
		return nil
	}
	r.closed = true
	return errors.Join(r.rows.Close(), r.ra.Close())
}

func (r *parquetReader) Next() ([]types.Struct, error) {
	b, err := r.rows.Next()
	if errors.Is(err, io.EOF) {
		if r.n == 0 {
			return nil, &Error{File: r.p.uri, Err: errors.New("the file has no rows: remove it, or set onBadFile to skip")}
		}
		return nil, io.EOF
	}
	if err != nil {
		return nil, &Error{File: r.p.uri, Row: r.n + 1, Err: err}
	}
	width := len(r.p.schema.Fields)
	for _, src := range b.Rows {
		r.n++
		rc := &row{num: r.n}
		out := src[:width]
		for k, name := range r.extra {
			if v := src[width+k]; v != nil {
				rc.rescueValue(name, jsonable(v))
			}
		}
		if err := r.p.finish(rc, out); err != nil {
			return nil, err
		}
	}
	out := make([]types.Struct, len(b.Rows))
	for i, src := range b.Rows {
		out[i] = src[:width]
	}
	return out, nil
}

// jsonable renders a logical value for the rescued-data JSON.
func jsonable(v types.Value) any {
	switch x := v.(type) {
	case nil, bool, int8, int16, int32, int64, float32, float64, string:
		return x
	case []byte:
		return x // base64, as encoding/json renders bytes
	case types.Struct, types.Array, types.Map:
		b, _ := json.Marshal(fmt.Sprint(x))
		return json.RawMessage(b)
	}
	return fmt.Sprint(v)
}
