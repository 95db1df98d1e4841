package delta

import "errors"

// ErrCorruptTable is matched (errors.Is) by every error that means the table itself violates the
// Delta protocol or cannot be decoded: a commit file that is empty, truncated or not JSON, a
// checkpoint or _last_checkpoint that does not parse, a metaData action without a schema, a path
// escaping the table, duplicate adds. Corruption does not heal on retry, so commands report it as
// refused (exit 2, reason CorruptTable) and every command that deletes or rewrites refuses to run.
// Wrap it with the file (and where known the line or action) that is corrupt:
//
//	fmt.Errorf("table %s: commit %s is empty: %w", loc, key, ErrCorruptTable)
var ErrCorruptTable = errors.New("the table is corrupt")
