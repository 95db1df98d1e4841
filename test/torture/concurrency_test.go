package torture

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/result"
)

const (
	// appenders is the number of independent appender processes per table.
	appenders = 4
	// vacuumRetention is the retention of the concurrent vacuums: far longer than an append takes
	// from writing its file to committing it (milliseconds), so vacuum may delete compacted files
	// but never an appender's file before its commit.
	vacuumRetention = time.Minute
)

// TestConcurrency races independent appender processes against looping maintenance processes on
// one table per backend: every appended row exactly once, every version readable by time travel
// and equal to what its commit says, no commit file ever overwritten.
func TestConcurrency(t *testing.T) {
	for _, b := range backends {
		target := max(size.commits, 2*appenders)
		t.Run(b.name, func(t *testing.T) {
			t.Parallel()
			concurrencyCell(t, b, target)
		})
	}
}

func concurrencyCell(t *testing.T, b backend, target int) {
	ctx := context.Background()
	rng := rngOf(t)
	seed := seedOf(t)
	s := b.open(t, "t")
	f := newFixture(t, s, plain, rng)
	f.appendFiles(t, 4, 50)
	start := mustState(t, f.observer, "at the start")
	c := &checker{o: f.observer, prev: start, added: map[int64][]int64{}, ops: map[string]int{}}
	checkerDone := make(chan error, 1)
	stopChecking := make(chan struct{})
	go func() { checkerDone <- c.loop(ctx, stopChecking) }()

	batches := (target + appenders - 1) / appenders
	var procs []*appenderProcess
	for i := range appenders {
		a, err := startAppender(s, i, batches, seed)
		if err != nil {
			t.Fatal(err)
		}
		procs = append(procs, a)
	}
	t.Cleanup(func() {
		for _, a := range procs {
			if a.cmd.ProcessState == nil {
				_ = a.cmd.Process.Kill()
			}
		}
	})

	appendersDone := make(chan struct{})
	var maint sync.WaitGroup
	m := &maintenance{site: s, done: appendersDone, seed: seed}
	for loop := range 2 {
		maint.Add(1)
		go func() {
			defer maint.Done()
			m.loop(loop, rand.New(rand.NewPCG(seed, uint64(loop)+100)))
		}()
	}
	var errs []error
	for _, a := range procs {
		if err := <-a.done; err != nil {
			errs = append(errs, err)
		}
	}
	close(appendersDone)
	maint.Wait()
	close(stopChecking)
	if err := <-checkerDone; err != nil {
		errs = append(errs, fmt.Errorf("the checker: %w", err))
	}
	errs = append(errs, m.errs...)
	if err := errors.Join(errs...); err != nil {
		t.Fatalf("%v\n%s", err, replayHint(t))
	}

	end := mustState(t, f.observer, "at the end")
	if c.prev.version != end.version {
		t.Fatalf("the checker stopped at version %d, the table is at %d", c.prev.version, end.version)
	}
	// Every batch an appender reported: its rows exactly once, in the commit it reported.
	want := slices.Clone(start.ids)
	retries := 0
	for _, a := range procs {
		retries += a.retries
		if len(a.committed) != batches {
			t.Fatalf("appender %d committed %d of %d batches", a.index, len(a.committed), batches)
		}
		for seq, v := range a.committed {
			ids := batchIDs(seed, batchID{a.index, seq})
			want = append(want, ids...)
			got := slices.Clone(c.added[v])
			slices.Sort(got)
			slices.Sort(ids)
			if !slices.Equal(got, ids) {
				t.Fatalf("appender %d reported batch %d committed as version %d, which added other rows: %s\n%s",
					a.index, seq, v, diffInts(ids, got), replayHint(t))
			}
		}
	}
	slices.Sort(want)
	if !slices.Equal(want, end.ids) {
		t.Fatalf("the table does not hold every appended row exactly once: %s\n%s", diffInts(want, end.ids), replayHint(t))
	}
	commits := int(end.version - start.version)
	figures.add(func(fg *suiteFigures) { fg.commits += commits })
	t.Logf("%d commits (%d appends by %d processes, %d append retries), operations %v; maintenance runs %v; "+
		"%d versions checked by time travel, %d already vacuumed when the checker got there; longest check delay %s",
		commits, appenders*batches, appenders, retries, c.ops, m.summary(), c.checked, c.vacuumed, c.maxDelay.Round(time.Millisecond))
	if commits < target {
		t.Fatalf("%d commits, want at least %d", commits, target)
	}
}

// checker follows the log version by version as it grows: it records each commit the moment it
// sees it, reads the version by time travel, and checks it against the previous one and the
// commit — an append adds exactly its files' rows, everything else keeps the rows.
type checker struct {
	o        *observer
	prev     tableState
	added    map[int64][]int64 // version → ids its dataChange adds brought
	ops      map[string]int    // commitInfo.operation → commits
	checked  int
	vacuumed int
	maxDelay time.Duration
}

func (c *checker) loop(ctx context.Context, stop <-chan struct{}) error {
	lastSweep := time.Now()
	for {
		progressed, err := c.step(ctx)
		if err != nil {
			return err
		}
		if time.Since(lastSweep) > 2*time.Second {
			// Every commit seen so far, compared with the bytes first seen.
			files, err := c.o.site.listRaw()
			if err == nil {
				err = c.o.log.observe(c.o.site, files)
			}
			if err != nil {
				return err
			}
			c.prefetchAdded()
			lastSweep = time.Now()
		}
		if progressed {
			continue
		}
		select {
		case <-stop:
			// Writers are done: one more look for the last commits.
			for {
				progressed, err := c.step(ctx)
				if err != nil || !progressed {
					return err
				}
			}
		case <-time.After(10 * time.Millisecond):
		}
	}
}

// prefetchAdded reads the ids of the files added by every commit seen but not yet checked. The
// time-travel checks lag behind the writers (a minute and more on a loaded machine, against a one-minute
// vacuum retention): an appended file compacted away and vacuumed before its commit's check could
// otherwise no longer tell the checker which rows the commit added. Failures are left to step, which
// reports them in order.
func (c *checker) prefetchAdded() {
	for v := c.prev.version + 1; v <= c.o.log.high; v++ {
		data, ok := c.o.log.commits[v]
		if !ok {
			continue
		}
		commit, err := parseCommit(v, data)
		if err != nil {
			continue
		}
		for _, a := range commit.adds {
			if a.DataChange {
				_, _ = c.o.ids.ids(c.o.site, a.Path)
			}
		}
	}
}

// step checks the next version if it exists.
func (c *checker) step(ctx context.Context) (bool, error) {
	v := c.prev.version + 1
	key := fmt.Sprintf("_delta_log/%020d.json", v)
	modTime, statErr := c.o.site.modTime(key)
	if err := c.o.log.record(c.o.site, v); err != nil {
		return false, err
	}
	data, ok := c.o.log.commits[v]
	if !ok {
		return false, nil
	}
	if statErr == nil {
		c.maxDelay = max(c.maxDelay, time.Since(modTime))
	}
	commit, err := parseCommit(v, data)
	if err != nil {
		return false, err
	}
	c.ops[commit.operation]++
	var added []int64
	for _, rm := range commit.removes {
		if rm.DataChange {
			return false, fmt.Errorf("commit %d (%s) removes %s with dataChange=true: rows disappeared", v, commit.operation, rm.Path)
		}
	}
	for _, a := range commit.adds {
		if !a.DataChange {
			continue
		}
		ids, err := c.o.ids.ids(c.o.site, a.Path)
		if err != nil {
			return false, fmt.Errorf("commit %d (%s): %w (%s)", v, commit.operation, err, c.whyGone(v, a.Path))
		}
		added = append(added, ids...)
	}
	c.added[v] = added
	want := append(slices.Clone(c.prev.ids), added...)
	slices.Sort(want)

	st, err := c.o.at(ctx, v)
	if err != nil {
		gone, gerr := c.vacuumedSince(v)
		if gerr != nil {
			return false, fmt.Errorf("%w (and %w)", err, gerr)
		}
		if !gone {
			return false, err
		}
		c.vacuumed++
		c.prev = tableState{version: v, ids: want}
		return true, nil
	}
	if !slices.Equal(st.ids, want) {
		return false, fmt.Errorf("version %d (%s) holds other rows than version %d plus what the commit added: %s",
			v, commit.operation, v-1, diffInts(want, st.ids))
	}
	c.checked++
	c.prev = st
	return true, nil
}

// whyGone says, for a failure report, whether path (added by version v) was removed by a later commit
// and how long ago: removed longer than the vacuum retention ago means the checker lagged behind a
// legitimate vacuum; not removed at all means a live file was lost.
func (c *checker) whyGone(v int64, path string) string {
	for w := v + 1; w <= c.o.log.high; w++ {
		commit, err := parseCommit(w, c.o.log.commits[w])
		if err != nil {
			continue
		}
		for _, rm := range commit.removes {
			if rm.Path == path {
				ago := time.Since(time.UnixMilli(rm.DeletionTime)).Round(time.Second)
				return fmt.Sprintf("removed by version %d (%s) %s ago, vacuum retention %s", w, commit.operation, ago, vacuumRetention)
			}
		}
	}
	return fmt.Sprintf("no commit up to version %d removed it: a live file was lost", c.o.log.high)
}

// vacuumedSince reports whether version v cannot be read only because vacuum legitimately deleted
// some of its files: each missing file was removed by a later commit longer ago than the vacuum
// retention. A file missing for any other reason is an error.
func (c *checker) vacuumedSince(v int64) (bool, error) {
	files, err := c.o.site.listRaw()
	if err != nil {
		return false, err
	}
	if err := c.o.log.observe(c.o.site, files); err != nil {
		return false, err
	}
	present := map[string]bool{}
	for _, f := range files {
		present[f.key] = true
	}
	live, err := c.o.log.liveFiles(v)
	if err != nil {
		return false, err
	}
	removedAt := map[string]int64{}
	for w := v + 1; w <= c.o.log.high; w++ {
		commit, err := parseCommit(w, c.o.log.commits[w])
		if err != nil {
			return false, err
		}
		for _, rm := range commit.removes {
			removedAt[rm.Path] = rm.DeletionTime
		}
	}
	gone := false
	horizon := time.Now().Add(-vacuumRetention).UnixMilli()
	for _, p := range live {
		if present[p] {
			continue
		}
		when, ok := removedAt[p]
		if !ok || when > horizon {
			return false, fmt.Errorf("file %s of version %d is gone although no commit removed it longer than %s ago", p, v, vacuumRetention)
		}
		gone = true
	}
	return gone, nil
}

// maintenance runs the looping maintenance processes: the CLI, run after run, until the appenders
// are done.
type maintenance struct {
	site *site
	done <-chan struct{}
	seed uint64

	mu   sync.Mutex
	runs map[string]int
	errs []error
}

func (m *maintenance) summary() map[string]int {
	m.mu.Lock()
	defer m.mu.Unlock()
	return m.runs
}

// loop 0 compacts, and once declares clustering (after which optimize clusters); loop 1 mixes
// checkpoints with log cleanup, vacuums and compactions.
func (m *maintenance) loop(which int, rng *rand.Rand) {
	r := newRunner(m.site, nil)
	loc := m.site.location
	for i := 0; ; i++ {
		select {
		case <-m.done:
			return
		default:
		}
		var name string
		var args []string
		switch {
		case which == 0 && i == 3:
			name, args = "alter", []string{"alter", loc, "--cluster-by", "k"}
		case which == 0:
			name, args = "optimize", []string{"optimize", loc}
		default:
			switch rng.IntN(3) {
			case 0:
				name, args = "checkpoint", []string{"checkpoint", loc, "--log-cleanup"}
			case 1:
				mode := []string{"full", "lite"}[rng.IntN(2)]
				name, args = "vacuum-"+mode, []string{"vacuum", loc, "--retention", vacuumRetention.String(), "--allow-short-retention", "--mode", mode}
			default:
				name, args = "optimize", []string{"optimize", loc, "--batch-size", "1"}
			}
		}
		out := r.run([][]string{append(args, "-o", "json")}, killPlan{}, m.seed)
		m.mu.Lock()
		if m.runs == nil {
			m.runs = map[string]int{}
		}
		switch {
		case out.succeeded():
			m.runs[name]++
		case len(out.results) == 1 && out.results[0].Reason == result.ReasonConflict:
			// A lost race with another maintenance run, reported as such: allowed.
			m.runs[name+" (conflict)"]++
		default:
			m.errs = append(m.errs, fmt.Errorf("maintenance run failed: %s", out))
		}
		m.mu.Unlock()
	}
}
