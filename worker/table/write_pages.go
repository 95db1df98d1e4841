package table

import (
	"fmt"

	"github.com/deltakeeper/deltakeeper/worker/parquetio"
)

// A source Parquet file whose rows go into the table as they are — every row of a MERGE batch
// file, say — can become a data file of its own by copying its stored pages
// (parquetio.Writer.CopyPages): no encoding and no compression, which are most of a write's cost.
// The rows must also be at hand decoded (the caller read them anyway, for the keys): they give the
// statistics and the NOT NULL check, as WriteColumns uses them.

// PagesCopyable reports whether CopyPages can write the Parquet file f as a data file of the
// table: an unpartitioned table, a file no larger than the target file size (a copy is one file:
// it does not roll over), and pages that parquetio can copy into the table's physical schema
// (parquetio.PagesCopyable). names[i] is the stored name in f of the table's column i (logical
// schema order).
func (w *Writer) PagesCopyable(f *parquetio.File, names []string) bool {
	if len(w.l.partIdx) > 0 || f.Size() > w.l.target || len(names) != len(w.l.dataIdx) {
		return false
	}
	return parquetio.PagesCopyable(f, w.l.fileSchema, names, w.l.writer)
}

// TargetFileBytes is the size at which the writer rolls over to a new file.
func (w *Writer) TargetFileBytes() int64 { return w.l.target }

// CopyPages adds every row of the Parquet file f as one new data file, copying f's pages; b holds
// the same rows decoded, one vector per table column in logical schema order as WriteColumns takes
// them, at rows [from, from+f.NumRows()). The table must be unpartitioned; errors wrap
// parquetio.ErrPagesNotCopyable when f's pages cannot be copied (check PagesCopyable first). As
// with every write, nothing is committed: Close returns the file's AddFile, Abort deletes it.
func (w *Writer) CopyPages(f *parquetio.File, names []string, b *parquetio.FlatBatch, from int) error {
	if w.err != nil {
		return w.err
	}
	if len(w.l.partIdx) > 0 {
		return w.fail(fmt.Errorf("table %s is partitioned: its rows cannot be copied into one file", w.l.snap.Table().Location()))
	}
	schema := w.l.snap.Schema()
	if len(b.Cols) != len(schema.Fields) || len(names) != len(schema.Fields) {
		return w.fail(fmt.Errorf("the batch has %d columns and %d names, the table has %d columns", len(b.Cols), len(names), len(schema.Fields)))
	}
	rows := int(f.NumRows())
	if from < 0 || from+rows > b.Rows {
		return w.fail(fmt.Errorf("the batch holds %d rows, the file's %d rows do not fit from row %d", b.Rows, rows, from))
	}
	if err := notNull(schema, b, from, from+rows); err != nil {
		return w.fail(err)
	}
	out, err := w.start("", nil)
	if err != nil {
		return w.fail(err)
	}
	if err := out.pw.CopyPages(w.ctx, f, names, b, from); err != nil {
		_ = out.sw.Abort()
		return w.fail(fmt.Errorf("copy the pages of a source file into %s: %w", out.key, err))
	}
	if err := w.finish(out); err != nil {
		return w.fail(err)
	}
	return nil
}
