package ingest

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/ingest/format"
	"github.com/deltakeeper/deltakeeper/worker/ingest/state"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// The crash tests run the ingest in a child process (this test binary, re-executed with
// INGEST_CHILD set) and kill it with SIGKILL: at a named point in the batch protocol (the child
// kills itself there, after a random number of passes), or at a random moment (the parent kills it).

const childEnv = "INGEST_CHILD"

func TestMain(m *testing.M) {
	if os.Getenv(childEnv) != "" {
		os.Exit(childMain())
	}
	os.Exit(m.Run())
}

// childMain runs one availableNow ingest of $INGEST_SRC into $INGEST_TABLE; with INGEST_KILL_AT=
// "<point>:<n>" it SIGKILLs itself the n-th time it reaches the point.
func childMain() int {
	if at := os.Getenv("INGEST_KILL_AT"); at != "" {
		point, nth, _ := strings.Cut(at, ":")
		n, _ := strconv.Atoi(nth)
		var mu sync.Mutex
		hit := func(p string) {
			mu.Lock()
			defer mu.Unlock()
			if p == point {
				if n--; n <= 0 {
					_ = syscall.Kill(os.Getpid(), syscall.SIGKILL) // does not return
					time.Sleep(time.Second)
				}
			}
		}
		CrashHook = hit
		state.CompactHook = func(step string) { hit("compact-" + step) }
	}
	store, err := storage.NewLocal(os.Getenv("INGEST_TABLE"))
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fo, err := format.ParseOptions(format.JSON, nil, format.AddNewColumns)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	optimized := os.Getenv("INGEST_OPTIMIZED") == "1"
	_, err = Run(context.Background(), delta.NewTable(store), Options{
		Source: os.Getenv("INGEST_SRC"), Format: fo, AvailableNow: true, MaxFilesPerTrigger: 3,
		StateCompactEvery: 2, PartitionBy: []string{"part"}, OptimizeWrite: &optimized, Logger: quiet,
	})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// crashRig is a source of JSON files with unique ids and the child processes ingesting them.
type crashRig struct {
	t        *testing.T
	dir, src string
	nextID   int
	files    int
}

func newCrashRig(t *testing.T) *crashRig {
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	return &crashRig{t: t, dir: dir, src: src}
}

// addFiles lands n files of 1 to 20 rows (ids unique over the run); every third file brings a new
// column, so schema evolution happens between crashes too.
func (c *crashRig) addFiles(rng *rand.Rand, n int) {
	for range n {
		var b strings.Builder
		for range 1 + rng.IntN(20) {
			extra := ""
			if c.files%3 == 2 {
				extra = fmt.Sprintf(`,"c%d":%d`, c.files%7, c.nextID)
			}
			fmt.Fprintf(&b, `{"id":%d,"part":"p%d","v":"r%d"%s}`+"\n", c.nextID, c.nextID%4, c.nextID, extra)
			c.nextID++
		}
		// Non-lexical names half the time: the listing order is not the arrival order.
		name := fmt.Sprintf("f%06d.json", c.files)
		if c.files%2 == 1 {
			name = fmt.Sprintf("z/%x.json", rng.Uint64())
		}
		p := filepath.Join(c.src, name)
		if err := os.MkdirAll(filepath.Dir(p), 0o755); err != nil {
			c.t.Fatal(err)
		}
		if err := os.WriteFile(p, []byte(b.String()), 0o644); err != nil {
			c.t.Fatal(err)
		}
		c.files++
	}
}

func (c *crashRig) child(env ...string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), childEnv+"=1", "INGEST_SRC="+c.src, "INGEST_TABLE="+filepath.Join(c.dir, "table"))
	cmd.Env = append(cmd.Env, env...)
	return cmd
}

// verify checks that the table holds every source id exactly once and that the stream's txn
// versions are contiguous from 0.
func (c *crashRig) verify() {
	c.t.Helper()
	store, _ := storage.NewLocal(filepath.Join(c.dir, "table"))
	fx := &fixture{t: c.t, tbl: delta.NewTable(store)}
	rows := fx.rows("id")
	if len(rows) != c.nextID {
		c.t.Errorf("the table holds %d rows, the source %d", len(rows), c.nextID)
	}
	seen := map[string]int{}
	for _, r := range rows {
		seen[r]++
	}
	for id := range c.nextID {
		if n := seen["id="+strconv.Itoa(id)]; n != 1 {
			c.t.Errorf("id %d is in the table %d times", id, n)
		}
	}
	snap := fx.snapshot()
	var appID string
	for _, t := range snap.Txns() {
		appID = t.AppID
	}
	versions := fx.txnVersions(appID)
	for i, v := range versions {
		if v != int64(i) {
			c.t.Fatalf("txn versions %v are not contiguous from 0", versions)
		}
	}
}

func TestCrash_SIGKILLAtNamedPointsAndRandomMomentsIngestsEveryRowExactlyOnce(t *testing.T) {
	c := newCrashRig(t)
	rng := rand.New(rand.NewPCG(12, 34))
	points := []string{"planned", "file-written", "before-commit", "after-commit", "marked", "compact-snapshot-written", "compact-deleting"}
	// Runs go on until 100 of them were killed (a run that finished before its kill does not count).
	const wantKills, maxRuns = 100, 400
	killed, runs := 0, 0
	for i := 0; killed < wantKills && i < maxRuns; i++ {
		runs++
		c.addFiles(rng, 1+rng.IntN(4)) // files keep arriving while the stream runs
		var cmd *exec.Cmd
		if i%2 == 0 {
			cmd = c.child(fmt.Sprintf("INGEST_KILL_AT=%s:%d", points[rng.IntN(len(points))], 1+rng.IntN(3)),
				"INGEST_OPTIMIZED="+strconv.Itoa(i%4/2))
			out, err := cmd.CombinedOutput()
			if err != nil {
				if ee := (*exec.ExitError)(nil); errors.As(err, &ee) && ee.Sys().(syscall.WaitStatus).Signaled() {
					killed++
				} else {
					t.Fatalf("run %d: %v\n%s", i, err, out)
				}
			}
			continue
		}
		cmd = c.child()
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		time.Sleep(time.Duration(5_000+rng.IntN(40_000)) * time.Microsecond)
		_ = cmd.Process.Signal(syscall.SIGKILL) // it may have finished first; Wait tells
		if err := cmd.Wait(); err != nil {
			if ee := (*exec.ExitError)(nil); !errors.As(err, &ee) || !ee.Sys().(syscall.WaitStatus).Signaled() {
				t.Fatalf("run %d: %v", i, err)
			}
			killed++
		}
	}
	t.Logf("%d runs, %d killed by SIGKILL, %d files, %d rows", runs, killed, c.files, c.nextID)
	if killed < wantKills {
		t.Errorf("only %d of %d runs were killed: the crash points are not reached", killed, runs)
	}
	// A last run without a crash finishes whatever is left.
	if out, err := c.child().CombinedOutput(); err != nil {
		t.Fatalf("final run: %v\n%s", err, out)
	}
	c.verify()
}

func TestCrash_TwoProcessesOfOneStreamRacingIngestEveryRowExactlyOnce(t *testing.T) {
	c := newCrashRig(t)
	rng := rand.New(rand.NewPCG(56, 78))
	for round := range 6 {
		c.addFiles(rng, 10+rng.IntN(10))
		a, b := c.child("INGEST_OPTIMIZED="+strconv.Itoa(round%2)), c.child()
		var wg sync.WaitGroup
		outs := make([][]byte, 2)
		errs := make([]error, 2)
		for i, cmd := range []*exec.Cmd{a, b} {
			wg.Add(1)
			go func() {
				defer wg.Done()
				outs[i], errs[i] = cmd.CombinedOutput()
			}()
		}
		wg.Wait()
		for i := range errs {
			if errs[i] != nil {
				t.Fatalf("round %d process %d: %v\n%s", round, i, errs[i], outs[i])
			}
		}
	}
	c.verify()
	if c.t.Failed() {
		return
	}
	// Both processes made progress on the same stream: one table, one stream id.
	store, _ := storage.NewLocal(filepath.Join(c.dir, "table"))
	snap, err := delta.NewTable(store).Latest(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if n := len(snap.Txns()); n != 1 {
		t.Fatalf("%d txn app ids, want the stream's one", n)
	}
}
