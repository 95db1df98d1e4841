package table

import (
	"context"
	"errors"
	"fmt"
	"io"
	"slices"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// FindStats count what FindRows read.
type FindStats struct {
	FilesScanned int
	BytesRead    int64
	RowsMatched  int64
}

// PruneStats count what PruneFiles kept and skipped.
type PruneStats struct {
	FilesTotal, PrunedByPartition, PrunedByStats int
}

// PruneFiles returns the live files of snap that may hold a row matching pred (bound to the table's
// schema): those whose partition values and then statistics do not rule it out. A file skipped by its
// partition values counts there even if its statistics would have ruled it out too.
func PruneFiles(snap *delta.Snapshot, pred *expr.Predicate) ([]*delta.AddFile, PruneStats) {
	st := PruneStats{FilesTotal: len(snap.Files())}
	var out []*delta.AddFile
	for _, f := range snap.Files() {
		facts := FileFacts(snap, f)
		if !pred.MightMatch(partitionFactsOnly{facts}) {
			st.PrunedByPartition++
			continue
		}
		if !pred.MightMatch(facts) {
			st.PrunedByStats++
			continue
		}
		out = append(out, f)
	}
	return out, st
}

// partitionFactsOnly hides a file's statistics, so that MightMatch judges by partition values alone.
type partitionFactsOnly struct{ expr.FileFacts }

func (partitionFactsOnly) ColumnStats([]string) (expr.ColumnStats, bool) {
	return expr.ColumnStats{}, false
}

// FindRows returns, for each of files (live files of snap) holding a live row that matches where,
// the physical positions of those rows: the input of DeleteRows. Only the predicate's columns are
// read (partition columns come from the log), rows deleted by a file's DV are never returned, and
// files without a match are left out. Callers prune files first (PruneFiles).
func FindRows(ctx context.Context, snap *delta.Snapshot, files []*delta.AddFile, where *expr.Expr) ([]FileDeletes, FindStats, error) {
	var st FindStats
	schema, physical := snap.Schema(), snap.PhysicalSchema()
	var need []int
	for _, path := range where.Columns() {
		if i := fieldIndexFold(schema, path[0]); i >= 0 && !slices.Contains(need, i) {
			need = append(need, i)
		}
	}
	slices.Sort(need)
	readSchema := &types.StructType{}
	for _, i := range need {
		readSchema.Fields = append(readSchema.Fields, schema.Fields[i])
	}
	if _, err := where.Bind(schema); err != nil { // names every column in its errors
		return nil, st, err
	}
	pred, err := where.Bind(readSchema)
	if err != nil {
		return nil, st, err
	}
	isPart := func(name string) bool {
		return slices.ContainsFunc(snap.Metadata().PartitionColumns, func(p string) bool { return equalFold(p, name) })
	}
	loc := newLocator(snap.Table(), storage.Config{})
	// Files are read DefaultScanParallelism at a time; results keep the files' order.
	type found struct {
		positions *roaring64.Bitmap
		read      int64
		err       error
	}
	results := make([]found, len(files))
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	var wg sync.WaitGroup
	sem := make(chan struct{}, DefaultScanParallelism)
	for k, f := range files {
		select {
		case sem <- struct{}{}:
		case <-ctx.Done():
		}
		if ctx.Err() != nil {
			break
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			defer func() { <-sem }()
			r := &results[k]
			r.positions, r.read, r.err = findInFileRows(ctx, snap, loc, f, pred, need, schema, physical, isPart)
			if r.err != nil {
				cancel()
			}
		}()
	}
	wg.Wait()
	// The first failure is the one to report, not the cancellations it caused in the other readers.
	var firstErr error
	for _, r := range results {
		if r.err != nil && (firstErr == nil || errors.Is(firstErr, context.Canceled) && !errors.Is(r.err, context.Canceled)) {
			firstErr = r.err
		}
	}
	if firstErr != nil && parent.Err() == nil {
		return nil, st, firstErr
	}
	if err := parent.Err(); err != nil {
		return nil, st, err // some files were never read
	}
	var out []FileDeletes
	for k, r := range results {
		st.FilesScanned++
		st.BytesRead += r.read
		if !r.positions.IsEmpty() {
			st.RowsMatched += int64(r.positions.GetCardinality())
			out = append(out, FileDeletes{File: files[k], Positions: r.positions})
		}
	}
	return out, st, nil
}

// findInFileRows splits the read columns of f into partition values (from the log) and file columns,
// then finds the matching rows.
func findInFileRows(ctx context.Context, snap *delta.Snapshot, loc *locator, f *delta.AddFile, pred *expr.Predicate,
	need []int, schema, physical *types.StructType, isPart func(string) bool) (*roaring64.Bitmap, int64, error) {
	consts := make([]types.Value, len(need))
	fileSchema := &types.StructType{}
	var fromFile []int
	for j, i := range need {
		if isPart(schema.Fields[i].Name) {
			v, err := snap.PartitionValue(f, schema.Fields[i].Name)
			if err != nil {
				return nil, 0, fmt.Errorf("file %s: partition value of %s: %w", f.Path, schema.Fields[i].Name, err)
			}
			consts[j] = v
			continue
		}
		fileSchema.Fields = append(fileSchema.Fields, physical.Fields[i])
		fromFile = append(fromFile, j)
	}
	return findInFile(ctx, snap, loc, f, pred, consts, fileSchema, fromFile)
}

func findInFile(ctx context.Context, snap *delta.Snapshot, loc *locator, f *delta.AddFile, pred *expr.Predicate,
	consts []types.Value, fileSchema *types.StructType, fromFile []int) (*roaring64.Bitmap, int64, error) {
	var deleted *roaring64.Bitmap
	if f.DeletionVector != nil {
		bm, err := delta.LoadDeletionVector(ctx, snap.Table().Store(), f.DeletionVector)
		if err != nil {
			return nil, 0, fmt.Errorf("file %s: %w", f.Path, err)
		}
		deleted = bm
	}
	opened, err := loc.open(ctx, f.Path)
	if err != nil {
		return nil, 0, err
	}
	r := &countingReader{ReaderAt: opened}
	defer r.Close()
	pf, err := parquetio.Open(ctx, r)
	if err != nil {
		return nil, r.n.Load(), fmt.Errorf("data file %s: %w", f.Path, err)
	}
	positions := roaring64.New()
	if len(fileSchema.Fields) == 0 {
		// Only partition columns: the predicate holds for every live row of the file or for none.
		if pred.Eval(slices.Clone(consts)) {
			positions.AddRange(0, uint64(pf.NumRows()))
			if deleted != nil {
				positions.AndNot(deleted)
			}
		}
		return positions, r.n.Load(), nil
	}
	rows, err := pf.Rows(ctx, fileSchema, parquetio.ReadOptions{
		MatchFieldIDs: snap.ColumnMappingMode() == delta.ColumnMappingID,
		Deleted:       deleted,
		WithRowIndex:  true,
	})
	if err != nil {
		return nil, r.n.Load(), fmt.Errorf("data file %s: %w", f.Path, err)
	}
	defer rows.Close()
	row := make(types.Struct, len(consts))
	for {
		b, err := rows.Next()
		if errors.Is(err, io.EOF) {
			return positions, r.n.Load(), nil
		}
		if err != nil {
			return nil, r.n.Load(), fmt.Errorf("data file %s: %w", f.Path, err)
		}
		for k, fr := range b.Rows {
			copy(row, consts)
			for c, j := range fromFile {
				row[j] = fr[c]
			}
			if pred.Eval(row) {
				positions.Add(uint64(b.RowIndexes[k]))
			}
		}
	}
}
