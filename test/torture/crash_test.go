package torture

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3fault"
	"github.com/deltakeeper/deltakeeper/worker/delta"
)

// crashCommand is one command of the crash test (and of the fault runs): the table it runs on, how
// to give it work, and the CLI invocations of one run.
type crashCommand struct {
	name  string
	shape tableShape
	// prepare gives the command work before a series of kills: new small files, tombstones, an aged
	// log.
	prepare func(t *testing.T, f *fixture)
	// steps are the CLI invocations of one run (arguments after the program name), in order.
	steps func(rng *rand.Rand, table string) [][]string
	// judge checks the table after a run, killed (complete=false) or not. nil means a
	// maintenance command: the rows are exactly those before. A command that changes rows (ingest)
	// says here which states are allowed: before, or before plus its batch exactly once.
	judge func(f *fixture, before, after tableState, complete bool) error
}

// crashCommands are the commands under torture. Adding a command is one entry here (ingest's is in
// crash_ingest_test.go, with its own judgement).
var crashCommands = []crashCommand{
	{
		name: "optimize", shape: partitioned,
		prepare: func(t *testing.T, f *fixture) { f.appendFiles(t, 6, 150) },
		steps: func(rng *rand.Rand, table string) [][]string {
			args := []string{"optimize", table, "-o", "json"}
			if b := rng.IntN(3); b > 0 {
				args = append(args, "--batch-size", fmt.Sprint(b)) // commit per bin: kills between commits
			}
			return [][]string{args}
		},
	},
	{
		name: "cluster", shape: plain,
		prepare: func(t *testing.T, f *fixture) { f.appendFiles(t, 6, 150) },
		steps: func(rng *rand.Rand, table string) [][]string {
			columns := []string{"k", "k,id", "id,k", "ts"}[rng.IntN(4)]
			return [][]string{
				{"alter", table, "--cluster-by", columns, "-o", "json"},
				{"optimize", table, "-o", "json"},
			}
		},
	},
	{
		name: "vacuum", shape: partitioned,
		prepare: func(t *testing.T, f *fixture) {
			f.appendFiles(t, 6, 100)
			f.compact(t)
			f.deleteFiles(t, 1)
		},
		steps: func(rng *rand.Rand, table string) [][]string {
			mode := []string{"full", "lite"}[rng.IntN(2)]
			return [][]string{{"vacuum", table, "--retention", "0h", "--allow-short-retention", "--mode", mode, "-o", "json"}}
		},
	},
	{
		name: "checkpoint", shape: plain,
		prepare: func(t *testing.T, f *fixture) {
			f.appendFiles(t, 6, 60)
			if f.site.canAgeLog() {
				f.site.ageLog(t, logAge)
			}
		},
		steps: func(_ *rand.Rand, table string) [][]string {
			return [][]string{{"checkpoint", table, "--log-cleanup", "-o", "json"}}
		},
	},
	{
		name: "maintain", shape: clustered,
		prepare: func(t *testing.T, f *fixture) {
			f.appendFiles(t, 5, 120)
			f.deleteFiles(t, 1)
			if f.site.canAgeLog() {
				f.site.ageLog(t, logAge)
			}
		},
		steps: func(_ *rand.Rand, table string) [][]string {
			return [][]string{{"maintain", table, "--optimize", "--vacuum", "--retention", "0h", "--allow-short-retention",
				"--checkpoint", "--log-cleanup", "-o", "json"}}
		},
	},
}

// judgeRun applies the command's judgement, the rows-unchanged rule by default.
func (c crashCommand) judgeRun(f *fixture, before, after tableState, complete bool) error {
	if c.judge != nil {
		return c.judge(f, before, after, complete)
	}
	return sameRows(before, after)
}

// TestCrash SIGKILLs every command at random moments, on local disk, S3 and Azure, and checks the
// table after every kill and after the run that follows.
func TestCrash(t *testing.T) {
	for _, b := range backends {
		for i, c := range crashCommands {
			quota := share(size.kills, len(crashCommands), i, 1)
			t.Run(b.name+"/"+c.name, func(t *testing.T) {
				t.Parallel()
				crashCell(t, b, c, quota)
			})
		}
	}
}

// crashCell kills one command on one backend quota times. Each cycle gives the command work, then
// kills one to three runs in a row on that work (each kill leaves the next run a half-done state)
// and lets a last run finish. The cell ends with a vacuum and a log cleanup that must leave nothing
// behind.
func crashCell(t *testing.T, b backend, c crashCommand, quota int) {
	ctx := context.Background()
	rng := rngOf(t)
	s := b.open(t, "t")
	f := newFixture(t, s, c.shape, rng)
	f.appendFiles(t, 3, 100)
	var proxy *s3fault.Proxy
	if s.srv != nil {
		proxy = s3fault.Start(t, s.srv.Endpoint, seedOf(t))
	}
	r := newRunner(s, proxy)
	est := estimate{took: 400 * time.Millisecond}
	kills, late := 0, 0
	// Bounded, so that a command that always finishes before the kill cannot loop forever.
	for cycle := 0; kills < quota && cycle < 4*quota; cycle++ {
		c.prepare(t, f)
		before := mustState(t, f.observer, "before the run")
		steps := c.steps(rng, s.location)
		for series := 1 + rng.IntN(3); series > 0 && kills < quota; series-- {
			plan := est.pick(rng, proxy != nil)
			out := r.run(steps, plan, seedOf(t))
			what := fmt.Sprintf("cycle %d, %s: %s", cycle, plan, out)
			after, err := f.latest(ctx)
			if err != nil {
				t.Fatalf("after %s:\n%v\n%s", what, err, replayHint(t))
			}
			if err := c.judgeRun(f, before, after, !out.killed); err != nil {
				t.Fatalf("after %s:\nthe table changed: %v\n%s", what, err, replayHint(t))
			}
			if out.killed {
				kills++
				continue
			}
			late++
			mustSucceed(t, fmt.Sprintf("cycle %d: a run that was not killed (%s)", cycle, plan), out)
			est.update(out)
		}
		out := r.run(steps, killPlan{}, seedOf(t))
		mustSucceed(t, fmt.Sprintf("cycle %d: the run after the kills", cycle), out)
		est.update(out)
		after := mustState(t, f.observer, "after the run that followed the kills")
		if err := c.judgeRun(f, before, after, true); err != nil {
			t.Fatalf("cycle %d: the run after the kills changed the table: %v\n%s\n%s", cycle, err, out, replayHint(t))
		}
	}
	figures.add(func(fg *suiteFigures) { fg.kills += kills; fg.lateKills += late })
	t.Logf("%d kills (%d runs finished before their kill moment); a complete run takes %s, %d requests",
		kills, late, est.took.Round(time.Millisecond), est.requests)
	if kills < quota {
		t.Fatalf("only %d of %d kills hit a live process: the kill moments miss the runs\n%s", kills, quota, replayHint(t))
	}
	finalSweep(t, f, r)
}

func mustState(t testing.TB, o *observer, when string) tableState {
	t.Helper()
	st, err := o.latest(context.Background())
	if err != nil {
		t.Fatalf("%s: %v\n%s", when, err, replayHint(t))
	}
	return st
}

// finalSweep vacuums with zero retention and cleans up an aged log, then checks that every file of
// the table is a live data file or a log file the log needs: no orphan of a killed writer, no temp
// file, no incomplete upload — and that log cleanup did delete the expired commits.
func finalSweep(t *testing.T, f *fixture, r *runner) {
	before := mustState(t, f.observer, "before the final sweep")
	countUncommitted(t, f)
	aged := f.site.canAgeLog()
	if aged {
		f.site.ageLog(t, logAge)
	}
	loc := f.site.location
	out := r.run([][]string{
		{"vacuum", loc, "--retention", "0h", "--allow-short-retention", "-o", "json"},
		{"checkpoint", loc, "--log-cleanup", "-o", "json"},
	}, killPlan{}, seedOf(t))
	mustSucceed(t, "the final vacuum and log cleanup", out)
	after := mustState(t, f.observer, "after the final sweep")
	if err := sameRows(before, after); err != nil {
		t.Fatalf("the final sweep changed the rows: %v", err)
	}
	files := f.site.rawFiles(t)
	isLive, err := liveKeys(f.log, after.version)
	if err != nil {
		t.Fatal(err)
	}
	var orphans, temps, server []string
	for _, fl := range files {
		switch {
		case strings.HasPrefix(fl.key, "_delta_log/"):
		case isServerInternal(f.site, fl.key):
			server = append(server, fl.key)
		case tempName.MatchString(fl.key):
			temps = append(temps, fmt.Sprintf("%s (%d bytes)", fl.key, fl.size))
		case !isLive[fl.key]:
			orphans = append(orphans, fl.key)
		}
	}
	l := listLog(files)
	temps = append(temps, l.temps...)
	var errs []error
	if len(orphans) > 0 {
		errs = append(errs, fmt.Errorf("%d files that no version references survive a zero-retention vacuum: %s", len(orphans), brief(orphans)))
	}
	if len(l.unknown) > 0 {
		errs = append(errs, fmt.Errorf("unexpected files in _delta_log: %s", brief(l.unknown)))
	}
	switch {
	case aged && len(l.commits) > 0 && l.commits[0] == 0:
		errs = append(errs, errors.New("log cleanup of a log aged past its retention deleted nothing: the log still starts at commit 0"))
	case !aged && (len(l.commits) == 0 || l.commits[0] != 0):
		errs = append(errs, fmt.Errorf("log cleanup deleted commits of a log younger than its retention: the log starts at %v", l.commits[:min(len(l.commits), 1)]))
	}
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("after the final sweep: %v\n%s", err, replayHint(t))
	}
	if len(server) > 0 {
		t.Logf("the S3 server holds %d temp objects of its own (not the table's): %s", len(server), brief(server))
	}
	var tempErr error
	if len(temps) > 0 {
		tempErr = fmt.Errorf("%d temp files of killed writers survive: %s", len(temps), brief(temps))
	}
	verify(t, checkNoTempFiles, tempErr)
	var uploadErr error
	if u := f.site.incompleteUploads(t); len(u) > 0 {
		uploadErr = fmt.Errorf("%d incomplete multipart uploads survive: %s", len(u), brief(u))
	}
	if f.site.srv != nil {
		verify(t, checkNoUploads, uploadErr)
	}
}

// liveKeys are the keys of the files version v needs: its data files and their deletion vector files.
func liveKeys(l *logRecorder, v int64) (map[string]bool, error) {
	dvs, err := l.liveFileDVs(v)
	if err != nil {
		return nil, err
	}
	keys := map[string]bool{}
	for p, raw := range dvs {
		if err := addFileKeys(keys, p, raw); err != nil {
			return nil, err
		}
	}
	return keys, nil
}

// committedKeys are the keys of every file some recorded commit added (data files and DV files):
// a file outside the log that is not among them was written by a run that never committed it.
func committedKeys(l *logRecorder) (map[string]bool, error) {
	keys := map[string]bool{}
	for v, data := range l.commits {
		c, err := parseCommit(v, data)
		if err != nil {
			return nil, err
		}
		for _, a := range c.adds {
			if err := addFileKeys(keys, a.Path, a.DeletionVector); err != nil {
				return nil, err
			}
		}
	}
	return keys, nil
}

// addFileKeys adds a data file's key and, if its deletion vector has a file, that file's key.
func addFileKeys(keys map[string]bool, path string, dv json.RawMessage) error {
	keys[path] = true
	if len(dv) == 0 || string(dv) == "null" {
		return nil
	}
	var d delta.DeletionVectorDescriptor
	if err := json.Unmarshal(dv, &d); err != nil {
		return fmt.Errorf("file %s: deletion vector %s: %w", path, dv, err)
	}
	if d.StorageType == delta.DVStorageInline {
		return nil
	}
	key, err := d.StorageKey("")
	if err != nil {
		return fmt.Errorf("file %s: %w", path, err)
	}
	keys[key] = true
	return nil
}

// countUncommitted adds to the figures the files of killed runs that no commit ever added (data
// and DV files), which the final sweep's vacuum must then remove.
func countUncommitted(t *testing.T, f *fixture) {
	committed, err := committedKeys(f.log)
	if err != nil {
		t.Fatal(err)
	}
	data, dvs := 0, 0
	for _, fl := range f.site.rawFiles(t) {
		name := fl.key[strings.LastIndexByte(fl.key, '/')+1:]
		switch {
		case strings.HasPrefix(fl.key, "_delta_log/"), isServerInternal(f.site, fl.key), tempName.MatchString(fl.key), committed[fl.key]:
		case strings.HasPrefix(name, "deletion_vector_"):
			dvs++
		default:
			data++
		}
	}
	figures.add(func(fg *suiteFigures) { fg.uncommittedData += data; fg.uncommittedDVs += dvs })
}

// isServerInternal reports the S3 test server's own temp objects (rclone's ".rclone_temp_" names):
// they are not the table's files, and the S3 API never lists them.
func isServerInternal(s *site, key string) bool {
	if s.srv == nil {
		return false
	}
	name := key[strings.LastIndexByte(key, '/')+1:]
	return strings.HasPrefix(name, ".rclone_temp_")
}
