// Package parquetio is the worker's Parquet layer. It reads and writes Parquet in terms of the Delta
// type system (package types), never Parquet's: callers pass a Delta schema whose field names are the
// names stored in the files (the physical names under column mapping). It offers:
//
//   - The logical reader: Open, File.Rows. Rows as types.Struct, with projection, absent columns read
//     as null, Delta type widening, field-id matching (column mapping "id" mode), deletion vectors
//     and row indexes, and every legacy list/map layout and INT96 timestamp that Spark, Databricks
//     and delta-rs have written (rows.go, resolve.go, assemble.go, convert_read.go).
//   - The columnar reader: File.Columns. Flat vectors of strings, integers and booleans per batch,
//     with row-group selection, row ranges and sparse fields, for callers that want values rather
//     than rows; worker/delta decodes every checkpoint with it (columns*.go).
//   - The writer: NewWriter. Rows written the way Spark maps Delta types, with explicit encodings
//     (dictionary while it pays, PLAIN otherwise), data page v1, a page index and exact per-column
//     statistics (writer.go, encoder.go, filewriter.go).
//   - The column-copy rewrite: Rewrite compacts files (deletion vectors applied) by copying columns
//     page by page with bounded memory and all cores busy; inputs whose layout differs take the
//     logical path. It can preserve Delta row tracking (RewriteOptions.RowTracking) (rewrite*.go,
//     rowtracking.go).
//   - Permute and PermuteSubset: the rows of many files written out in a given order, value by
//     value without building rows — the clustering rewrite (permute*.go).
//   - SortKeys: order-preserving uint64 keys of a file's columns, read at column speed, for the
//     clustering sort (sortkeys.go).
//
// Page headers, decompression and level decoding are our own (pages.go, codec.go); value decoding
// uses github.com/parquet-go/parquet-go's decoders only. parquet-go's own page reader (v0.32.0)
// decompresses every column chunk with the first row group's codec, and returns stale bytes for
// LZ4_RAW pages whose output buffer its codec regrows (parquet-go#608): the regression tests in
// parquetgo_defects_test.go build files that trigger both, and docs/upstream/parquet-go.md holds
// the reports. Encoding and file layout are our own too: the rewrite needs control over encodings,
// dictionary fallback, statistics and page layout that parquet-go's writer does not give without
// per-value overhead.
package parquetio
