// Package parquetio is the worker's Parquet layer: it reads Parquet data files and checkpoints into Delta
// logical values (types.Value), writes logical rows as Spark-compatible Parquet, and rewrites (compacts)
// many data files into few at column speed.
//
//   - Open and File.Rows read: projection, schema evolution (absent columns are null), Delta type
//     widening, field-id matching (column mapping "id" mode), deletion vectors and row indexes, every
//     legacy list/map layout and INT96 timestamp that Spark, Databricks and delta-rs have written.
//   - NewWriter writes rows the way Spark maps Delta types, with explicit encodings (dictionary while
//     it pays, PLAIN otherwise), data page v1, a page index and exact per-column statistics.
//   - Rewrite compacts files (deletion vectors applied) by copying columns page by page in bulk, with
//     bounded memory and all cores busy; files whose layout differs go through the logical path. It can
//     preserve Delta row tracking (RewriteOptions.RowTracking): materialized row ids and commit
//     versions are kept, missing ones computed per column from each input's base values.
//
// Reading and writing go through the Delta type system of package types, not through Parquet's: callers
// pass a Delta schema whose field names are the names stored in the files (the physical names under
// column mapping). Page headers, decompression and level decoding are our own (pages.go), value
// decoding uses github.com/parquet-go/parquet-go's decoders: parquet-go's page reader applies the first
// row group's codec to every row group and loses LZ4_RAW pages whose buffer it grows. Encoding is our
// own too (encoder.go, filewriter.go): the rewrite needs control over encodings, dictionary fallback,
// statistics and page layout that parquet-go's writer does not give without per-value overhead.
package parquetio
