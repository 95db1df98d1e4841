package table

import (
	"context"
	"errors"
	"fmt"
	"runtime"
	"sync"

	"github.com/RoaringBitmap/roaring/v2/roaring64"
	"golang.org/x/sync/errgroup"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/parquetio"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// FileDeletes names rows of one live file of tx's snapshot to remove. Positions are 0-based row
// indexes in the physical Parquet file; rows the file's existing DV already deletes must not appear.
type FileDeletes struct {
	File      *delta.AddFile
	Positions *roaring64.Bitmap
}

// DeleteResult says what DeleteRows staged.
type DeleteResult struct {
	FilesTouched, FilesRewritten, FilesRemoved, DVsWritten int
	RowsDeleted, BytesWritten                              int64
	// Beyond the shared interface, for Spark's DELETE/MERGE metrics: data files added by
	// copy-on-write, the rows they copied, DVs on files that had none / replacing one / dropped with
	// their file (rewritten or fully deleted), and the bytes of the data files removed.
	FilesAdded                       int
	RowsCopied                       int64
	DVsAdded, DVsUpdated, DVsRemoved int
	BytesRemoved                     int64
	// Abort deletes every file/DV file it wrote; call when the commit does not land.
	Abort func(ctx context.Context) error
}

// DeleteRows stages on tx (ReadFiles + Remove/Add) the removal of those rows: with deletion vectors
// when the table has them enabled (feature deletionVectors and delta.enableDeletionVectors=true),
// merging each file's existing DV; otherwise copy-on-write of each touched file keeping the other rows
// in their order (a file whose rows all go is only removed). Row tracking: kept rows keep their row
// ids and commit versions.
//
// Copy-on-write goes through the column-copy engine (parquetio.Rewrite) with the deleted positions as
// its row filter and RewriteOptions.CopyPages: pages without a deleted row are copied as stored, the
// others re-encoded column by column without the deleted rows, never decoded into rows, and the
// statistics of the new file are rebuilt from the pages written. Every remove and add carries
// dataChange=true. Entries with no positions are ignored. On error everything written so far is
// deleted again and tx must not be committed.
func DeleteRows(ctx context.Context, tx *delta.Transaction, deletes []FileDeletes, opts WriteOptions) (*DeleteResult, error) {
	snap := tx.Snapshot()
	store := snap.Table().Store()
	d := &deleter{ctx: ctx, tx: tx, snap: snap, store: store, opts: opts, res: &DeleteResult{}}
	d.res.Abort = d.abort
	seen := map[string]bool{}
	var work []FileDeletes
	for _, fd := range deletes {
		if fd.File == nil || fd.Positions == nil || fd.Positions.IsEmpty() {
			continue
		}
		live, ok := snap.File(fd.File.Key())
		if !ok {
			return nil, fmt.Errorf("table %s: delete rows of %s: the file (with this deletion vector) is not live in version %d", store.Location(), fd.File.Key(), snap.Version())
		}
		if seen[live.Path] {
			return nil, fmt.Errorf("table %s: delete rows of %s: the file is listed twice; merge its positions into one entry", store.Location(), live.Path)
		}
		seen[live.Path] = true
		work = append(work, FileDeletes{File: live, Positions: fd.Positions})
	}
	useDVs := snap.DeletionVectorsEnabled()
	if useDVs {
		d.dvFile = delta.NewDVFile()
	}
	var err error
	if useDVs {
		for _, fd := range work {
			if err = d.withDV(fd); err != nil {
				break
			}
			d.res.FilesTouched++
		}
	} else {
		err = d.copyOnWriteAll(work)
	}
	if err != nil {
		return nil, errors.Join(err, d.abort(context.WithoutCancel(ctx)))
	}
	if d.dvFile != nil && d.dvFile.Len() > 0 {
		if err := d.dvFile.Write(ctx, store); err != nil {
			return nil, errors.Join(fmt.Errorf("table %s: %w", store.Location(), err), d.abort(context.WithoutCancel(ctx)))
		}
		d.dvWritten = true
		d.res.BytesWritten += d.dvFile.Size()
	}
	return d.res, nil
}

type deleter struct {
	ctx   context.Context
	tx    *delta.Transaction
	snap  *delta.Snapshot
	store storage.Store
	opts  WriteOptions
	res   *DeleteResult

	mu        sync.Mutex        // guards outs while files are rewritten concurrently
	outs      []*RewriteOutputs // copy-on-write outputs, for Abort
	dvFile    *delta.DVFile
	dvWritten bool
}

// newDV stores a merged bitmap: inline when asked for and small enough, else in the commit's DV file.
func (d *deleter) newDV(bm *roaring64.Bitmap) (*delta.DeletionVectorDescriptor, error) {
	if d.opts.DVInlineMaxBytes > 0 {
		dv, err := delta.InlineDeletionVector(bm)
		if err != nil {
			return nil, err
		}
		if int(dv.SizeInBytes) <= d.opts.DVInlineMaxBytes {
			return dv, nil
		}
	}
	return d.dvFile.Add(bm)
}

func (d *deleter) abort(ctx context.Context) error {
	var errs []error
	d.mu.Lock()
	outs := d.outs
	d.outs = nil
	d.mu.Unlock()
	for _, o := range outs {
		errs = append(errs, o.Abort(ctx))
	}
	if d.dvWritten {
		errs = append(errs, deleteKeys(ctx, d.store, []string{d.dvFile.Key()}))
		d.dvWritten = false
	}
	return errors.Join(errs...)
}

// existingDV loads the file's current deletion vector and checks that positions are new rows.
func (d *deleter) existingDV(fd FileDeletes) (*roaring64.Bitmap, error) {
	old, err := delta.LoadDeletionVector(d.ctx, d.store, fd.File.DeletionVector)
	if err != nil {
		return nil, fmt.Errorf("table %s: deletion vector of %s: %w", d.store.Location(), fd.File.Path, err)
	}
	if both := roaring64.And(old, fd.Positions); !both.IsEmpty() {
		return nil, fmt.Errorf("table %s: delete rows of %s: row %d is already deleted by the file's deletion vector; positions must be live rows", d.store.Location(), fd.File.Path, both.Minimum())
	}
	return old, nil
}

// physicalRows is the file's row count: numRecords from the log, else its Parquet footer.
func (d *deleter) physicalRows(f *delta.AddFile) (n int64, fromFooter bool, err error) {
	if n, ok := delta.NumRecords(f.Stats); ok {
		return n, false, nil
	}
	key, err := delta.ObjectKey(d.store.Location(), f.Path)
	if err != nil {
		return 0, false, err
	}
	r, err := d.store.Open(d.ctx, key)
	if err != nil {
		return 0, false, fmt.Errorf("open %s: %w", key, err)
	}
	defer r.Close()
	pf, err := parquetio.Open(d.ctx, r)
	if err != nil {
		return 0, false, fmt.Errorf("data file %s: %w", f.Path, err)
	}
	return pf.NumRows(), true, nil
}

// rewritten is one copy-on-write rewrite, ready to be staged.
type rewritten struct {
	fd   FileDeletes
	res  *parquetio.RewriteResult
	adds []*delta.AddFile
	rt   bool // row tracking preserved
}

// copyOnWriteAll rewrites the files concurrently (as many at a time as GOMAXPROCS: a clustered batch
// touches many small files, whose opening and footers would otherwise run one after the other) and
// stages them on tx in the order given.
func (d *deleter) copyOnWriteAll(work []FileDeletes) error {
	done := make([]*rewritten, len(work))
	g, ctx := errgroup.WithContext(d.ctx)
	g.SetLimit(runtime.GOMAXPROCS(0))
	for i, fd := range work {
		g.Go(func() error {
			rw, err := d.rewrite(ctx, fd)
			done[i] = rw
			return err
		})
	}
	if err := g.Wait(); err != nil {
		return err
	}
	for _, rw := range done {
		d.stage(rw)
	}
	return nil
}

// rewrite writes the file without the deleted rows (and without the rows of its old DV). Safe for
// concurrent use.
func (d *deleter) rewrite(ctx context.Context, fd FileDeletes) (*rewritten, error) {
	f, loc := fd.File, d.store.Location()
	old, err := d.existingDV(fd)
	if err != nil {
		return nil, err
	}
	drop := roaring64.Or(old, fd.Positions)
	key, err := delta.ObjectKey(loc, f.Path)
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", loc, err)
	}
	r, err := d.store.Open(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("table %s: open %s: %w", loc, key, err)
	}
	defer r.Close()
	// Files written by DML are new files of the table, not the output of a clustering run: like
	// Spark, they carry no clustering provider or ZCube tags, so clustering treats them as unclustered.
	wopts := d.opts
	wopts.DataChange = true
	wopts.ClusteringProvider, wopts.Tags = "", nil
	outs, err := NewRewriteOutputs(ctx, d.snap, f.PartitionValues, wopts)
	if err != nil {
		return nil, fmt.Errorf("table %s: prepare the rewrite of %s: %w", loc, f.Path, err)
	}
	d.mu.Lock()
	d.outs = append(d.outs, outs)
	d.mu.Unlock()
	ropts := outs.Options()
	ropts.TargetFileBytes = 0 // one output: the kept rows of one file
	// The file's row groups stay as they are and its pages that lose no row are copied as stored:
	// a delete that hits few pages costs about a read of the file.
	ropts.CopyPages = true
	in := parquetio.RewriteInput{File: r, Deleted: drop, RowTracking: f.RowTrackingBase()}
	res, err := parquetio.Rewrite(ctx, []parquetio.RewriteInput{in}, outs.Create, ropts)
	if err != nil {
		return nil, fmt.Errorf("table %s: rewrite %s without %d deleted rows: %w", loc, f.Path, fd.Positions.GetCardinality(), err)
	}
	// Every position must have named a row of the file: the engine only drops rows it has.
	if want := int64(drop.GetCardinality()); res.Deleted != want {
		return nil, fmt.Errorf("table %s: %s holds %d rows; %d of the %d rows to drop (deleted or already in its DV) lie beyond its end: refusing to commit",
			loc, f.Path, res.Rows+res.Deleted, want-res.Deleted, want)
	}
	if n, ok := delta.NumRecords(f.Stats); ok && n != res.Rows+res.Deleted {
		return nil, fmt.Errorf("table %s: %s holds %d rows but the log says numRecords %d: refusing to commit: %w", loc, f.Path, res.Rows+res.Deleted, n, delta.ErrCorruptTable)
	}
	adds, err := outs.AddFiles(res)
	if err != nil {
		return nil, fmt.Errorf("table %s: describe the rewrite of %s: %w", loc, f.Path, err)
	}
	return &rewritten{fd: fd, res: res, adds: adds, rt: outs.RowTrackingPreserved()}, nil
}

// stage records a rewrite on tx and in the result.
func (d *deleter) stage(rw *rewritten) {
	f, res, adds := rw.fd.File, rw.res, rw.adds
	removed := f
	if _, ok := delta.NumRecords(f.Stats); !ok {
		removed = f.WithNumRecords(res.Rows + res.Deleted) // the remove records the count for the commit's checks
	}
	d.tx.ReadFiles(f)
	d.tx.Remove(true, removed)
	d.tx.Add(adds...)
	if rw.rt {
		d.tx.MarkRowTrackingPreserved()
	}
	if len(adds) == 0 {
		d.res.FilesRemoved++
	} else {
		d.res.FilesRewritten++
	}
	if f.DeletionVector != nil {
		d.res.DVsRemoved++
	}
	d.res.FilesAdded += len(adds)
	d.res.RowsCopied += res.Rows
	d.res.BytesRemoved += f.Size
	for _, a := range adds {
		d.res.BytesWritten += a.Size
	}
	d.res.RowsDeleted += int64(rw.fd.Positions.GetCardinality())
	d.res.FilesTouched++
}

// withDV merges the positions into the file's deletion vector: the old (path, DV) is removed and the
// same path added with the union, as Spark does; a file whose rows all go is only removed.
func (d *deleter) withDV(fd FileDeletes) error {
	f, loc := fd.File, d.store.Location()
	old, err := d.existingDV(fd)
	if err != nil {
		return err
	}
	n, fromFooter, err := d.physicalRows(f)
	if err != nil {
		return fmt.Errorf("table %s: row count of %s: %w", loc, f.Path, err)
	}
	if mx := int64(fd.Positions.Maximum()); mx >= n {
		return fmt.Errorf("table %s: delete rows of %s: row %d is beyond the file's %d rows: refusing to commit", loc, f.Path, mx, n)
	}
	merged := roaring64.Or(old, fd.Positions)
	base := f
	if fromFooter {
		base = f.WithNumRecords(n) // an add with a DV needs numRecords; so does the commit's row check
	}
	d.tx.ReadFiles(f)
	d.tx.Remove(true, base)
	d.res.RowsDeleted += int64(fd.Positions.GetCardinality())
	if int64(merged.GetCardinality()) == n {
		d.res.FilesRemoved++
		d.res.BytesRemoved += f.Size
		if f.DeletionVector != nil {
			d.res.DVsRemoved++
		}
		return nil
	}
	dv, err := d.newDV(merged)
	if err != nil {
		return fmt.Errorf("table %s: %s: %w", loc, f.Path, err)
	}
	wide, err := base.WithWideBounds()
	if err != nil {
		return fmt.Errorf("table %s: %w", loc, err)
	}
	// Same path, size and modificationTime (the data file did not change, as Spark writes it).
	d.tx.Add(wide.WithDeletionVector(dv, f.ModificationTime))
	d.res.DVsWritten++
	if f.DeletionVector != nil {
		d.res.DVsUpdated++
	} else {
		d.res.DVsAdded++
	}
	return nil
}
