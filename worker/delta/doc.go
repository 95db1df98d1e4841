// Package delta is the Delta Lake log layer of the worker: it reads a table's _delta_log into an
// immutable Snapshot (log segment selection, checkpoints, action reconciliation), decides per
// operation whether deltakeeper may touch the table at all (the table-features gate), and is the
// only code that ever writes to _delta_log: every commit goes through a Transaction, which applies
// the protocol's conflict rules when another writer wins the race for a version.
//
// The package builds on two narrow interfaces: worker/storage for bytes (List/Get/PutIfAbsent…)
// and worker/parquetio for checkpoint Parquet files. It knows nothing about Kubernetes, S3 or the
// data files' contents beyond what the log says about them (paths, partition values, statistics,
// deletion vectors).
//
// Protocol references in comments ("PROTOCOL.md §…") are to delta-io/delta's PROTOCOL.md.
package delta
