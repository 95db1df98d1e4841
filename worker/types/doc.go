// Package types is the Delta Lake type system shared by the whole data plane: the schema (parsed from and
// written to metaData.schemaString, column-mapping metadata included) and the logical values that scans,
// statistics, partition values and clustering compare. It is a leaf package: the Parquet layer and the log
// layer both build on it, so neither has to import the other to agree on what a "timestamp" is.
package types
