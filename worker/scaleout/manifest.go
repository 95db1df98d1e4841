package scaleout

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// ManifestFormat is the version of the manifest document; readers refuse others.
const ManifestFormat = 1

// RunsDir is the directory, under the table root, of the runs' manifests. Its leading "_" hides it from
// Delta readers and from VACUUM's listing of data files.
const RunsDir = "_deltakeeper/runs"

// Manifest is what one share wrote: its units, each committed or dropped as a whole.
type Manifest struct {
	Format  int    `json:"format"`
	RunID   string `json:"run"`
	Index   int    `json:"index"`
	Count   int    `json:"count"`
	Version int64  `json:"version"` // the snapshot the share planned from
	// Operation is the step: "optimize" (bin-packing) or "cluster".
	Operation string `json:"op"`
	// Params are the commit's operationParameters (the same for every share of a run).
	Params map[string]string `json:"params,omitempty"`
	// RowTrackingPreserved: the outputs carry the inputs' row ids and commit versions.
	RowTrackingPreserved bool   `json:"rowTrackingPreserved,omitempty"`
	Units                []Unit `json:"units"`
	WrittenAt            int64  `json:"writtenAt"` // ms since the epoch
}

// Unit is a set of inputs rewritten into a set of outputs holding exactly their live rows: a compaction
// bin, or a clustering share. It commits only if every input is still live.
type Unit struct {
	Label string `json:"label"` // partition directory or ZCube id, for people
	// Inputs are the files removed, as the pinned snapshot held them; an input whose add lacks
	// numRecords carries the count its footer gave, so the commit's row check covers it.
	Inputs []*delta.AddFile `json:"inputs"`
	Adds   []*delta.AddFile `json:"adds"`
	Rows   int64            `json:"rows"`             // rows written
	Purged int64            `json:"purged,omitempty"` // rows deletion vectors hid, dropped by the rewrite
	DVs    int64            `json:"dvs,omitempty"`    // inputs with a deletion vector
}

// InputBytes and OutputBytes are the unit's sizes.
func (u *Unit) InputBytes() (n int64) {
	for _, f := range u.Inputs {
		n += f.Size
	}
	return n
}

func (u *Unit) OutputBytes() (n int64) {
	for _, f := range u.Adds {
		n += f.Size
	}
	return n
}

// ManifestKey is share index's manifest in run.
func ManifestKey(run string, index int) string {
	return fmt.Sprintf("%s/%s/share-%03d.json", RunsDir, run, index)
}

// WriteManifest stores m with put-if-absent. When a manifest is already there (an earlier attempt of the
// same share finished), that one wins and is returned with existed=true: the caller's outputs are then
// duplicates to delete.
func WriteManifest(ctx context.Context, store storage.Store, m *Manifest) (stored *Manifest, existed bool, err error) {
	m.Format = ManifestFormat
	m.WrittenAt = time.Now().UnixMilli()
	data, err := json.Marshal(m)
	if err != nil {
		return nil, false, fmt.Errorf("encode the manifest of share %d: %w", m.Index, err)
	}
	key := ManifestKey(m.RunID, m.Index)
	err = store.PutIfAbsent(ctx, key, data)
	if errors.Is(err, storage.ErrAlreadyExists) {
		prev, rerr := ReadManifest(ctx, store, m.RunID, m.Index)
		if rerr != nil {
			return nil, false, rerr
		}
		if prev.Version != m.Version || prev.Count != m.Count || prev.Operation != m.Operation {
			return nil, false, fmt.Errorf("%s holds share %d/%d at version %d (%s), not %d/%d at version %d: two runs share the id %s; use a new run id",
				key, prev.Index, prev.Count, prev.Version, prev.Operation, m.Index, m.Count, m.Version, m.RunID)
		}
		return prev, true, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("write manifest %s: %w", key, err)
	}
	return m, false, nil
}

// ReadManifest reads one share's manifest; a missing one is storage.ErrNotFound (wrapped).
func ReadManifest(ctx context.Context, store storage.Store, run string, index int) (*Manifest, error) {
	key := ManifestKey(run, index)
	data, err := store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read manifest %s: %w", key, err)
	}
	var m Manifest
	if err := json.Unmarshal(data, &m); err != nil {
		return nil, fmt.Errorf("manifest %s: %w: %w", key, err, delta.ErrCorruptTable)
	}
	if m.Format != ManifestFormat || m.RunID != run || m.Index != index {
		return nil, fmt.Errorf("manifest %s has format %d, run %q, index %d; expected format %d of run %q, index %d: %w",
			key, m.Format, m.RunID, m.Index, ManifestFormat, run, index, delta.ErrCorruptTable)
	}
	return &m, nil
}

// WaitOptions bound how long the committing share waits for the others.
type WaitOptions struct {
	// Timeout is the longest wait for the missing manifests; after it the present ones are committed.
	Timeout time.Duration
	// Poll is the interval between looks (0 means 2 s).
	Poll time.Duration
	// Progress is told which shares are still missing.
	Progress func(string)
}

// WaitManifests reads the manifests of every share of s's run, waiting for missing ones until
// opts.Timeout. It returns the manifests found (nil for missing shares); a share that never wrote one is
// not an error: its work is left for the next run.
func WaitManifests(ctx context.Context, store storage.Store, s Share, opts WaitOptions) ([]*Manifest, error) {
	poll := opts.Poll
	if poll <= 0 {
		poll = 2 * time.Second
	}
	deadline := time.Now().Add(opts.Timeout)
	out := make([]*Manifest, s.Count)
	for {
		missing := 0
		for i := range out {
			if out[i] != nil {
				continue
			}
			m, err := ReadManifest(ctx, store, s.RunID, i)
			switch {
			case errors.Is(err, storage.ErrNotFound):
				missing++
				continue
			case err != nil:
				return nil, err
			case m.Version != s.Version || m.Count != s.Count:
				return nil, fmt.Errorf("manifest of share %d is for %d shares at version %d, this run has %d at version %d: two runs share the id %s: %w",
					i, m.Count, m.Version, s.Count, s.Version, s.RunID, delta.ErrCorruptTable)
			}
			out[i] = m
		}
		if missing == 0 || !time.Now().Before(deadline) {
			return out, nil
		}
		if opts.Progress != nil {
			opts.Progress(fmt.Sprintf("waiting for %d of %d shares' manifests", missing, s.Count))
		}
		select {
		case <-ctx.Done():
			return nil, fmt.Errorf("waiting for the manifests of run %s: %w", s.RunID, context.Cause(ctx))
		case <-time.After(min(poll, time.Until(deadline)+time.Millisecond)):
		}
	}
}

// RemoveRun deletes the run directory's manifests (after the commit, when nothing needs them).
func RemoveRun(ctx context.Context, store storage.Store, run string, count int) error {
	var errs []error
	for i := range count {
		errs = append(errs, store.Delete(ctx, ManifestKey(run, i)))
	}
	return errors.Join(errs...)
}

// StaleRunAge is the age after which a run directory left by a run that never committed (its Job was
// deleted, a share never finished) is removed by the next run's commit step. VACUUM never lists
// _deltakeeper/, so this is what keeps the run directories from piling up.
const StaleRunAge = 7 * 24 * time.Hour

// RemoveStaleRuns deletes the manifests under RunsDir last written before cutoff; it returns how many.
func RemoveStaleRuns(ctx context.Context, store storage.Store, cutoff time.Time) (int, error) {
	n := 0
	for obj, err := range store.List(ctx, RunsDir+"/", "") {
		if err != nil {
			return n, fmt.Errorf("list %s: %w", RunsDir, err)
		}
		if obj.ModTime.IsZero() || !obj.ModTime.Before(cutoff) {
			continue
		}
		if err := store.Delete(ctx, obj.Key); err != nil {
			return n, fmt.Errorf("delete stale manifest %s: %w", obj.Key, err)
		}
		n++
	}
	return n, nil
}
