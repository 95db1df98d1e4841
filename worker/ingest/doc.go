// Package ingest is the data plane of StreamIngest: it turns new files under a prefix into Delta
// commits, exactly once.
//
// A run lists the source (source), takes the oldest new files within the admission limits
// (maxFilesPerTrigger, the soft maxBytesPerTrigger), stores the batch's plan in the stream's
// checkpoint with put-if-absent before writing anything (state), reads the files into the table's
// schema (format), writes data files (table.Writer: grouped by partition and rolled at the target
// size with optimized writes, one file per source file and partition without), and commits them
// through delta.Transaction with a txn action — appId the stream's id, version the batch id — and any
// schema change, all in one commit. Then it marks the batch committed, compacts the state now and
// then, and runs auto compaction on the partitions the commit touched.
//
// Exactly once: a batch whose txn is already in the table is only marked done; an unfinished batch
// is replayed with its stored plan, never re-planned; two processes of one stream agree on every
// plan (put-if-absent) and the txn is re-checked against concurrent winners at commit time (the
// transaction's conflict rules treat a concurrent txn of the same appId as a conflict, after which
// the table is read again and the batch found committed).
//
// Three write paths, one commit. Parquet sources whose columns fit an unpartitioned table exactly
// (same names, the output's layout, only widening conversions; table.CopyFits) are copied page by
// page through parquetio.Rewrite, without decoding (copy.go). CSV and newline-delimited JSON into a
// table whose columns are all flat (no struct, array, map, decimal or variant; not in rescue mode)
// are read as column vectors (format.ColumnReader) and encoded without boxing values
// (table.Writer.WriteColumns). Everything else — nested or decimal columns, rescue mode, multi-line
// JSON, Parquet sources that do not fit or go to a partitioned table — takes the row path
// (format.Reader.Next, table.Writer.Write). The columnar readers leave any line they do not scan
// themselves (escapes, nested values, keys in another case) to the row path's conversion, so both
// accept the same input and report the same errors.
//
// Bad input (a corrupt or truncated file, a value that does not convert, a file deleted after it was
// listed) fails the batch with an error naming the file, row and column, and nothing is committed;
// with onBadFile=skip the file is left out and recorded as skipped instead. Nothing here imports
// Kubernetes; storage goes through worker/storage only.
package ingest
