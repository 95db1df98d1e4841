package storage

import (
	"errors"
	"fmt"
	"strings"
)

// Keys are raw bytes, not URL-encoded: a Delta log's add.path "date%3D2024-01-01/a%20b.parquet" is the
// key "date=2024-01-01/a b.parquet". Decoding is the delta package's job; this package never decodes or
// encodes, so a key containing '%' is stored under exactly that name.

// ErrInvalidKey is matched by errors for keys no object may have (see validateKey). Keys come from a
// table's log, so such a key means a corrupt log.
var ErrInvalidKey = errors.New("invalid object key")

// validateKey rejects keys that would escape the root or alias another key once mapped to a file
// path ("a//b", "./a", "a/../b") so that the local store and S3 agree on what a key names. S3 itself
// would accept most of these, but no Delta table needs them and one bad key silently aliasing another
// would corrupt a table.
func validateKey(key string) error {
	if key == "" {
		return fmt.Errorf("empty key: keys name an object under the store's root: %w", ErrInvalidKey)
	}
	if strings.HasPrefix(key, "/") || strings.HasSuffix(key, "/") {
		return fmt.Errorf("key %q must not start or end with '/': keys are relative object names: %w", key, ErrInvalidKey)
	}
	if strings.IndexByte(key, 0) >= 0 {
		return fmt.Errorf("key %q contains a NUL byte: %w", key, ErrInvalidKey)
	}
	for seg := range strings.SplitSeq(key, "/") {
		switch seg {
		case "":
			return fmt.Errorf("key %q contains an empty path segment (\"//\"): %w", key, ErrInvalidKey)
		case ".", "..":
			return fmt.Errorf("key %q contains a %q segment: keys must be clean relative paths: %w", key, seg, ErrInvalidKey)
		}
	}
	return nil
}

// validatePrefix accepts "" or anything that could begin a valid key; a prefix may end mid-name
// ("_delta_log/0000000000000000001") or at a directory boundary ("_delta_log/").
func validatePrefix(prefix string) error {
	if prefix == "" {
		return nil
	}
	if strings.HasPrefix(prefix, "/") {
		return fmt.Errorf("list prefix %q must not start with '/': it is relative to the store's root", prefix)
	}
	if strings.IndexByte(prefix, 0) >= 0 {
		return fmt.Errorf("list prefix %q contains a NUL byte", prefix)
	}
	return nil
}
