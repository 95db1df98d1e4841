package storage

import (
	"bytes"
	"context"
	"errors"
	"fmt"
)

// refusedPut settles a conditional put the store refused (the object exists). When the SDK sent the
// request more than once, an earlier attempt whose answer was lost may have written the object itself:
// the stored bytes tell. Ours: nil. Another writer's: ErrAlreadyExists. Unreadable: an error that is
// neither, because calling it another writer's would make the caller treat its own landed commit as lost
// and delete the files it references; the caller settles such an outcome by reading the object again.
func refusedPut(ctx context.Context, get func(context.Context, string) ([]byte, error), uri, key string, data []byte, retried bool) error {
	if !retried {
		return fmt.Errorf("put-if-absent %s: %w", uri, ErrAlreadyExists)
	}
	existing, err := get(ctx, key)
	switch {
	case err == nil && bytes.Equal(existing, data):
		return nil
	case err == nil || errors.Is(err, ErrNotFound):
		return fmt.Errorf("put-if-absent %s: %w", uri, ErrAlreadyExists)
	}
	return fmt.Errorf("put-if-absent %s: refused after a retried attempt, and reading the object back to tell "+
		"whether that attempt wrote it failed: %w", uri, err)
}
