package merge

import (
	"context"
	"errors"
	"fmt"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// An upsert that writes every batch row as it is (stageUpsertAsIs, no row dropped) writes the
// batch's Parquet files again: when a file is stored as the table's writer would store it (same
// physical types and codec, PLAIN or dictionary pages, data page v1), its pages are copied into the
// new data file instead of being encoded and compressed a second time (table.Writer.CopyPages),
// with the statistics computed from the rows the merge decoded anyway. Copying makes one data file
// per batch file where the encoder makes one for the whole batch, so a batch of several files is
// copied only when none of them is small (under half the target file size); otherwise, and for
// any file that cannot be copied, the batch goes through the encoder.

// copyBatchPages writes every batch row by copying the batch files' pages. copied=false (and no
// file left behind) when the batch must be written through the encoder instead.
func (m *merger) copyBatchPages(ctx context.Context, st *staged) (adds []*delta.AddFile, abort func(context.Context) error, copied bool, err error) {
	src := st.p.src
	if src.cols == nil || m.o.Format.Format != format.Parquet || len(m.batch.Files) == 0 {
		return nil, nil, false, nil
	}
	w, err := table.NewWriter(ctx, st.wsnap, m.writeOptions())
	if err != nil {
		return nil, nil, false, err
	}
	schema := st.wsnap.Schema()
	type copyFile struct {
		f     *parquetio.File
		close func() error
		names []string
		from  int
	}
	files := make([]copyFile, 0, len(m.batch.Files))
	defer func() {
		for _, c := range files {
			_ = c.close()
		}
	}()
	from := 0
	for _, sf := range m.batch.Files {
		ra, err := m.batch.Store.Open(ctx, sf.Key)
		if err != nil {
			return nil, nil, false, nil // the encoder path reads nothing more; the commit reports a vanished file
		}
		f, err := parquetio.Open(ctx, ra)
		if err != nil {
			_ = ra.Close()
			return nil, nil, false, nil
		}
		files = append(files, copyFile{f: f, close: ra.Close, from: from})
		stored, err := f.Schema()
		if err != nil {
			return nil, nil, false, nil
		}
		names, ok := storedNames(stored, schema)
		if !ok || (len(m.batch.Files) > 1 && 2*f.Size() < w.TargetFileBytes()) || !w.PagesCopyable(f, names) {
			return nil, nil, false, nil
		}
		files[len(files)-1].names = names
		from += int(f.NumRows())
	}
	if from != src.len() {
		return nil, nil, false, nil // the files changed since the batch was read: the encoder writes what was read
	}
	b := &parquetio.FlatBatch{Rows: src.len(), Cols: src.cols.Cols[:st.width]}
	for _, c := range files {
		if err := w.CopyPages(c.f, c.names, b, c.from); err != nil {
			_ = w.Abort(ctx)
			if errors.Is(err, parquetio.ErrPagesNotCopyable) {
				return nil, nil, false, nil
			}
			return nil, nil, false, fmt.Errorf("write upserted rows: %w", err)
		}
	}
	if adds, err = w.Close(); err != nil {
		_ = w.Abort(ctx)
		return nil, nil, false, err
	}
	return adds, w.Abort, true, nil
}

// storedNames is, for each table column, the name of the stored column the batch reader reads it
// from (readParquetColumns): the same name, else one equal but for case, each stored column taken
// once. ok=false when some table column is not stored.
func storedNames(stored, schema *types.StructType) ([]string, bool) {
	names := make([]string, len(schema.Fields))
	matched := make([]bool, len(stored.Fields))
	for i, tf := range schema.Fields {
		j := storedField(stored, tf.Name)
		if j < 0 || matched[j] {
			return nil, false
		}
		matched[j], names[i] = true, stored.Fields[j].Name
	}
	return names, true
}
