package parquetio

import "errors"

// ErrCorruptFile is matched (errors.Is) by errors for Parquet files that cannot be decoded: a
// missing or wrong magic number, a footer that does not parse, truncated pages, values that do not
// decode. Callers add the file's key; the CLI reports it as a corrupt table (refused, exit 2).
var ErrCorruptFile = errors.New("the Parquet file is corrupt")
