// Package table is the glue between the Delta log (worker/delta) and the data files
// (worker/parquetio): it scans a snapshot's rows as logical values (paths resolved, deletion vectors
// applied, partition values materialised, column mapping and type widening handled, files skipped
// by predicate), writes logical rows as new data files of a table (partition routing, physical
// schema, codec, roll-over, Spark-like names, statistics, AddFile actions), turns rewrite outputs into
// AddFiles, summarises a table for inspect, and applies a declared table configuration (properties,
// liquid clustering) in one idempotent commit.
//
// Maintenance commands (optimize, vacuum, ingest) build on it; nothing here writes _delta_log except
// through a delta.Transaction.
package table
