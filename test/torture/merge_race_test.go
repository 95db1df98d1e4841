package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// The merge race (issue 13): upsert processes (keyed batches with delete markers, each batch exactly once by
// its --app-id/--batch-id) racing append processes and a looping OPTIMIZE that clusters the table on the key,
// on the S3 test server. Keys interleave: upserter u owns the ids ≡ u (mod 4), appender a the ids ≡ 2+a, so
// every appended file's statistics overlap the upserts' keys and a merge must prove (or retry) that a
// concurrent append does not touch its keys. At the end each upserted key holds exactly the row of the last
// batch that wrote it (or nothing, if that batch deleted it), every appended row is there once, and nothing
// else is; a replayed batch id commits nothing.

const (
	mergeUpserters      = 2
	mergeAppenders      = 2
	mergeKeysPerWriter  = 400 // ids 4·i + u, i < mergeKeysPerWriter
	mergeBatchKeys      = 40  // keys per upsert batch
	mergeAppendRows     = 30  // rows per append batch
	mergeAttemptsPerRun = 30  // a batch's attempts before a conflict counts as starvation
)

func mergeRaceBatches() int {
	if size.name == "full" {
		return 30
	}
	return 8
}

func TestMergeRace(t *testing.T) {
	for _, dv := range []bool{false, true} {
		t.Run(fmt.Sprintf("s3/dv=%t", dv), func(t *testing.T) {
			t.Parallel()
			mergeRaceCell(t, openS3(t, "t"), dv)
		})
	}
}

// mergeRow is one row of the race's table (id, val, writer, del).
type mergeRow struct {
	id, val int64
	writer  string
	del     bool
}

func (r mergeRow) json() string {
	return fmt.Sprintf(`{"id":%d,"val":%d,"writer":%q,"del":%t}`, r.id, r.val, r.writer, r.del)
}

// upsertBatch is batch b of upserter u: mergeBatchKeys of its keys, about a fifth of them deletes.
func upsertBatch(seed uint64, u, b int) []mergeRow {
	rng := rand.New(rand.NewPCG(seed, uint64(u)<<32|uint64(b)|1<<62))
	var rows []mergeRow
	for _, i := range rng.Perm(mergeKeysPerWriter)[:mergeBatchKeys] {
		rows = append(rows, mergeRow{id: int64(4*i + u), val: int64(b + 1), writer: fmt.Sprintf("u%d", u), del: rng.IntN(5) == 0})
	}
	return rows
}

// appendBatch is batch b of appender a: fresh ids ≡ 2+a (mod 4), within the upserters' range.
func appendBatch(a, b int) []mergeRow {
	var rows []mergeRow
	for r := range mergeAppendRows {
		rows = append(rows, mergeRow{id: int64(4*(b*mergeAppendRows+r) + 2 + a), val: int64(b + 1), writer: fmt.Sprintf("a%d", a)})
	}
	return rows
}

func writeJSONBatch(t *testing.T, path string, rows []mergeRow) {
	lines := make([]string, len(rows))
	for i, r := range rows {
		lines[i] = r.json()
	}
	if err := os.WriteFile(path, []byte(strings.Join(lines, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}

// mergeWriter is one racing process stream and what it saw.
type mergeWriter struct {
	name      string
	commits   []time.Time // when each batch's commit was reported
	conflicts int         // runs that ended in a reported conflict, each retried
	replans   int         // plans beyond the first inside committed merges (result.Merge.Attempts − 1)
	err       error
}

func mergeRaceCell(t *testing.T, s *site, dv bool) {
	ctx := context.Background()
	seed := seedOf(t)
	batchDir := keptDir(t)
	schema := &types.StructType{Fields: []*types.StructField{
		{Name: "id", Type: types.Primitive(types.TypeLong), Nullable: true}, {Name: "val", Type: types.Primitive(types.TypeLong), Nullable: true},
		{Name: "writer", Type: types.Primitive(types.TypeString), Nullable: true}, {Name: "del", Type: types.Primitive(types.TypeBoolean), Nullable: true}}}
	opts := delta.CreateOptions{Schema: schema, Configuration: map[string]string{delta.PropCheckpointInterval: "10"}}
	if dv {
		opts.Configuration[delta.PropEnableDeletionVectors] = "true"
	}
	tbl := delta.NewTable(s.store)
	if _, err := tbl.Create(ctx, opts); err != nil {
		t.Fatal(err)
	}
	if _, err := table.ApplyDeclaration(ctx, tbl, table.Declaration{SetClusterBy: true, ClusterBy: []string{"id"}}); err != nil {
		t.Fatalf("declaring clustering: %v", err)
	}
	batches := mergeRaceBatches()
	batchFile := func(writer string, b int) string {
		return filepath.Join(batchDir, fmt.Sprintf("%s-%03d.json", writer, b))
	}
	for u := range mergeUpserters {
		for b := range batches {
			writeJSONBatch(t, batchFile(fmt.Sprintf("u%d", u), b), upsertBatch(seed, u, b))
		}
	}
	for a := range mergeAppenders {
		for b := range batches {
			writeJSONBatch(t, batchFile(fmt.Sprintf("a%d", a), b), appendBatch(a, b))
		}
	}
	mergeArgs := func(writer string, b int) []string {
		args := []string{"merge", s.location, "--source", batchFile(writer, b), "--format", "json", "--app-id", "race-" + writer,
			"--batch-id", fmt.Sprint(b), "-o", "json"}
		if writer[0] == 'u' {
			return append(args, "--mode", "upsert", "--keys", "id", "--delete-column", "del")
		}
		return append(args, "--mode", "append")
	}

	start := time.Now()
	var writers []*mergeWriter
	var wg sync.WaitGroup
	for _, name := range []string{"u0", "u1", "a0", "a1"} {
		w := &mergeWriter{name: name}
		writers = append(writers, w)
		wg.Add(1)
		go func() {
			defer wg.Done()
			r := newRunner(s, nil)
			for b := 0; b < batches; b++ {
				out := r.run([][]string{mergeArgs(w.name, b)}, killPlan{}, seed)
				switch {
				case out.succeeded():
					w.commits = append(w.commits, time.Now())
					if len(out.results) == 1 && out.results[0].Merge != nil && out.results[0].Merge.Attempts > 1 {
						w.replans += out.results[0].Merge.Attempts - 1
					}
				case len(out.results) == 1 && out.results[0].Reason == result.ReasonConflict && w.conflicts < mergeAttemptsPerRun*batches:
					// Reported as a conflict: the same batch id again (a no-op if it landed after all).
					w.conflicts++
					b--
				default:
					w.err = fmt.Errorf("%s batch %d: %s", w.name, b, out)
					return
				}
			}
		}()
	}
	done := make(chan struct{})
	go func() { wg.Wait(); close(done) }()
	var optimizeCommits []time.Time
	optimizeRuns, optimizeConflicts, optimizeReplans := 0, 0, 0
	var optimizeErr error
	r := newRunner(s, nil)
	for running := true; running; {
		select {
		case <-done:
			running = false
		default:
		}
		out := r.run([][]string{{"optimize", s.location, "-o", "json"}}, killPlan{}, seed)
		optimizeRuns++
		switch {
		case out.succeeded():
			if len(out.results) == 1 && out.results[0].Outcome == result.Succeeded {
				optimizeCommits = append(optimizeCommits, time.Now())
			}
			optimizeReplans += replansOf(out.results)
		case len(out.results) == 1 && out.results[0].Reason == result.ReasonConflict:
			optimizeConflicts++
			optimizeReplans += replansOf(out.results)
		default:
			optimizeErr = fmt.Errorf("optimize: %s", out)
		}
		if optimizeErr != nil {
			break
		}
		time.Sleep(100 * time.Millisecond) // a pause, so that an idle table does not spin processes
	}
	<-done
	took := time.Since(start)
	var errs []error
	for _, w := range writers {
		errs = append(errs, w.err)
	}
	errs = append(errs, optimizeErr)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("%v\n%s", err, replayHint(t))
	}

	// Exactly once: every upserter's last batch again commits nothing.
	before := latestVersion(t, tbl)
	for u := range mergeUpserters {
		out := newRunner(s, nil).run([][]string{mergeArgs(fmt.Sprintf("u%d", u), batches-1)}, killPlan{}, seed)
		mustSucceed(t, "replaying a committed batch id", out)
		if v := latestVersion(t, tbl); v != before {
			t.Fatalf("replaying u%d's batch id %d committed version %d (the table was at %d)\n%s", u, batches-1, v, before, replayHint(t))
		}
	}

	verify(t, "the final rows", checkMergeRaceRows(ctx, tbl, seed, batches))
	perMinute := func(n int) float64 { return float64(n) / took.Minutes() }
	var upserts, appends, conflicts, replans int
	for _, w := range writers {
		if w.name[0] == 'u' {
			upserts += len(w.commits)
		} else {
			appends += len(w.commits)
		}
		conflicts += w.conflicts
		replans += w.replans
	}
	note := fmt.Sprintf("merge race dv=%t: %s, %d upsert commits (%.1f/min), %d append commits (%.1f/min), %d optimize commits of %d runs (%.1f/min), "+
		"re-planned after a concurrent commit: merges %d times, optimize runs %d times; conflicts reported and retried: %d by the writers, %d by optimize",
		dv, took.Round(time.Second), upserts, perMinute(upserts), appends, perMinute(appends),
		len(optimizeCommits), optimizeRuns, perMinute(len(optimizeCommits)), replans, optimizeReplans, conflicts, optimizeConflicts)
	t.Log(note)
	figures.add(func(fg *suiteFigures) { fg.notes = append(fg.notes, note) })
	if len(optimizeCommits) == 0 {
		t.Fatalf("OPTIMIZE committed nothing in %d runs while the writers ran: it starved (%s)\n%s", optimizeRuns, note, replayHint(t))
	}
}

// replansOf counts the re-plans an optimize run reports in its steps' messages ("re-planned N times").
func replansOf(results []*result.Result) int {
	n := 0
	for _, r := range results {
		for _, op := range r.Ops {
			var k int
			if i := strings.Index(op.Message, "re-planned "); i >= 0 {
				if _, err := fmt.Sscanf(op.Message[i:], "re-planned %d times", &k); err == nil {
					n += k
				}
			}
		}
	}
	return n
}

func latestVersion(t *testing.T, tbl *delta.Table) int64 {
	t.Helper()
	snap, err := tbl.Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	return int64(snap.Version())
}

// checkMergeRaceRows compares the table, read by the project's scan (DVs applied), with the model: for each
// upserter's key the row of the last batch that wrote it unless that batch deleted it, and every appended row.
func checkMergeRaceRows(ctx context.Context, tbl *delta.Table, seed uint64, batches int) error {
	want := map[int64]mergeRow{}
	for u := range mergeUpserters {
		for b := range batches {
			for _, r := range upsertBatch(seed, u, b) {
				if r.del {
					delete(want, r.id)
				} else {
					want[r.id] = r
				}
			}
		}
	}
	for a := range mergeAppenders {
		for b := range batches {
			for _, r := range appendBatch(a, b) {
				want[r.id] = r
			}
		}
	}
	snap, err := tbl.Latest(ctx)
	if err != nil {
		return err
	}
	scan, err := table.NewScan(snap, table.ScanOptions{})
	if err != nil {
		return err
	}
	got := map[int64]mergeRow{}
	var problems []string
	_, err = scan.Run(ctx, func(rows []types.Struct) error {
		for _, row := range rows {
			r := mergeRow{id: row[0].(int64), val: row[1].(int64), writer: row[2].(string)}
			if d, ok := row[3].(bool); ok {
				r.del = d
			}
			if prev, dup := got[r.id]; dup {
				problems = append(problems, fmt.Sprintf("id %d twice: %+v and %+v", r.id, prev, r))
			}
			got[r.id] = r
		}
		return nil
	})
	if err != nil {
		return err
	}
	for id, w := range want {
		g, ok := got[id]
		switch {
		case !ok:
			problems = append(problems, fmt.Sprintf("id %d lost (want %+v)", id, w))
		case g != w:
			problems = append(problems, fmt.Sprintf("id %d is %+v, want %+v", id, g, w))
		}
	}
	for id, g := range got {
		if _, ok := want[id]; !ok {
			problems = append(problems, fmt.Sprintf("id %d should not be there: %+v", id, g))
		}
	}
	if len(problems) > 0 {
		slices.Sort(problems)
		return fmt.Errorf("version %d: %d problems (%d rows, want %d): %s", snap.Version(), len(problems), len(got), len(want),
			strings.Join(problems[:min(len(problems), 12)], "; "))
	}
	return nil
}
