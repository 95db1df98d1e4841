package ingest

import (
	"context"
	"fmt"
	"iter"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/ingest/source"
	"github.com/deltakeeper/deltakeeper/worker/ingest/state"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

func TestRun_IncludeExistingFilesFalseIgnoresWhatWasThereAtFirstStart(t *testing.T) {
	fx := newFixture(t)
	fx.put("old.json", `{"id":1}`)
	o := fx.options(format.JSON, nil, "")
	o.AvailableNow, o.ExcludeExistingFiles = true, true
	if rep := fx.run(o); len(rep.Batches) != 0 {
		t.Fatalf("the first start ingested %d batches of existing files", len(rep.Batches))
	}
	fx.put("new.json", `{"id":2}`)
	fx.run(o)
	if rows := fx.rows("id"); !slices.Equal(rows, []string{"id=2"}) {
		t.Fatalf("rows %v, want only the new file's", rows)
	}
}

func TestRun_AFileRewrittenInPlaceIsTakenAgainOnlyWithAllowOverwrites(t *testing.T) {
	fx := newFixture(t)
	fx.put("a.json", `{"id":1}`)
	o := fx.options(format.JSON, nil, "")
	o.AvailableNow = true
	fx.run(o)
	fx.put("a.json", `{"id":2}`)
	if rep := fx.run(o); len(rep.Batches) != 0 {
		t.Fatalf("a rewritten file was taken again without allowOverwrites")
	}
	o.AllowOverwrites = true
	fx.run(o)
	if rows := fx.rows("id"); !slices.Equal(rows, []string{"id=1", "id=2"}) {
		t.Fatalf("rows %v", rows)
	}
}

// countingStore counts the objects a listing returns.
type countingStore struct {
	storage.Store
	listed int
}

func (c *countingStore) List(ctx context.Context, prefix, startAfter string) iter.Seq2[storage.ObjectInfo, error] {
	return func(yield func(storage.ObjectInfo, error) bool) {
		for info, err := range c.Store.List(ctx, prefix, startAfter) {
			c.listed++
			if !yield(info, err) {
				return
			}
		}
	}
}

func TestRun_LexicalKeysAreListedIncrementallyAndLateFilesFoundByFullListings(t *testing.T) {
	fx := newFixture(t)
	o := fx.options(format.JSON, nil, "")
	o.FullListingEvery = 4
	var listings []int
	ids := 0
	for trigger := range 12 {
		// Dated, lexical keys: each trigger lands 5 files after every earlier key.
		for range 5 {
			fx.put(fmt.Sprintf("2026/01/%02d/%04d.json", 1+trigger, ids), fmt.Sprintf(`{"id":%d}`, ids))
			ids++
		}
		if trigger == 6 {
			// A late file with a key before everything taken so far.
			fx.put("2025/12/31/late.json", fmt.Sprintf(`{"id":%d}`, ids))
			ids++
		}
		cs := &countingStore{Store: mustLocal(t, fx.src)}
		r := &runner{o: o, src: source.New(cs), tbl: fx.tbl}
		r.o, _ = r.o.withDefaults()
		st, err := state.Open(context.Background(), mustLocal(t, filepath.Join(fx.src, "..", "ckpt")), state.Metadata{Source: "s", Format: "json"}, nil)
		if err != nil {
			t.Fatal(err)
		}
		r.st = st
		plan, err := r.next(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		if plan == nil {
			t.Fatalf("trigger %d: nothing planned", trigger)
		}
		if _, err := st.Plan(context.Background(), *plan); err != nil {
			t.Fatal(err)
		}
		if err := st.MarkCommitted(context.Background(), state.Commit{BatchID: st.Pending.BatchID}); err != nil {
			t.Fatal(err)
		}
		listings = append(listings, cs.listed)
		if trigger == 8 && !slices.ContainsFunc(plan.Files, func(f source.File) bool { return strings.Contains(f.Key, "late") }) {
			t.Errorf("trigger 8 (a full listing) did not take the late file: %v", plan.Files)
		}
	}
	// Full listings (the first and every 4th) see everything; incremental ones only the 5 new files.
	for i, n := range listings {
		full := i%4 == 0
		if !full && n != 5 {
			t.Errorf("incremental listing %d returned %d objects, want the 5 new ones (all: %v)", i, n, listings)
		}
		if full && n < 5*(i+1) {
			t.Errorf("full listing %d returned %d objects, want every file (all: %v)", i, n, listings)
		}
	}
}

func mustLocal(t *testing.T, dir string) *storage.LocalStore {
	t.Helper()
	s, err := storage.NewLocal(dir)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestRun_NonLexicalKeysAreAllTakenOldestFirst(t *testing.T) {
	fx := newFixture(t)
	o := fx.options(format.JSON, nil, "")
	o.MaxFilesPerTrigger = 2
	// Keys in reverse of arrival order: incremental listing finds nothing after the position, so the
	// run falls back to a full listing rather than report an empty backlog.
	for i := range 6 {
		fx.put(fmt.Sprintf("k%d.json", 9-i), fmt.Sprintf(`{"id":%d}`, i))
	}
	var order []string
	for range 3 {
		rep := fx.run(o)
		for _, b := range rep.Batches {
			order = append(order, fmt.Sprint(b.Rows))
		}
	}
	if rows := fx.rows("id"); len(rows) != 6 {
		t.Fatalf("rows %v, want 6", rows)
	}
	if rep := fx.run(o); len(rep.Batches) != 0 || rep.Backlog.Files != 0 {
		t.Fatalf("after draining: %d batches, backlog %+v", len(rep.Batches), rep.Backlog)
	}
	if !slices.Equal(order, []string{"2", "2", "2"}) {
		t.Fatalf("batch rows %v", order)
	}
}

func TestState_CompactionBoundsMemoryAndReadsBack(t *testing.T) {
	ctx := context.Background()
	store := mustLocal(t, t.TempDir())
	st, err := state.Open(ctx, store, state.Metadata{Source: "s", Format: "json"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	st.SetCompactEvery(3)
	t0 := time.Unix(0, 0)
	var all []source.File
	for b := range 10 {
		var files []source.File
		for i := range 100 {
			files = append(files, source.File{Key: fmt.Sprintf("b%d/f%d", b, i), Size: 1, ModTime: t0})
		}
		all = append(all, files...)
		if _, err := st.Plan(ctx, state.Offsets{Files: files}); err != nil {
			t.Fatal(err)
		}
		if err := st.MarkCommitted(ctx, state.Commit{BatchID: int64(b)}); err != nil {
			t.Fatal(err)
		}
		if _, err := st.MaybeCompact(ctx); err != nil {
			t.Fatal(err)
		}
	}
	again, err := state.Open(ctx, store, state.Metadata{Source: "s", Format: "json"}, nil)
	if err != nil {
		t.Fatal(err)
	}
	if again.LastCommitted != 9 || again.Taken.Len() != 1000 || again.Meta.ID != st.Meta.ID {
		t.Fatalf("reloaded: last %d, %d taken, id %s", again.LastCommitted, again.Taken.Len(), again.Meta.ID)
	}
	for _, f := range all {
		if !again.Taken.Contains(f, false) {
			t.Fatalf("%s lost by compaction", f.Key)
		}
	}
	// Old plans are gone (only the last compactEvery batches' remain), a snapshot holds the rest.
	var plans int
	for _, err := range store.List(ctx, "offsets/", "") {
		if err != nil {
			t.Fatal(err)
		}
		plans++
	}
	if plans > 6 {
		t.Fatalf("%d plans kept after compaction", plans)
	}
	// A state file from a newer deltakeeper is refused, not misread.
	if err := store.Put(ctx, "metadata", []byte(`{"v":99,"id":"x","source":"s","format":"json"}`)); err != nil {
		t.Fatal(err)
	}
	if _, err := state.Open(ctx, store, state.Metadata{Source: "s", Format: "json"}, nil); err == nil || !strings.Contains(err.Error(), "upgrade deltakeeper") {
		t.Fatalf("err = %v, want a newer format version refused", err)
	}
}
