// Package parquetio is the worker's Parquet layer: it reads Parquet data files and checkpoints into Delta
// logical values (types.Value), writes logical rows as Spark-compatible Parquet, and rewrites (compacts)
// many data files into few at column speed.
//
// Reading and writing go through the Delta type system of package types, not through Parquet's: callers
// pass a Delta schema whose field names are the names stored in the files (the physical names under
// column mapping), and get back values that compare with types.Compare. Decoding of pages (every
// encoding, codec and legacy layout Spark, Databricks, delta-rs and parquet-go have written) is
// delegated to github.com/parquet-go/parquet-go; encoding is our own (encoder.go, filewriter.go) because
// the rewrite path needs control over encodings, dictionary fallback, statistics and page layout that
// the library's writer does not give without per-value overhead.
package parquetio
