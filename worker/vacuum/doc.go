// Package vacuum deletes data files a Delta table no longer references, once they are older than the
// retention period, as delta-io/delta's spark/src/main/scala/org/apache/spark/sql/delta/commands/VacuumCommand.scala
// and delta-rs's crates/core/src/operations/vacuum.rs do.
//
// Two modes find the candidates:
//
//   - Full lists the table's storage and takes every file that the current snapshot does not
//     reference (live files, their deletion vectors, and the files and deletion vectors of tombstones
//     still inside the retention period), except the log, hidden paths (a directory or file name
//     starting with "_" or "." — Spark's isHiddenDirectory, which still descends into _change_data,
//     _delta_index and partition directories such as _col=value) and files modified within the
//     retention period (a writer may be about to commit them). It also removes the leftovers of
//     interrupted deltakeeper writes in data directories — temp files on disk, incomplete multipart
//     uploads on S3 (storage/temp.go) — once their last activity is older than the retention
//     (leftovers.go); those under _delta_log are log cleanup's.
//   - Lite takes only the files of the snapshot's expired tombstones (remove actions older than the
//     retention still in the log state) and their deletion vectors. It needs no listing, so it is
//     cheap on large tables, but it cannot see orphans no commit ever referenced, nor removes whose
//     tombstones a checkpoint already dropped: run Full now and then.
//
// A vacuum can also be one share of N (shares.go): the table's key space is split by the file names of
// a pinned version, so N processes list and delete it once between them.
//
// Before anything, the full writer protocol is checked (the features gate's Vacuum operation), which
// is what the vacuumProtocolCheck feature asks of every vacuum: a vacuum that does not understand a
// writer feature could delete files that feature still needs. A retention shorter than the table's
// delta.deletedFileRetentionDuration is refused unless explicitly allowed, because readers of older
// snapshots and writers still committing need those files.
//
// Unlike Spark with vacuum logging enabled and delta-rs, vacuum does not commit VACUUM START/END
// entries: the commits record nothing the table needs (Lite mode here reads tombstones, not the
// history of earlier vacuums), they would make vacuum a writer of the log that can race and trigger
// checkpoints, and deltakeeper reports every run in its result document and the DeltaTable status
// instead. Vacuum therefore never writes to _delta_log.
package vacuum
