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
// The package builds on two narrow interfaces: worker/storage for bytes (List/Get/PutIfAbsent…)
// and worker/parquetio for checkpoint Parquet files. It knows nothing about Kubernetes, S3 or the
// data files' contents beyond what the log says about them (paths, partition values, statistics,
// deletion vectors). Protocol references in comments ("PROTOCOL.md §…") are to delta-io/delta's
// PROTOCOL.md.
package delta
