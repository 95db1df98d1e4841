// Package optimize compacts a Delta table's small files by bin-packing, the way Spark's OPTIMIZE does
// (OptimizeExecutor in delta-io/delta's spark/src/main/scala/org/apache/spark/sql/delta/commands/
// OptimizeTableCommand.scala), and offers the same engine as auto compaction for the ingest path (Spark's
// hooks/AutoCompact.scala; worker/ingest calls AutoCompact after each batch's commit).
//
// A run plans, rewrites and commits:
//
//   - plan (pure, after one I/O step): the candidates are files smaller than the minimum file size,
//     files whose deletion vector hides more than the allowed share of their rows, and files with a
//     deletion vector but no row count; they are grouped by normalised partition values, sorted by
//     size and packed greedily into bins of at most the target size; a bin of one file is dropped
//     unless the file carries a deletion vector (rewriting it purges the deleted rows) or holds no
//     rows (rewriting it removes it and adds nothing). Candidates whose add carries no numRecords
//     (old Spark writers; an overwrite can leave a zero-row file without statistics) get their row
//     count from their Parquet footer first, so that every bin knows its rows, the rewrite is
//     checked against them, and the removes record them for the commit's row check.
//   - rewrite: each bin is streamed through parquetio.Rewrite (page-level column copy, deletion
//     vectors applied, output rolled at the target size), bins in parallel. Memory is bounded by a
//     few row groups per bin in flight, whatever the table size. On tables with row tracking
//     enabled the outputs also carry every row's stable row id and row commit version in the
//     materialized columns (delta.rowTracking.materialized*ColumnName): the value the input stored,
//     else its baseRowId plus the row's position in the original file (deleted rows counted) and its
//     defaultRowCommitVersion — Spark's OPTIMIZE does the same — and the commit declares
//     delta.rowTracking.preserved; the new files get fresh ids above the high-water mark.
//   - commit: every batch of bins is one OPTIMIZE commit through delta.Transaction, removes and adds
//     with dataChange=false. Blind appends that win the race are rebased onto by the transaction
//     itself. When a winner conflicts (a concurrent compaction, DELETE or MERGE took some inputs),
//     the batch is retried on the new snapshot with the bins whose inputs are all still live — Spark's
//     rule, applied per bin instead of per batch — and the other bins are dropped, their outputs
//     deleted and reported.
//   - re-plan: after the plan's bins are done, the still live files of the dropped bins are planned
//     again on the latest snapshot with the same rules (size, deleted rows, --where), rewritten from
//     it and committed on it, one bin per commit since the table is contended; at most MaxReplans
//     rounds (3), never one that would not fit before the context's deadline. The transaction's read set is exactly the compacted files (no partition
//     predicate is registered, unlike Spark): a compaction's result depends on nothing else, so a
//     concurrent commit adding files to the same partitions never invalidates it.
//
// Output files are deleted whenever their commit certainly did not land; when the outcome of a
// commit is unknown (a storage timeout that could not be resolved) they are left for VACUUM, because
// the log may reference them.
package optimize
