package parquetio

import (
	"slices"

	"github.com/parquet-go/parquet-go/format"
)

// PermuteBytes estimates the memory Permute holds for this file's rows once they are decoded into
// row-group segments, from the footer alone: fixed-width values at their width, byte arrays with a
// 4-byte offset each and a tenth of reserve, definition levels only for chunks that have nulls (a
// segment of defined values keeps none), repetition levels for repeated leaves. Callers compare it
// with their memory limit to choose between one pass and waves (PermuteSubset).
//
// The footer does not give the decoded size of a dictionary-encoded byte-array chunk: its pages hold
// indexes. Those are estimated at the longer of the chunk's min and max statistics per value (at
// least the chunk's page bytes), which is what a low-cardinality column of short strings costs, and
// errs high for mixed lengths.
func (f *File) PermuteBytes() int64 {
	var total int64
	for _, rg := range f.pf.Metadata().RowGroups {
		for c := range rg.Columns {
			if c < len(f.leaves) {
				total += chunkPermuteBytes(&rg.Columns[c].MetaData, f.leaves[c])
			}
		}
	}
	return total
}

func chunkPermuteBytes(md *format.ColumnMetaData, leaf *pqNode) int64 {
	n := md.NumValues
	nulls := min(max(md.Statistics.NullCount, 0), n)
	vals := n - nulls
	var b int64
	switch {
	case leaf.maxRep > 0:
		b += 2 * n
	case leaf.maxDef > 0 && nulls > 0:
		b += n
	}
	switch md.Type {
	case format.Boolean:
		return b + vals
	case format.Int32, format.Float:
		return b + 4*vals
	case format.Int64, format.Double:
		return b + 8*vals
	case format.Int96:
		return b + 12*vals
	}
	data := md.TotalUncompressedSize
	if dictionaryEncoded(md) {
		longest := int64(max(len(md.Statistics.MaxValue), len(md.Statistics.MinValue), len(md.Statistics.Max), len(md.Statistics.Min)))
		data = max(data, vals*longest)
	} else if md.Type == format.ByteArray {
		data = max(0, data-4*vals) // PLAIN's length prefixes, which the segment keeps as offsets
	}
	return b + 4*vals + data*11/10
}

func dictionaryEncoded(md *format.ColumnMetaData) bool {
	return md.DictionaryPageOffset > 0 || slices.Contains(md.Encoding, format.RLEDictionary) ||
		slices.Contains(md.Encoding, format.PlainDictionary) //nolint:staticcheck // deprecated for writers; Parquet 1.0 files still carry it
}
