// Package state is an ingest stream's checkpoint: what the stream is (its stable id, source and
// format), the plan of every batch before the batch writes anything, a marker after each batch's
// Delta commit, and the compacted set of source files already taken.
//
// Layout under the checkpoint location (a storage.Store root), every file versioned ("v"):
//
//	metadata                       {"v":1,"id":…,"source":…,"format":…}    put-if-absent, once
//	offsets/<batchId, 20 digits>   the batch's plan: files with identities, expected schema  put-if-absent
//	commits/<batchId>              written after the batch's Delta commit
//	taken/<n, 20 digits>           the taken-files set covering batches < n (binary, CRC-checked)
//	taken/baseline-<uuid>          files present at the first start (includeExistingFiles=false)
//
// A plan is written with put-if-absent, so two processes of one stream agree on every batch: the
// loser reads the winner's plan and executes the same one. Compaction writes a taken-files snapshot
// first and deletes the plans it covers afterwards, so a crash in between leaves plans that the
// snapshot already covers, which loading ignores.
package state

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/google/uuid"

	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// FormatVersion is the version of the JSON state files this build writes; it reads every version up
// to it and refuses newer ones.
const FormatVersion = 1

// Metadata identifies a stream.
type Metadata struct {
	V int `json:"v"`
	// ID is the stream's stable id: the appId of its Delta txn actions.
	ID        string    `json:"id"`
	Source    string    `json:"source"`
	Format    string    `json:"format"`
	CreatedAt time.Time `json:"createdAt"`
	// Baseline names the snapshot of the files present at the first start that were not to be
	// ingested (includeExistingFiles=false); "" when existing files count.
	Baseline string `json:"baseline,omitempty"`
}

// Offsets is the plan of one batch.
type Offsets struct {
	V       int           `json:"v"`
	BatchID int64         `json:"batchId"`
	Files   []source.File `json:"files"`
	// Schema is the table schema (schemaString) the batch was planned against; "" when the table did
	// not exist and the batch creates it.
	Schema string `json:"schema,omitempty"`
	// MaxKey is where incremental listing starts after this batch: every source key up to it was
	// listed and is taken or planned; SinceFull counts the incremental listings since the last full
	// one.
	MaxKey    string    `json:"maxKey,omitempty"`
	SinceFull int       `json:"sinceFull,omitempty"`
	PlannedAt time.Time `json:"plannedAt"`
}

// Bytes is the batch's total source size.
func (o *Offsets) Bytes() int64 {
	var n int64
	for _, f := range o.Files {
		n += f.Size
	}
	return n
}

// Commit marks a batch whose Delta commit landed.
type Commit struct {
	V       int           `json:"v"`
	BatchID int64         `json:"batchId"`
	Version int64         `json:"version"` // the table version holding the batch's txn
	Rows    int64         `json:"rows"`
	Skipped []SkippedFile `json:"skipped,omitempty"`
	At      time.Time     `json:"at"`
}

// SkippedFile is a file of a batch that onBadFile=skip left out, with why.
type SkippedFile struct {
	Key    string `json:"key"`
	Reason string `json:"reason"`
}

// Stream is a loaded checkpoint.
type Stream struct {
	store storage.Store
	Meta  Metadata
	// Taken holds every file of every plan (committed or pending) and the baseline.
	Taken *Taken
	// MaxKey and SinceFull are the listing position after the latest plan.
	MaxKey    string
	SinceFull int
	// LastCommitted is the last batch with a commit marker (or covered by a snapshot); -1 before the
	// first.
	LastCommitted int64
	// Pending is the plan of batch LastCommitted+1 when one was written; the batch must be replayed (or
	// found in the table) before anything new is planned.
	Pending *Offsets
	// snapThrough is the batch the loaded snapshot covers up to (-1 without one).
	snapThrough int64
	// compactEvery is the number of committed batches between snapshots.
	compactEvery int64
	now          func() time.Time
}

// DefaultCompactEvery is how many committed batches pass between taken-files snapshots.
const DefaultCompactEvery = 10

func offsetsKey(b int64) string { return fmt.Sprintf("offsets/%020d", b) }
func commitKey(b int64) string  { return fmt.Sprintf("commits/%020d", b) }
func takenKey(n int64) string   { return fmt.Sprintf("taken/%020d", n) }

// Open loads the stream's checkpoint from store, creating it on first use with want's source and
// format. baseline, called only on first use, lists the files present now when existing files must
// not be ingested (nil: they are ingested).
func Open(ctx context.Context, store storage.Store, want Metadata, baseline func() ([]source.File, error)) (*Stream, error) {
	st := &Stream{store: store, LastCommitted: -1, snapThrough: -1, compactEvery: DefaultCompactEvery, now: time.Now}
	meta, err := st.metadata(ctx, want, baseline)
	if err != nil {
		return nil, err
	}
	st.Meta = meta
	// A concurrent compaction can delete the snapshot or plans this load just listed; the newer
	// snapshot it wrote covers them, so looking again resolves it.
	for try := 1; ; try++ {
		err = st.load(ctx)
		if err == nil || try == 3 || !(errors.Is(err, storage.ErrNotFound) || errors.Is(err, errPlanGap)) {
			break
		}
		*st = Stream{store: store, Meta: meta, LastCommitted: -1, snapThrough: -1, compactEvery: DefaultCompactEvery, now: time.Now}
	}
	if err != nil {
		return nil, err
	}
	return st, nil
}

// errPlanGap marks a missing plan between kept ones.
var errPlanGap = errors.New("a batch plan is missing")

// SetCompactEvery sets how many committed batches pass between taken-files snapshots (tests use
// small values); n < 1 is ignored.
func (st *Stream) SetCompactEvery(n int) {
	if n >= 1 {
		st.compactEvery = int64(n)
	}
}

func (st *Stream) where(key string) string { return storage.URI(st.store, key) }

func (st *Stream) metadata(ctx context.Context, want Metadata, baseline func() ([]source.File, error)) (Metadata, error) {
	data, err := st.store.Get(ctx, "metadata")
	if errors.Is(err, storage.ErrNotFound) {
		m := want
		m.V, m.ID, m.CreatedAt = FormatVersion, uuid.NewString(), time.Now().UTC()
		if baseline != nil {
			files, err := baseline()
			if err != nil {
				return Metadata{}, err
			}
			t := NewTaken()
			t.Add(files...)
			maxKey := ""
			for _, f := range files {
				maxKey = max(maxKey, f.Key)
			}
			m.Baseline = "taken/baseline-" + m.ID
			if err := st.store.Put(ctx, m.Baseline, encodeTaken(t, -1, maxKey)); err != nil {
				return Metadata{}, fmt.Errorf("write stream baseline %s: %w", st.where(m.Baseline), err)
			}
		}
		body, _ := json.Marshal(m)
		err = st.store.PutIfAbsent(ctx, "metadata", body)
		if err == nil {
			return m, nil
		}
		if m.Baseline != "" {
			_ = st.store.Delete(ctx, m.Baseline) // another process created the stream first
		}
		if !errors.Is(err, storage.ErrAlreadyExists) {
			return Metadata{}, fmt.Errorf("create stream checkpoint %s: %w", st.where("metadata"), err)
		}
		data, err = st.store.Get(ctx, "metadata")
	}
	if err != nil {
		return Metadata{}, fmt.Errorf("read stream checkpoint %s: %w", st.where("metadata"), err)
	}
	var m Metadata
	if err := decodeJSON(st.where("metadata"), data, &m, func() int { return m.V }); err != nil {
		return Metadata{}, err
	}
	if m.ID == "" {
		return Metadata{}, fmt.Errorf("stream checkpoint %s has no stream id: %w", st.where("metadata"), ErrCorruptState)
	}
	if want.Source != "" && m.Source != want.Source {
		return Metadata{}, fmt.Errorf("the checkpoint %s belongs to a stream from %s, not %s: give this source its own --checkpoint", st.store.Location(), m.Source, want.Source)
	}
	if want.Format != "" && m.Format != want.Format {
		return Metadata{}, fmt.Errorf("the checkpoint %s belongs to a stream of %s files, not %s: give this format its own --checkpoint", st.store.Location(), m.Format, want.Format)
	}
	return m, nil
}

// decodeJSON parses a state file and refuses versions newer than this build's.
func decodeJSON(where string, data []byte, v any, version func() int) error {
	if err := json.Unmarshal(data, v); err != nil {
		return fmt.Errorf("stream state %s: %w: %w", where, err, ErrCorruptState)
	}
	if n := version(); n < 1 || n > FormatVersion {
		return fmt.Errorf("stream state %s has format version %d; this deltakeeper reads versions 1 to %d: upgrade deltakeeper", where, n, FormatVersion)
	}
	return nil
}

// batchIDs lists the batch ids under dir ("offsets/", "commits/", "taken/"), ascending; names that are
// not 20-digit numbers are ignored.
func (st *Stream) batchIDs(ctx context.Context, dir string) ([]int64, error) {
	var ids []int64
	for info, err := range st.store.List(ctx, dir, "") {
		if err != nil {
			return nil, fmt.Errorf("list stream state %s: %w", st.where(dir), err)
		}
		name := strings.TrimPrefix(info.Key, dir)
		if len(name) != 20 {
			continue
		}
		n, err := strconv.ParseInt(name, 10, 64)
		if err != nil {
			continue
		}
		ids = append(ids, n)
	}
	slices.Sort(ids)
	return ids, nil
}

func (st *Stream) load(ctx context.Context) error {
	snaps, err := st.batchIDs(ctx, "taken/")
	if err != nil {
		return err
	}
	st.Taken = NewTaken()
	snapKey := st.Meta.Baseline
	if len(snaps) > 0 {
		snapKey = takenKey(snaps[len(snaps)-1])
	}
	if snapKey != "" {
		data, err := st.store.Get(ctx, snapKey)
		if err != nil {
			return fmt.Errorf("read taken-files snapshot %s: %w", st.where(snapKey), err)
		}
		t, through, maxKey, err := decodeTaken(st.where(snapKey), data)
		if err != nil {
			return err
		}
		st.Taken, st.snapThrough, st.MaxKey = t, through, maxKey
		st.LastCommitted = through
	}
	commits, err := st.batchIDs(ctx, "commits/")
	if err != nil {
		return err
	}
	if n := len(commits); n > 0 {
		st.LastCommitted = max(st.LastCommitted, commits[n-1])
	}
	offsets, err := st.batchIDs(ctx, "offsets/")
	if err != nil {
		return err
	}
	next := st.snapThrough + 1
	for _, b := range offsets {
		if b <= st.snapThrough {
			continue // covered by the snapshot; left over from an interrupted compaction
		}
		if b != next {
			return fmt.Errorf("stream state %s: the plan of batch %d is missing but batch %d has one: %w: %w", st.store.Location(), next, b, ErrCorruptState, errPlanGap)
		}
		off, err := st.readOffsets(ctx, b)
		if err != nil {
			return err
		}
		st.note(off)
		next++
	}
	last := next - 1
	switch {
	case st.LastCommitted > last:
		return fmt.Errorf("stream state %s: batch %d is marked committed but no plan covers it: %w", st.store.Location(), st.LastCommitted, ErrCorruptState)
	case last == st.LastCommitted+1:
		st.Pending, err = st.readOffsets(ctx, last)
		if err != nil {
			return err
		}
	case last > st.LastCommitted+1:
		return fmt.Errorf("stream state %s: batches %d to %d are planned but batch %d never committed: %w", st.store.Location(), st.LastCommitted+2, last, st.LastCommitted+1, ErrCorruptState)
	}
	return nil
}

// note folds a plan into the taken set and the listing position.
func (st *Stream) note(off *Offsets) {
	st.Taken.Add(off.Files...)
	// The latest plan's position wins, even when smaller: a full listing that found late files below
	// the previous position moves it back so that incremental listings find them.
	st.MaxKey = off.MaxKey
	st.SinceFull = off.SinceFull
}

func (st *Stream) readOffsets(ctx context.Context, b int64) (*Offsets, error) {
	key := offsetsKey(b)
	data, err := st.store.Get(ctx, key)
	if err != nil {
		return nil, fmt.Errorf("read the plan of batch %d (%s): %w", b, st.where(key), err)
	}
	var off Offsets
	if err := decodeJSON(st.where(key), data, &off, func() int { return off.V }); err != nil {
		return nil, err
	}
	if off.BatchID != b {
		return nil, fmt.Errorf("stream state %s holds batch %d: %w", st.where(key), off.BatchID, ErrCorruptState)
	}
	return &off, nil
}

// Plan stores the plan of the next batch (LastCommitted+1) with put-if-absent, before anything of
// the batch is written. When another process of the stream stored that batch's plan first, its plan
// is returned instead, and the caller must execute that one.
func (st *Stream) Plan(ctx context.Context, off Offsets) (*Offsets, error) {
	if st.Pending != nil {
		return nil, fmt.Errorf("internal error: batch %d is pending and must be finished before another is planned", st.Pending.BatchID)
	}
	off.V, off.BatchID = FormatVersion, st.LastCommitted+1
	if off.PlannedAt.IsZero() {
		off.PlannedAt = st.now().UTC()
	}
	body, err := json.Marshal(&off)
	if err != nil {
		return nil, err
	}
	key := offsetsKey(off.BatchID)
	err = st.store.PutIfAbsent(ctx, key, body)
	if errors.Is(err, storage.ErrAlreadyExists) {
		winner, rerr := st.readOffsets(ctx, off.BatchID)
		if rerr != nil {
			return nil, rerr
		}
		st.note(winner)
		st.Pending = winner
		return winner, nil
	}
	if err != nil {
		return nil, fmt.Errorf("store the plan of batch %d (%s): %w", off.BatchID, st.where(key), err)
	}
	st.note(&off)
	st.Pending = &off
	return &off, nil
}

// MarkCommitted records that the pending batch's commit is in the table.
func (st *Stream) MarkCommitted(ctx context.Context, c Commit) error {
	if st.Pending == nil || st.Pending.BatchID != c.BatchID {
		return fmt.Errorf("internal error: batch %d is not the pending batch", c.BatchID)
	}
	c.V = FormatVersion
	if c.At.IsZero() {
		c.At = st.now().UTC()
	}
	body, err := json.Marshal(&c)
	if err != nil {
		return err
	}
	key := commitKey(c.BatchID)
	if err := st.store.PutIfAbsent(ctx, key, body); err != nil && !errors.Is(err, storage.ErrAlreadyExists) {
		return fmt.Errorf("mark batch %d committed (%s): %w", c.BatchID, st.where(key), err)
	}
	st.LastCommitted, st.Pending = c.BatchID, nil
	return nil
}

// ReadCommit returns a batch's commit marker, if it is still kept.
func (st *Stream) ReadCommit(ctx context.Context, b int64) (*Commit, bool, error) {
	key := commitKey(b)
	data, err := st.store.Get(ctx, key)
	if errors.Is(err, storage.ErrNotFound) {
		return nil, false, nil
	}
	if err != nil {
		return nil, false, fmt.Errorf("read %s: %w", st.where(key), err)
	}
	var c Commit
	if err := decodeJSON(st.where(key), data, &c, func() int { return c.V }); err != nil {
		return nil, false, err
	}
	return &c, true, nil
}

// CompactHook is called between the steps of a compaction (tests crash there).
var CompactHook func(step string)

// MaybeCompact writes a taken-files snapshot once compactEvery batches were committed since the last
// one, then deletes the snapshots it replaces and the plans and markers that the previous snapshot
// already covered. The plans of the last compactEvery batches are kept on purpose: a process of the
// stream that lags behind must find the plan of a batch it is about to plan again (put-if-absent
// fails and it adopts the committed plan), never an empty slot it could fill with different files.
// It returns whether it compacted.
func (st *Stream) MaybeCompact(ctx context.Context) (bool, error) {
	through := st.LastCommitted
	if st.Pending != nil || through-st.snapThrough < st.compactEvery {
		return false, nil
	}
	key := takenKey(through + 1)
	if err := st.store.Put(ctx, key, encodeTaken(st.Taken, through, st.MaxKey)); err != nil {
		return false, fmt.Errorf("write taken-files snapshot %s: %w", st.where(key), err)
	}
	if CompactHook != nil {
		CompactHook("snapshot-written")
	}
	oldSnaps, err := st.batchIDs(ctx, "taken/")
	if err != nil {
		return true, err
	}
	var del []string
	for _, n := range oldSnaps {
		if n < through+1 {
			del = append(del, takenKey(n))
		}
	}
	if st.Meta.Baseline != "" {
		del = append(del, st.Meta.Baseline)
	}
	for b := max(st.snapThrough+1-st.compactEvery, 0); b <= st.snapThrough; b++ {
		del = append(del, offsetsKey(b), commitKey(b))
	}
	for i, k := range del {
		if err := st.store.Delete(ctx, k); err != nil {
			return true, fmt.Errorf("delete compacted stream state %s: %w", st.where(k), err)
		}
		if CompactHook != nil && i == len(del)/2 {
			CompactHook("deleting")
		}
	}
	st.snapThrough = through
	return true, nil
}
