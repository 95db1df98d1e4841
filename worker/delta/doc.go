// Package delta is the Delta Lake log layer of the worker: it reads a table's _delta_log into an
// immutable Snapshot, decides per operation whether deltakeeper may touch the table at all (the
// table-features gate), and is the only code that ever writes to _delta_log: every commit goes
// through a Transaction, which applies the protocol's conflict rules when another writer wins
// the race for a version.
//
// Reading:
//
//	tbl := delta.NewTable(store)                  // storage.Store rooted at the table
//	snap, err := tbl.Latest(ctx)                  // or At(ctx, v), AtTime(ctx, t), State(ctx, v)
//	err = snap.CheckOperation(delta.OpRewrite)    // the features gate, one place for all operations
//	for _, f := range snap.Files() { … }          // live files; Stats, PartitionValue, PartitionKey
//	bm, err := delta.LoadDeletionVector(ctx, store, f.DeletionVector)
//
// Writing (compaction shown; appends use OpAppend and Add only):
//
//	tx, err := snap.Begin(delta.OpRewrite, delta.TxnOptions{Operation: "OPTIMIZE"})
//	tx.ReadFiles(inputs...)                       // the read set the conflict rules check
//	tx.Remove(false, inputs...)                   // dataChange=false: a rearrangement
//	stats, _ := snap.BuildStats(res.NumRows, res.Columns) // from parquetio.WriteResult
//	tx.Add(&delta.AddFile{Path: delta.EncodePath(key), Stats: stats, …})
//	res, err := tx.Commit(ctx)                    // *ConflictError on a real conflict
//
// Checkpoints (Table.Checkpoint, also automatic every delta.checkpointInterval commits), time
// travel and metadata cleanup (Table.CleanupLog) live on Table.
//
// A corrupt log (a commit that is empty or not JSON, a metaData without a usable schema, a
// partition column missing from the schema, a path escaping the table, a commit adding one path
// twice, a compaction file that is the only record of its range and is not a reconciled set)
// fails the load with an error wrapping ErrCorruptTable that names the file (validate_state.go).
// Latest refuses such a table rather than guessing past the bad file; versions below it stay
// readable with At. Every command that deletes or rewrites loads a snapshot first, so none runs.
// Log compaction files are read only where their commits are gone, and a snapshot that rests
// on one is never checkpointed (compaction.go). Log files are streamed: a huge commitInfo costs
// a read buffer (actions_read.go).
//
// A commit whose acknowledgement is lost is settled by reading the version back (Commit):
// committed, lost to another writer, or not written (and retried); only when the log cannot be
// read is the outcome reported as unknown (CommitOutcomeUnknownError).
//
// The package builds on two narrow interfaces: worker/storage for bytes (List/Get/PutIfAbsent…)
// and worker/parquetio for checkpoint Parquet files. It knows nothing about Kubernetes, S3 or the
// data files' contents beyond what the log says about them (paths, partition values, statistics,
// deletion vectors). Protocol references in comments ("PROTOCOL.md §…") are to delta-io/delta's
// PROTOCOL.md.
package delta
