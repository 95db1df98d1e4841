package torture

import (
	"context"
	"encoding/json"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
)

// ingest under the crash test and the S3 fault runs. Unlike maintenance it changes rows, so its
// judgement is its own: every source row lands exactly once, whole files at a time (one file per
// batch), and the stream's txn version counts the batches without a gap or a repeat. The stream's
// state lives outside the table (--checkpoint), so that the final sweep's "no file but live data
// and the log" rule still holds.

// ingestStream is the source of one torture table, shared by prepare, steps and judge.
type ingestStream struct {
	mu      sync.Mutex
	dir     string    // local source directory (ingest reads local sources for S3 tables too)
	state   string    // the stream's --checkpoint
	files   int       // source files written so far
	pending [][]int64 // the ids of the files this cycle wrote
	taken   int       // files known to be ingested (those before this cycle)
}

var ingestStreams sync.Map // table location -> *ingestStream

func ingestStreamOf(t testing.TB, location string) *ingestStream {
	return streamOf(t, &ingestStreams, location, func(dir, state string) *ingestStream {
		return &ingestStream{dir: dir, state: state}
	})
}

// streamOf returns the state a stream keeps for a table location across the cells' cycles, made on first
// use with a fresh source directory and a checkpoint path outside the table.
func streamOf[S any](t testing.TB, streams *sync.Map, location string, newStream func(dir, state string) *S) *S {
	if s, ok := streams.Load(location); ok {
		return s.(*S)
	}
	base := t.TempDir()
	dir := filepath.Join(base, "src")
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Fatal(err)
	}
	actual, _ := streams.LoadOrStore(location, newStream(dir, filepath.Join(base, "state")))
	return actual.(*S)
}

var ingestCommand = crashCommand{
	name: "ingest", shape: plain,
	prepare: func(t *testing.T, f *fixture) {
		s := ingestStreamOf(t, f.site.location)
		s.mu.Lock()
		defer s.mu.Unlock()
		s.taken += len(s.pending) // the run that ended the last cycle took them all
		s.pending = nil
		for range 2 + f.rng.IntN(3) {
			n := 20 + f.rng.IntN(40)
			s.pending = append(s.pending, writeIngestFile(t, s.dir, s.files, f.rng, f.nextID, n))
			s.files++
			f.nextID += int64(n)
		}
	},
	steps: func(_ *rand.Rand, table string) [][]string {
		s, _ := ingestStreams.Load(table)
		st := s.(*ingestStream)
		return [][]string{{"ingest", table, "--source", st.dir, "--format", "json", "--available-now",
			"--max-files-per-trigger", "1", "--checkpoint", st.state, "-o", "json"}}
	},
	judge: judgeIngest,
}

func init() { crashCommands = append(crashCommands, ingestCommand) }

// writeIngestFile writes n JSON rows with ids from first and returns the ids.
func writeIngestFile(t testing.TB, dir string, seq int, rng *rand.Rand, first int64, n int) []int64 {
	var b strings.Builder
	ids := make([]int64, n)
	for i := range n {
		ids[i] = first + int64(i)
		row, _ := json.Marshal(map[string]any{"id": ids[i], "k": rng.IntN(1000), "p": []string{"a", "b", "c"}[rng.IntN(3)],
			"s": strings.Repeat(string(rune('a'+rng.IntN(26))), 8+rng.IntN(60))})
		b.Write(row)
		b.WriteByte('\n')
	}
	// Names sort in writing order, as do modification times: the stream takes the oldest first.
	if err := os.WriteFile(filepath.Join(dir, fmt.Sprintf("part-%06d.json", seq)), []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return ids
}

// judgeIngest: the rows before stay, each pending file is in whole or not at all, nothing is in
// twice, a complete run took every pending file, and the stream's txn version is the number of
// files taken minus one (batch ids 0, 1, 2… one file each).
func judgeIngest(f *fixture, before, after tableState, complete bool) error {
	s := ingestStreamOf(nil, f.site.location)
	s.mu.Lock()
	defer s.mu.Unlock()
	count := make(map[int64]int, len(after.ids))
	for _, id := range after.ids {
		if count[id]++; count[id] == 2 {
			return fmt.Errorf("id %d is in the table twice: a batch was applied twice", id)
		}
	}
	if len(after.rows) != len(after.ids) {
		return fmt.Errorf("the project's scan reads %d rows, the independent reading %d", len(after.rows), len(after.ids))
	}
	for _, id := range before.ids {
		if count[id] == 0 {
			return fmt.Errorf("id %d, in the table before the run, is gone", id)
		}
		delete(count, id)
	}
	taken := 0
	for i, ids := range s.pending {
		in := 0
		for _, id := range ids {
			if count[id] > 0 {
				in++
				delete(count, id)
			}
		}
		switch {
		case in == len(ids) && taken == i:
			taken++
		case in == len(ids):
			return fmt.Errorf("source file %d of this cycle is in the table but file %d, older, is not: the stream takes the oldest first", i, taken)
		case in != 0:
			return fmt.Errorf("source file %d of this cycle is in the table partly (%d of %d rows): a batch is not atomic", i, in, len(ids))
		case complete:
			return fmt.Errorf("a complete run left source file %d of this cycle out", i)
		}
	}
	if len(count) > 0 {
		extra := make([]int64, 0, len(count))
		for id := range count {
			extra = append(extra, id)
		}
		slices.Sort(extra)
		return fmt.Errorf("%d rows that no source file holds: ids %v", len(extra), extra[:min(5, len(extra))])
	}
	snap, err := f.tbl.Latest(context.Background())
	if err != nil {
		return err
	}
	txns := snap.Txns()
	files := s.taken + taken
	switch {
	case files == 0 && len(txns) == 0:
	case len(txns) != 1:
		return fmt.Errorf("the table has %d txn app ids, want the stream's one", len(txns))
	case txns[0].Version != int64(files-1):
		return fmt.Errorf("the stream's txn version is %d after %d files of one batch each: batch ids are not contiguous", txns[0].Version, files)
	}
	return nil
}
