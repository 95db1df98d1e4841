package delta

import (
	"context"
	"encoding/json"
	"errors"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// LastCheckpoint is the content of _delta_log/_last_checkpoint (PROTOCOL.md §Last Checkpoint File
// Schema). It is only a hint: readers verify it by listing and ignore it when it is wrong.
type LastCheckpoint struct {
	Version       Version           `json:"version"`
	Size          int64             `json:"size"`
	Parts         *int              `json:"parts,omitempty"`
	SizeInBytes   *int64            `json:"sizeInBytes,omitempty"`
	NumOfAddFiles *int64            `json:"numOfAddFiles,omitempty"`
	Tags          map[string]string `json:"tags,omitempty"`
}

// readLastCheckpoint returns the hint, or ok=false when it is missing, empty or corrupt: none of
// those may stop a read, because the hint is written after the checkpoint and non-atomically by
// some engines. Context and storage errors other than not-found are returned.
func readLastCheckpoint(ctx context.Context, store storage.Store) (LastCheckpoint, bool, error) {
	data, err := store.Get(ctx, LastCheckpointKey)
	if errors.Is(err, storage.ErrNotFound) {
		return LastCheckpoint{}, false, nil
	}
	if err != nil {
		if ctx.Err() != nil {
			return LastCheckpoint{}, false, ctx.Err()
		}
		// An unreadable hint is not worth failing for; listing finds the checkpoint anyway.
		return LastCheckpoint{}, false, nil
	}
	var lc LastCheckpoint
	if len(data) == 0 || json.Unmarshal(data, &lc) != nil || lc.Version < 0 {
		return LastCheckpoint{}, false, nil
	}
	return lc, true, nil
}
