package vacuum

import (
	"context"
	"errors"
	"fmt"
	"path"
	"strings"
	"sync"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// candidate is a file to delete.
type candidate struct {
	key  string
	size int64
}

// references are the storage keys the snapshot still needs.
type references struct {
	keys map[string]bool
	// expired are the tombstones older than the cutoff, for lite mode.
	expired []*delta.RemoveFile
}

// referenced collects the keys of the live files, their deletion vectors, and the files and
// deletion vectors of tombstones inside the retention (Spark's validFiles). A path that cannot be
// mapped to a key of this table is an error unless it is an absolute URI elsewhere (a shallow clone's
// file, which a listing of this table never sees): an unknown reference must not become a deletion.
func referenced(snap *delta.Snapshot, cutoff time.Time) (*references, error) {
	loc := snap.Table().Location()
	refs := &references{keys: make(map[string]bool, snap.NumFiles())}
	keep := func(p string, dv *delta.DeletionVectorDescriptor) error {
		key, err := delta.ObjectKey(loc, p)
		if err == nil {
			refs.keys[key] = true
		} else if !strings.Contains(p, "://") && !strings.HasPrefix(p, "file:") {
			return fmt.Errorf("table %s: cannot resolve referenced file %q: %w; refusing to vacuum", loc, p, err)
		}
		if dv != nil && dv.StorageType != delta.DVStorageInline {
			key, err := dv.StorageKey(loc)
			if err != nil {
				return fmt.Errorf("table %s: deletion vector of %s: %w; refusing to vacuum", loc, p, err)
			}
			refs.keys[key] = true
		}
		return nil
	}
	for _, f := range snap.Files() {
		if err := keep(f.Path, f.DeletionVector); err != nil {
			return nil, err
		}
	}
	cut := cutoff.UnixMilli()
	for _, r := range snap.Tombstones() {
		if r.DeletionTime() < cut {
			refs.expired = append(refs.expired, r)
			continue
		}
		if err := keep(r.Path, r.DeletionVector); err != nil {
			return nil, err
		}
	}
	return refs, nil
}

// listCandidates lists the table's storage (full mode), or the share's part of it.
func listCandidates(ctx context.Context, snap *delta.Snapshot, plan *listPlan, refs *references, rep *Report, progress func(string)) ([]candidate, error) {
	isHidden := hiddenRule(snap)
	dirs := map[string]bool{}
	var out []candidate
	var listed int
	err := plan.list(ctx, snap.Table().Store(), isHidden, func(obj storage.ObjectInfo) {
		listed++
		if listed%10000 == 0 {
			progress(fmt.Sprintf("listed %d files, %d to delete", listed, len(out)))
		}
		if hiddenPath(obj.Key, isHidden) {
			return
		}
		dirs[path.Dir(obj.Key)] = true
		switch {
		case refs.keys[obj.Key]:
		case !obj.ModTime.Before(rep.Cutoff):
			rep.KeptRecent++
		default:
			out = append(out, candidate{key: obj.Key, size: obj.Size})
		}
	})
	if err != nil {
		return nil, fmt.Errorf("table %s: %w", snap.Table().Location(), err)
	}
	rep.Directories = int64(len(dirs))
	return out, nil
}

// hiddenRule is Spark's DeltaTableUtils.isHiddenDirectory for one path element, for the snapshot's
// partition columns (by logical and physical name).
func hiddenRule(snap *delta.Snapshot) func(name string) bool {
	var cols []string
	for _, f := range snap.PartitionColumns() {
		cols = append(cols, f.Name, delta.PhysicalName(f, snap.ColumnMappingMode()))
	}
	return hiddenRuleFor(cols)
}

// hiddenRuleFor: names starting with "_" or "." are hidden, except _delta_index, _change_data and
// partition directories ("col=…", the column name escaped as in directory names).
func hiddenRuleFor(partitionColumns []string) func(name string) bool {
	var prefixes []string
	for _, n := range partitionColumns {
		prefixes = append(prefixes, n+"=", delta.EscapePathName(n)+"=")
	}
	return func(name string) bool {
		if !strings.HasPrefix(name, "_") && !strings.HasPrefix(name, ".") {
			return false
		}
		if strings.HasPrefix(name, "_delta_index") || strings.HasPrefix(name, "_change_data") {
			return false
		}
		for _, p := range prefixes {
			if strings.HasPrefix(name, p) {
				return false
			}
		}
		return true
	}
}

// hiddenPath applies the rule to every directory and the file name of a key: a listing never
// descends into a hidden directory.
func hiddenPath(key string, isHidden func(string) bool) bool {
	if strings.HasPrefix(key, delta.LogDir) {
		return true
	}
	for _, name := range strings.Split(key, "/") {
		if isHidden(name) {
			return true
		}
	}
	return false
}

// tombstoneCandidates are the files and deletion vectors of expired tombstones that nothing live
// references (lite mode). Each is looked up, so files an earlier vacuum deleted are not counted again.
// A share takes the tombstones in its part of the key space.
func tombstoneCandidates(ctx context.Context, snap *delta.Snapshot, plan *listPlan, refs *references, parallelism int) ([]candidate, error) {
	loc := snap.Table().Location()
	seen := map[string]bool{}
	var keys []string
	add := func(key string) {
		if !refs.keys[key] && !seen[key] && !strings.HasPrefix(key, delta.LogDir) && plan.owns(key) {
			seen[key] = true
			keys = append(keys, key)
		}
	}
	for _, r := range refs.expired {
		if key, err := delta.ObjectKey(loc, r.Path); err == nil {
			add(key)
		}
		if dv := r.DeletionVector; dv != nil && dv.StorageType != delta.DVStorageInline {
			if key, err := dv.StorageKey(loc); err == nil {
				add(key)
			}
		}
	}
	return statAll(ctx, snap.Table().Store(), keys, parallelism)
}

// statAll returns the keys that exist, with their sizes, in input order.
func statAll(ctx context.Context, store storage.Store, keys []string, parallelism int) ([]candidate, error) {
	found := make([]candidate, len(keys))
	var mu sync.Mutex
	var firstErr error
	each(ctx, len(keys), parallelism, func(i int) bool {
		info, err := store.Stat(ctx, keys[i])
		switch {
		case errors.Is(err, storage.ErrNotFound):
			return true
		case err != nil:
			mu.Lock()
			firstErr = cmpErr(firstErr, fmt.Errorf("stat %s: %w", keys[i], err))
			mu.Unlock()
			return false
		}
		found[i] = candidate{key: keys[i], size: info.Size}
		return true
	})
	if firstErr != nil {
		return nil, firstErr
	}
	out := found[:0]
	for _, c := range found {
		if c.key != "" {
			out = append(out, c)
		}
	}
	return out, nil
}

func cmpErr(first, err error) error {
	if first != nil {
		return first
	}
	return err
}
