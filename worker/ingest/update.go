package ingest

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"slices"

	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/ingest/state"
	"github.com/deltakeeper/deltakeeper/worker/merge"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// merging reports whether batches run as merges (an update method other than append).
func (o *Options) merging() bool { return o.Update.Mode != "" && o.Update.Mode != merge.Append }

// checkUpdate refuses update-method options a stream cannot serve.
func (o *Options) checkUpdate() error {
	if !o.merging() {
		return nil
	}
	if o.Format.Evolution == format.Rescue {
		return fmt.Errorf("schema evolution rescue is for append streams; use addNewColumns, failOnNewColumns or none with mode %s", o.Update.Mode)
	}
	return nil
}

// commitMerge runs one batch as a merge: the batch's files are the source, the stream's txn the
// merge's, so an upsert stream is exactly once like an append stream. done=false asks the loop for
// another attempt (a bad file skipped, or the batch found committed by a concurrent process).
func (r *runner) commitMerge(ctx context.Context, off *state.Offsets, a *attempt, br *BatchReport) (bool, error) {
	var files []source.File
	for _, f := range off.Files {
		if !slices.ContainsFunc(a.skipped, func(s state.SkippedFile) bool { return s.Key == f.Key }) {
			files = append(files, f)
		}
	}
	mo := r.o.Update
	mo.Format, mo.AppID, mo.BatchID, mo.Storage, mo.Logger = r.o.Format, r.appID, off.BatchID, r.o.Storage, r.o.Logger
	mo.Operation = "STREAMING UPDATE"
	mo.OperationParameters = maps.Clone(mo.OperationParameters)
	if mo.OperationParameters == nil {
		mo.OperationParameters = map[string]string{}
	}
	mo.OperationParameters["outputMode"] = "Update"
	mo.OperationParameters["queryId"] = r.appID
	mo.OperationParameters["epochId"] = fmt.Sprint(off.BatchID)
	for _, f := range files {
		if err := r.checkPlanned(ctx, f); err != nil {
			return r.onMergeError(err, off, a, f.Key)
		}
	}
	rep, err := merge.Run(ctx, r.tbl, merge.Batch{Store: r.src.Store(), Files: files}, mo)
	if err != nil {
		return r.onMergeError(err, off, a, "")
	}
	if rep.AlreadyCommitted {
		return false, nil // the loop finds the batch committed
	}
	br.Version, br.Rows, br.Skipped = rep.Version, rep.SourceRows, a.skipped
	br.BytesWritten, br.SchemaChange, br.Merge = rep.BytesWritten, rep.SchemaChanges, rep
	br.FilesWritten = map[string]int{"": rep.FilesAdded}
	return true, nil
}

// checkPlanned refuses a file that changed or went away since the batch was planned.
func (r *runner) checkPlanned(ctx context.Context, f source.File) error {
	info, err := r.src.Store().Stat(ctx, f.Key)
	if err != nil {
		return &format.Error{File: r.uri(f.Key), Err: fmt.Errorf("the file is gone since the batch was planned: %w", err)}
	}
	now := source.File{Key: f.Key, Size: info.Size, ModTime: info.ModTime, ETag: info.ETag}
	if now.Identity() != f.Identity() {
		return &format.Error{File: r.uri(f.Key), Err: fmt.Errorf("the file changed after it was planned (size %d → %d): set onBadFile to skip to move past it", f.Size, info.Size)}
	}
	return nil
}

// onMergeError skips a bad file under onBadFile=skip (the next attempt merges the rest) and
// otherwise stops the stream with the merge's error.
func (r *runner) onMergeError(err error, off *state.Offsets, a *attempt, key string) (bool, error) {
	var bad *format.Error
	if errors.As(err, &bad) && r.o.OnBadFile == BadFileSkip {
		if key == "" {
			key = r.keyOf(bad.File)
		}
		if key != "" && !slices.ContainsFunc(a.skipped, func(s state.SkippedFile) bool { return s.Key == key }) {
			r.o.Logger.Warn("Skipping bad source file", "file", bad.File, "err", bad.Err)
			a.skipped = append(a.skipped, state.SkippedFile{Key: key, Reason: err.Error()})
			return false, nil
		}
	}
	if errors.As(err, &bad) {
		var re *result.Error
		if !errors.As(err, &re) {
			err = result.Refuse(ReasonBadFile, err)
		}
		return false, fmt.Errorf("batch %d: %w", off.BatchID, err)
	}
	return false, fmt.Errorf("batch %d: %w", off.BatchID, err)
}

// keyOf maps a source file URI back to its key in the batch's store.
func (r *runner) keyOf(uri string) string {
	for _, f := range r.st.Pending.Files {
		if r.uri(f.Key) == uri {
			return f.Key
		}
	}
	return ""
}
