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

// A run's vacuum is spread over its shares too (worker/vacuum's Share), and it must never delete outputs
// the run may still commit: with a short retention, a share's listing sees the other shares' new files,
// which no snapshot references before the commit. So every share vacuums only once the run is settled:
//
//   - the log holds the run's commit (Committed), or
//   - index 0 recorded that its commit step finished without committing (every unit dropped, or nothing
//     to rewrite): MarkSettled. From then on no attempt of the run commits — a retried index 0 finds the
//     marker and stops like one that finds the commit — so the files of late shares are nobody's.
//
// A commit step that failed with an unknown outcome settles nothing, and the shares skip their vacuum.
// Each share then records what its vacuum did (WriteVacuumPart) for index 0 to sum in its result.

// SettledKey is the marker of a run whose commit step finished without a commit.
func SettledKey(run string) string { return fmt.Sprintf("%s/%s/settled.json", RunsDir, run) }

// VacuumPartKey is share index's vacuum report in run.
func VacuumPartKey(run string, index int) string {
	return fmt.Sprintf("%s/%s/vacuum-%03d.json", RunsDir, run, index)
}

// MarkSettled records that the run's commit step finished without committing; a marker already there
// (an earlier attempt's) stands.
func MarkSettled(ctx context.Context, store storage.Store, s Share) error {
	data, err := json.Marshal(map[string]any{"run": s.RunID, "version": s.Version, "count": s.Count, "settledAt": time.Now().UnixMilli()})
	if err != nil {
		return err
	}
	err = store.PutIfAbsent(ctx, SettledKey(s.RunID), data)
	if err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
		return fmt.Errorf("write %s: %w", SettledKey(s.RunID), err)
	}
	return nil
}

// Settled reports whether index 0 marked the run settled without a commit.
func Settled(ctx context.Context, store storage.Store, s Share) (bool, error) {
	_, err := store.Stat(ctx, SettledKey(s.RunID))
	switch {
	case errors.Is(err, storage.ErrNotFound):
		return false, nil
	case err != nil:
		return false, fmt.Errorf("look for %s: %w", SettledKey(s.RunID), err)
	}
	return true, nil
}

// WaitSettled waits until the run is committed or settled, for at most opts.Timeout; false means it is
// neither, and the caller must not vacuum.
func WaitSettled(ctx context.Context, tbl *delta.Table, s Share, opts WaitOptions) (bool, error) {
	deadline := time.Now().Add(opts.Timeout)
	for {
		snap, err := tbl.Latest(ctx)
		if err != nil {
			return false, err
		}
		if Committed(snap, s) {
			return true, nil
		}
		if ok, err := Settled(ctx, tbl.Store(), s); err != nil || ok {
			return ok, err
		}
		if !time.Now().Before(deadline) {
			return false, nil
		}
		if opts.Progress != nil {
			opts.Progress(fmt.Sprintf("waiting for run %s's commit before vacuuming", s.RunID))
		}
		if err := sleep(ctx, min(pollOf(opts), time.Until(deadline)+time.Millisecond)); err != nil {
			return false, fmt.Errorf("waiting for the commit of run %s: %w", s.RunID, err)
		}
	}
}

// VacuumPart is what one share's vacuum did.
type VacuumPart struct {
	Index int `json:"index"`
	// FilesToDelete and FilesDeleted (with their bytes) count the unreferenced files of the share's
	// part; Directories the directories it listed; Leftovers the temp files and uploads it removed.
	FilesToDelete int64  `json:"filesToDelete"`
	FilesDeleted  int64  `json:"filesDeleted"`
	BytesDeleted  int64  `json:"bytesDeleted"`
	Directories   int64  `json:"directories"`
	Leftovers     int64  `json:"leftovers,omitempty"`
	Outcome       string `json:"outcome"`
}

// WriteVacuumPart stores share p.Index's vacuum report, replacing an earlier attempt's.
func WriteVacuumPart(ctx context.Context, store storage.Store, run string, p *VacuumPart) error {
	data, err := json.Marshal(p)
	if err != nil {
		return err
	}
	if err := store.Put(ctx, VacuumPartKey(run, p.Index), data); err != nil {
		return fmt.Errorf("write %s: %w", VacuumPartKey(run, p.Index), err)
	}
	return nil
}

// WaitVacuumParts reads every share's vacuum report, waiting for missing ones until opts.Timeout; a
// share that did not report is nil.
func WaitVacuumParts(ctx context.Context, store storage.Store, s Share, opts WaitOptions) ([]*VacuumPart, error) {
	deadline := time.Now().Add(opts.Timeout)
	out := make([]*VacuumPart, s.Count)
	for {
		missing := 0
		for i := range out {
			if out[i] != nil {
				continue
			}
			data, err := store.Get(ctx, VacuumPartKey(s.RunID, i))
			if errors.Is(err, storage.ErrNotFound) {
				missing++
				continue
			}
			if err != nil {
				return nil, fmt.Errorf("read %s: %w", VacuumPartKey(s.RunID, i), err)
			}
			var p VacuumPart
			if err := json.Unmarshal(data, &p); err != nil {
				return nil, fmt.Errorf("%s: %w: %w", VacuumPartKey(s.RunID, i), err, delta.ErrCorruptTable)
			}
			if p.Index != i {
				return nil, fmt.Errorf("%s holds share %d's vacuum report, not share %d's: %w", VacuumPartKey(s.RunID, i), p.Index, i, delta.ErrCorruptTable)
			}
			out[i] = &p
		}
		if missing == 0 || !time.Now().Before(deadline) {
			return out, nil
		}
		if opts.Progress != nil {
			opts.Progress(fmt.Sprintf("waiting for %d of %d shares' vacuum reports", missing, s.Count))
		}
		if err := sleep(ctx, min(pollOf(opts), time.Until(deadline)+time.Millisecond)); err != nil {
			return nil, fmt.Errorf("waiting for the vacuum reports of run %s: %w", s.RunID, err)
		}
	}
}

// RemoveVacuumParts deletes the run's vacuum reports once index 0 summed them. The settled marker stays
// (RemoveStaleRuns takes it with the run directory): without it a retried index 0 would commit manifests
// whose outputs a share's vacuum already deleted.
func RemoveVacuumParts(ctx context.Context, store storage.Store, run string, count int) error {
	var errs []error
	for i := range count {
		errs = append(errs, store.Delete(ctx, VacuumPartKey(run, i)))
	}
	return errors.Join(errs...)
}

func pollOf(opts WaitOptions) time.Duration {
	if opts.Poll > 0 {
		return opts.Poll
	}
	return 2 * time.Second
}

func sleep(ctx context.Context, d time.Duration) error {
	select {
	case <-ctx.Done():
		return context.Cause(ctx)
	case <-time.After(d):
		return nil
	}
}
