package storage

import (
	"slices"
	"sync"
	"testing"
)

// RecordDirSyncs makes the local store record every directory it fsyncs until the test ends, and
// returns a function listing them so far (in order).
func RecordDirSyncs(t *testing.T) func() []string {
	var mu sync.Mutex
	var dirs []string
	prev := syncDir
	syncDir = func(dir string) error {
		mu.Lock()
		dirs = append(dirs, dir)
		mu.Unlock()
		return prev(dir)
	}
	t.Cleanup(func() { syncDir = prev })
	return func() []string {
		mu.Lock()
		defer mu.Unlock()
		return slices.Clone(dirs)
	}
}
