package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// Keyed writes under the crash test (issue 13): `deltakeeper merge` with --app-id/--batch-id (upsert with a
// delete marker, update, delete), `deltakeeper ingest --mode upsert` (the stream's txn per batch) and
// `deltakeeper delete --where`. A cycle writes a few keyed batches; every run of the cycle applies them in
// order, as a stream that lost its process would, so after a kill the next run replays the batches that did
// commit (each must commit nothing) and applies the rest. The judgement is a model: the table must hold the
// rows before the cycle with some prefix of the cycle's batches applied (each key its last row, deleted keys
// absent), a prefix never shorter than one seen before in the cycle, all of them after a complete run; every
// commit of the cycle carries a batch id higher than the one before it, so a replay that committed anything
// is caught; and the txn version names the last batch applied.

// mergeKeyBase is where the keys of rows that only merges insert begin, far from the fixture's ids.
const mergeKeyBase = 1_000_000

// keyedBatch is one batch of keyed rows, applied with one mode.
type keyedBatch struct {
	mode string // upsert, update or delete
	path string
	rows []keyedRow
}

type keyedRow struct {
	id  int64
	k   int32
	p   string
	s   string
	ts  int64 // microseconds since the epoch
	del bool  // upsert only: the delete marker
}

// canonical is the row as the table holds it (id, k, p, s, ts), in the project's canonical form.
func (r keyedRow) canonical() string {
	return table.CanonicalRow(types.Struct{r.id, r.k, r.p, r.s, types.Timestamp(r.ts)})
}

func (r keyedRow) json(withMarker bool) string {
	m := map[string]any{"id": r.id, "k": r.k, "p": r.p, "s": r.s,
		"ts": time.UnixMicro(r.ts).UTC().Format("2006-01-02T15:04:05.000000Z")}
	if withMarker {
		m["del"] = r.del
	}
	b, _ := json.Marshal(m)
	return string(b)
}

// keyedStream is the writer of one torture table and what the judge needs of it.
type keyedStream struct {
	mu      sync.Mutex
	dir     string // the batch files (the source directory of an ingest stream)
	state   string // an ingest stream's --checkpoint, outside the table
	files   int    // batch files written so far
	firstID int64  // batch id of this cycle's first batch
	pending []keyedBatch
	applied int // batches of this cycle seen applied
}

var keyedStreams sync.Map // table location -> *keyedStream

func keyedStreamOf(t testing.TB, location string) *keyedStream {
	return streamOf(t, &keyedStreams, location, func(dir, state string) *keyedStream {
		return &keyedStream{dir: dir, state: state}
	})
}

// newCycle closes the last cycle (its final run applied every batch) and writes n batches of modes.
func (s *keyedStream) newCycle(t testing.TB, f *fixture, modes func(rng *rand.Rand) string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.firstID += int64(len(s.pending))
	s.pending, s.applied = nil, 0
	for range 2 + f.rng.IntN(3) {
		b := keyedBatch{mode: modes(f.rng), path: filepath.Join(s.dir, fmt.Sprintf("batch-%06d.json", s.files))}
		b.rows = keyedRows(f.rng, f.nextID, s.files)
		lines := make([]string, len(b.rows))
		for i, r := range b.rows {
			lines[i] = r.json(b.mode == "upsert")
		}
		if err := os.WriteFile(b.path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
			t.Fatal(err)
		}
		s.files++
		s.pending = append(s.pending, b)
	}
}

// keyedRows draws 10–40 distinct keys, about half of them rows the fixture appended (ids below
// fixtureIDs) and half from a small range of its own, so that later batches match earlier ones.
func keyedRows(rng *rand.Rand, fixtureIDs int64, seq int) []keyedRow {
	seen := map[int64]bool{}
	var rows []keyedRow
	for n := 10 + rng.IntN(31); len(rows) < n; {
		id := mergeKeyBase + rng.Int64N(150)
		if rng.IntN(2) == 0 && fixtureIDs > 0 {
			id = rng.Int64N(fixtureIDs)
		}
		if seen[id] {
			continue
		}
		seen[id] = true
		rows = append(rows, keyedRow{id: id, k: int32(rng.IntN(1000)), p: []string{"a", "b", "c"}[rng.IntN(3)],
			s:  fmt.Sprintf("batch %d %s", seq, strings.Repeat(string(rune('a'+rng.IntN(26))), 8+rng.IntN(60))),
			ts: 1_700_000_000_000_000 + int64(seq)*1_000_000 + int64(len(rows)), del: rng.IntN(5) == 0})
	}
	return rows
}

// apply is the model: the rows (id → canonical row) after the batch.
func (b keyedBatch) apply(rows map[int64]string) {
	for _, r := range b.rows {
		_, matched := rows[r.id]
		switch {
		case b.mode == "delete" || (b.mode == "upsert" && r.del):
			delete(rows, r.id)
		case b.mode == "update" && !matched:
		default:
			rows[r.id] = r.canonical()
		}
	}
}

// rowsByID maps the canonical rows of a state by their id (the first column).
func rowsByID(st tableState) (map[int64]string, error) {
	out := make(map[int64]string, len(st.rows))
	for _, r := range st.rows {
		head, _, _ := strings.Cut(r, " | ")
		id, err := strconv.ParseInt(strings.TrimPrefix(head, "i:"), 10, 64)
		if err != nil {
			return nil, fmt.Errorf("row %s: the first column is not an id", r)
		}
		if _, dup := out[id]; dup {
			return nil, fmt.Errorf("id %d is in the table twice", id)
		}
		out[id] = r
	}
	return out, nil
}

func sortedRows(rows map[int64]string) ([]string, []int64) {
	rs, ids := make([]string, 0, len(rows)), make([]int64, 0, len(rows))
	for id, r := range rows {
		rs, ids = append(rs, r), append(ids, id)
	}
	slices.Sort(rs)
	slices.Sort(ids)
	return rs, ids
}

// judge finds which prefix of the cycle's batches the table holds and checks its log: one commit
// per batch applied in this cycle, each with the next batch id of appID ("" for the stream's one app id).
func (s *keyedStream) judge(f *fixture, before, after tableState, complete bool, appID string) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	model, err := rowsByID(before)
	if err != nil {
		return fmt.Errorf("before the cycle: %w", err)
	}
	if _, err := rowsByID(after); err != nil {
		return err
	}
	// Each batch commits once and each commit carries the next batch id (checkTxns), so the number
	// of commits since the cycle began says how many batches the table holds; a batch that changes
	// no row makes two prefixes look alike, the count does not.
	found := int(after.version - before.version)
	switch {
	case found < s.applied:
		return fmt.Errorf("%d commits in this cycle, after %d batches were seen applied: a commit went missing", found, s.applied)
	case found > len(s.pending):
		return fmt.Errorf("%d commits for the cycle's %d batches: a replayed batch committed again, or a batch took two commits", found, len(s.pending))
	case complete && found < len(s.pending):
		return fmt.Errorf("a complete run applied %d of the cycle's %d batches", found, len(s.pending))
	}
	if err := s.checkTxns(f, before.version, after.version, appID); err != nil {
		return err
	}
	for _, b := range s.pending[:found] {
		b.apply(model)
	}
	rows, ids := sortedRows(model)
	if !slices.Equal(rows, after.rows) || !slices.Equal(ids, after.ids) {
		return fmt.Errorf("the table does not hold the rows of %d of the cycle's %d batches applied: %s", found, len(s.pending), diffStrings(rows, after.rows))
	}
	// A run that starts with batches of the cycle applied runs them again: those are the replays.
	figures.add(func(fg *suiteFigures) { fg.keyedBatches += found - s.applied; fg.keyedReplays += s.applied })
	s.applied = found
	return countDVs(f, after.version)
}

// countDVs adds the deletion vectors live at v to the figures, which show that the DV tables'
// merges and deletes did write DVs (they say how many were live after each run).
func countDVs(f *fixture, v int64) error {
	dvs, err := f.log.liveFileDVs(v)
	if err != nil {
		return err
	}
	n := 0
	for _, raw := range dvs {
		if raw != nil {
			n++
		}
	}
	figures.add(func(fg *suiteFigures) { fg.keyedDVs += n })
	return nil
}

// checkTxns: every commit in (from, to] advances the writer's txn version by exactly one, from the
// cycle's first batch id.
func (s *keyedStream) checkTxns(f *fixture, from, to int64, appID string) error {
	ctx := context.Background()
	want := s.firstID
	for v := from + 1; v <= to; v++ {
		snap, err := f.tbl.At(ctx, delta.Version(v))
		if err != nil {
			return err
		}
		txns := snap.Txns()
		if appID == "" && len(txns) != 1 || appID != "" && len(txns) > 1 {
			return fmt.Errorf("version %d has %d txn app ids, want the writer's one", v, len(txns))
		}
		if (appID != "" && txns[0].AppID != appID) || txns[0].Version != want {
			return fmt.Errorf("version %d has txn (%s, %d), want (%s, %d): batch ids are not applied once each in order",
				v, txns[0].AppID, txns[0].Version, appID, want)
		}
		want++
	}
	return nil
}

// keyedModes draws a merge's mode: mostly upserts (with delete markers), some updates and deletes.
func keyedModes(rng *rand.Rand) string {
	return []string{"upsert", "upsert", "update", "delete"}[rng.IntN(4)]
}

func upsertOnly(*rand.Rand) string { return "upsert" }

// mergeAppID is the --app-id of the merges of the crash test.
const mergeAppID = "crash-merge"

// mergeCommand runs each pending batch as one `deltakeeper merge` with its batch id, in order.
func mergeCommand(name string, shape tableShape) crashCommand {
	return crashCommand{
		name: name, shape: shape,
		prepare: func(t *testing.T, f *fixture) { keyedStreamOf(t, f.site.location).newCycle(t, f, keyedModes) },
		steps: func(_ *rand.Rand, table string) [][]string {
			s := keyedStreamOf(nil, table)
			s.mu.Lock()
			defer s.mu.Unlock()
			var steps [][]string
			for i, b := range s.pending {
				args := []string{"merge", table, "--source", b.path, "--format", "json", "--mode", b.mode, "--keys", "id",
					"--app-id", mergeAppID, "--batch-id", fmt.Sprint(s.firstID + int64(i)), "-o", "json"}
				if b.mode == "upsert" {
					args = append(args, "--delete-column", "del")
				}
				steps = append(steps, args)
			}
			return steps
		},
		judge: func(f *fixture, before, after tableState, complete bool) error {
			return keyedStreamOf(nil, f.site.location).judge(f, before, after, complete, mergeAppID)
		},
	}
}

// upsertIngestCommand drains the source directory with an upsert stream, one file per batch.
var upsertIngestCommand = crashCommand{
	name: "ingest-upsert", shape: partitioned,
	prepare: func(t *testing.T, f *fixture) { keyedStreamOf(t, f.site.location).newCycle(t, f, upsertOnly) },
	steps: func(_ *rand.Rand, table string) [][]string {
		s := keyedStreamOf(nil, table)
		return [][]string{{"ingest", table, "--source", s.dir, "--format", "json", "--mode", "upsert", "--keys", "id",
			"--delete-column", "del", "--available-now", "--max-files-per-trigger", "1", "--checkpoint", s.state, "-o", "json"}}
	},
	judge: func(f *fixture, before, after tableState, complete bool) error {
		return keyedStreamOf(nil, f.site.location).judge(f, before, after, complete, "")
	},
}

// deleteWhere is the predicate of the pending `delete --where` of a table: ids in [lo, hi).
type deleteWhere struct{ lo, hi int64 }

var deleteWheres sync.Map // table location -> deleteWhere

// deleteCommand deletes a random range of ids; killed, the table is before or after, never half.
func deleteCommand(name string, shape tableShape) crashCommand {
	return crashCommand{
		name: name, shape: shape,
		prepare: func(t *testing.T, f *fixture) {
			f.appendFiles(t, 2, 100)
			lo := f.rng.Int64N(f.nextID)
			deleteWheres.Store(f.site.location, deleteWhere{lo: lo, hi: lo + 20 + f.rng.Int64N(200)})
		},
		steps: func(_ *rand.Rand, table string) [][]string {
			w, _ := deleteWheres.Load(table)
			d := w.(deleteWhere)
			return [][]string{{"delete", table, "--where", fmt.Sprintf("id >= %d AND id < %d", d.lo, d.hi), "-o", "json"}}
		},
		judge: func(f *fixture, before, after tableState, complete bool) error {
			w, _ := deleteWheres.Load(f.site.location)
			d := w.(deleteWhere)
			model, err := rowsByID(before)
			if err != nil {
				return err
			}
			for id := range model {
				if id >= d.lo && id < d.hi {
					delete(model, id)
				}
			}
			rows, ids := sortedRows(model)
			if slices.Equal(rows, after.rows) && slices.Equal(ids, after.ids) {
				return nil
			}
			if complete {
				return fmt.Errorf("a complete delete of ids [%d, %d) left: %s", d.lo, d.hi, diffStrings(rows, after.rows))
			}
			if err := sameRows(before, after); err != nil {
				return fmt.Errorf("a killed delete of ids [%d, %d) left the table neither before nor after: %w", d.lo, d.hi, err)
			}
			return nil
		},
	}
}

// keyedCommands are the keyed writers under torture. They have their own kill budget
// (suiteSize.keyedKills), so that they do not thin the maintenance commands' share.
var keyedCommands = []crashCommand{
	mergeCommand("merge", plain), mergeCommand("merge-dv", deletionVectors), upsertIngestCommand,
	deleteCommand("delete", partitioned), deleteCommand("delete-dv", deletionVectors),
}

// TestCrashKeyed SIGKILLs the keyed writers at random moments, on local disk, S3 and Azure: after
// every kill the table holds the batches before it, each once, and the run that follows applies the
// rest.
func TestCrashKeyed(t *testing.T) {
	for _, b := range backends {
		for i, c := range keyedCommands {
			quota := share(size.keyedKills, len(keyedCommands), i, 1)
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				crashCell(t, b, c, quota)
			})
		}
	}
}
