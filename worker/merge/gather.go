package merge

import (
	"context"
	"fmt"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// columnarWrite reports whether rows of the batch are written as columns (table.Writer.WriteColumns)
// into the table of wsnap: the batch was read as columns and every table column is flat.
func columnarWrite(src *srcRows, wsnap *delta.Snapshot) bool {
	return src.cols != nil && table.ColumnarSchema(wsnap)
}

// gatherColumns copies the first width columns of the rows sel of a columnar batch into a batch of
// their own, in sel's order. from, when not nil, gives for the k-th row a target row whose values
// replace the columns its source file lacks (missing[k] says which: nil for none), as the row path
// merges them.
func gatherColumns(src *srcRows, sel []int32, width int, from []types.Struct, missing [][]bool) (*parquetio.FlatBatch, error) {
	out := &parquetio.FlatBatch{Rows: len(sel), Cols: make([]parquetio.FlatColumn, width)}
	for i := range width {
		s, d := &src.cols.Cols[i], &out.Cols[i]
		t := src.colTypes[i]
		k, _ := parquetio.FlatKindOf(t)
		d.Null = make([]bool, 0, len(sel))
		switch k {
		case parquetio.FlatI32:
			d.I32 = make([]int32, 0, len(sel))
		case parquetio.FlatI64:
			d.I64 = make([]int64, 0, len(sel))
		case parquetio.FlatF32:
			d.F32 = make([]float32, 0, len(sel))
		case parquetio.FlatF64:
			d.F64 = make([]float64, 0, len(sel))
		case parquetio.FlatBool:
			d.Bool = make([]bool, 0, len(sel))
		case parquetio.FlatBytes:
			d.Off = make([]uint32, 1, len(sel)+1)
			size := 0
			for _, n := range sel {
				size += int(s.Off[n+1] - s.Off[n])
			}
			d.Bin = make([]byte, 0, size)
		}
		for r, n := range sel {
			if from != nil && missing[r] != nil && missing[r][i] {
				if err := d.AppendValue(t, from[r][i]); err != nil {
					return nil, fmt.Errorf("column %s: %w", src.colName(i), err)
				}
				continue
			}
			d.Null = append(d.Null, s.IsNull(int(n)))
			switch k {
			case parquetio.FlatI32:
				d.I32 = append(d.I32, s.I32[n])
			case parquetio.FlatI64:
				d.I64 = append(d.I64, s.I64[n])
			case parquetio.FlatF32:
				d.F32 = append(d.F32, s.F32[n])
			case parquetio.FlatF64:
				d.F64 = append(d.F64, s.F64[n])
			case parquetio.FlatBool:
				d.Bool = append(d.Bool, s.Bool[n])
			case parquetio.FlatBytes:
				d.Bin = append(d.Bin, s.Bin[s.Off[n]:s.Off[n+1]]...)
				d.Off = append(d.Off, uint32(len(d.Bin)))
			}
		}
	}
	return out, nil
}

// writeColumns writes the batch rows sel (every row as it is when nil) into new files with a
// writer of its own, whose Abort the attempt keeps; from and missing as for gatherColumns. what
// names the rows in errors.
func (m *merger) writeColumns(ctx context.Context, st *staged, sel []int32, from []types.Struct, missing [][]bool, what string) ([]*delta.AddFile, func(context.Context) error, error) {
	b := &parquetio.FlatBatch{Rows: st.p.src.len(), Cols: st.p.src.cols.Cols[:st.width]}
	if sel != nil {
		var err error
		if b, err = gatherColumns(st.p.src, sel, st.width, from, missing); err != nil {
			return nil, nil, result.Refuse(result.ReasonBadFile, fmt.Errorf("%s: %w", what, err))
		}
	}
	w, err := table.NewWriter(ctx, st.wsnap, m.writeOptions())
	if err != nil {
		return nil, nil, err
	}
	if err := w.WriteColumns(b); err != nil {
		_ = w.Abort(ctx)
		return nil, nil, result.Refuse(result.ReasonBadFile, fmt.Errorf("%s: %w", what, err))
	}
	adds, err := w.Close()
	if err != nil {
		_ = w.Abort(ctx)
		return nil, nil, err
	}
	return adds, w.Abort, nil
}
