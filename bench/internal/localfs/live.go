package localfs

import (
	"context"
	"path/filepath"
	"sort"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// LiveFiles lists the absolute paths of the live data files of the local table at dir, sorted: what
// DuckDB reads when it checks a table without deletion vectors.
func LiveFiles(dir string) ([]string, error) {
	store, err := storage.NewLocal(dir)
	if err != nil {
		return nil, err
	}
	snap, err := delta.NewTable(store).Latest(context.Background())
	if err != nil {
		return nil, err
	}
	var out []string
	for _, f := range snap.Files() {
		key, err := delta.ObjectKey(store.Location(), f.Path)
		if err != nil {
			return nil, err
		}
		out = append(out, filepath.Join(dir, filepath.FromSlash(key)))
	}
	sort.Strings(out)
	return out, nil
}
