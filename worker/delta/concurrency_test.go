package delta

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Environment of a child process started by TestConcurrency_*Processes (see TestMain).
const (
	envChildLocation = "DELTAKEEPER_DELTA_TEST_CHILD_LOCATION"
	envChildS3       = "DELTAKEEPER_DELTA_TEST_CHILD_S3"
	envChildID       = "DELTAKEEPER_DELTA_TEST_CHILD_ID"
	envChildCommits  = "DELTAKEEPER_DELTA_TEST_CHILD_COMMITS"
)

func TestMain(m *testing.M) {
	if loc := os.Getenv(envChildLocation); loc != "" {
		os.Exit(runChild(loc))
	}
	os.Exit(m.Run())
}

// runChild appends files as one writer process and prints the txn id of every commit it made.
func runChild(location string) int {
	ctx := context.Background()
	var cfg storage.Config
	if s3 := os.Getenv(envChildS3); s3 != "" {
		if err := json.Unmarshal([]byte(s3), &cfg.S3); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 2
		}
	}
	store, err := storage.Open(ctx, location, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	n, _ := strconv.Atoi(os.Getenv(envChildCommits))
	ids, _, err := appendConcurrently(ctx, NewTable(store), "proc"+os.Getenv(envChildID), n, nil)
	for _, id := range ids {
		fmt.Println("txn", id)
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	return 0
}

// appendConcurrently makes n blind appends, each from a fresh snapshot (the first from start
// when given, so that racing writers are sure to collide), retrying races. It returns the txn
// ids and the number of commit attempts.
func appendConcurrently(ctx context.Context, tbl *Table, writer string, n int, start *Snapshot) ([]string, int, error) {
	var ids []string
	attempts := 0
	for i := 0; i < n; i++ {
		snap := start
		start = nil
		if snap == nil {
			var err error
			if snap, err = tbl.Latest(ctx); err != nil {
				return ids, attempts, err
			}
		}
		tx, err := snap.Begin(OpAppend, TxnOptions{Operation: "WRITE", NoAutoCheckpoint: true, Retry: RetryPolicy{
			MaxAttempts: 500,
			Backoff:     func(int) time.Duration { return time.Duration(rand.IntN(3000)) * time.Microsecond },
		}})
		if err != nil {
			return ids, attempts, err
		}
		tx.Add(dataFile(fmt.Sprintf("%s-%03d.parquet", writer, i), 1))
		res, err := tx.Commit(ctx)
		if err != nil {
			return ids, attempts, err
		}
		attempts += res.Attempts
		ids = append(ids, tx.TxnID())
	}
	return ids, attempts, nil
}

// verifyLog checks the log after a race: versions 0..latest contiguous, every commit parses,
// every successful transaction appears exactly once (an overwritten commit would lose one) and
// the table holds exactly the appended files.
func verifyLog(t *testing.T, tbl *Table, txnIDs []string, wantFiles int) {
	t.Helper()
	ctx := context.Background()
	var versions []Version
	for info, err := range tbl.Store().List(ctx, LogDir, "") {
		if err != nil {
			t.Fatal(err)
		}
		if f, ok := parseLogFile(info); ok && f.kind == kindCommit {
			versions = append(versions, f.version)
		}
	}
	sort.Slice(versions, func(i, j int) bool { return versions[i] < versions[j] })
	for i, v := range versions {
		if v != Version(i) {
			t.Fatalf("log versions not contiguous: %v", versions)
		}
	}
	seen := map[string]int{}
	for _, v := range versions[1:] {
		ci := commitInfoOf(t, tbl, v)
		seen[ci.TxnID]++
	}
	for _, id := range txnIDs {
		if seen[id] != 1 {
			t.Errorf("transaction %s appears %d times in the log", id, seen[id])
		}
	}
	if len(versions)-1 != len(txnIDs) {
		t.Errorf("%d commits after version 0 but %d successful transactions", len(versions)-1, len(txnIDs))
	}
	snap, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if snap.NumFiles() != wantFiles {
		t.Errorf("%d live files, want %d", snap.NumFiles(), wantFiles)
	}
}

func raceGoroutines(t *testing.T, tbl *Table, writers, commits int) {
	ctx := context.Background()
	start, err := tbl.Latest(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var mu sync.Mutex
	var all []string
	attempts := 0
	var wg sync.WaitGroup
	errs := make(chan error, writers)
	for w := 0; w < writers; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			ids, n, err := appendConcurrently(ctx, tbl, fmt.Sprintf("g%d", w), commits, start)
			mu.Lock()
			all = append(all, ids...)
			attempts += n
			mu.Unlock()
			if err != nil {
				errs <- err
			}
		}()
	}
	wg.Wait()
	close(errs)
	for err := range errs {
		t.Errorf("writer: %v", err)
	}
	t.Logf("%d goroutines made %d commits in %d attempts", writers, len(all), attempts)
	// Every writer's first commit was built on the same snapshot: all but one lost at least once.
	if attempts < len(all)+writers-1 {
		t.Errorf("only %d attempts for %d commits: the writers never collided", attempts, len(all))
	}
	verifyLog(t, tbl, all, writers*commits)
}

func TestConcurrency_GoroutinesRacingOnLocalDiskEachCommitOnce(t *testing.T) {
	tbl, _ := testTable(t).Create()
	raceGoroutines(t, tbl, 8, 6)
}

func TestConcurrency_GoroutinesRacingOnS3EachCommitOnce(t *testing.T) {
	srv := s3server.Start(t)
	store, err := storage.Open(context.Background(), srv.Location("race"), storage.Config{S3: srv.S3Config()})
	if err != nil {
		t.Fatal(err)
	}
	tbl := NewTable(store)
	if _, err := tbl.Create(context.Background(), CreateOptions{Schema: testTable(t).schema}); err != nil {
		t.Fatal(err)
	}
	raceGoroutines(t, tbl, 4, 4)
}

func raceProcesses(t *testing.T, tbl *Table, location string, s3cfg *storage.S3Config, procs, commits int) {
	exe, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	type result struct {
		out []byte
		err error
	}
	results := make([]result, procs)
	var wg sync.WaitGroup
	for p := 0; p < procs; p++ {
		cmd := exec.Command(exe)
		cmd.Env = append(os.Environ(), envChildLocation+"="+location, envChildID+"="+strconv.Itoa(p), envChildCommits+"="+strconv.Itoa(commits))
		if s3cfg != nil {
			b, _ := json.Marshal(s3cfg)
			cmd.Env = append(cmd.Env, envChildS3+"="+string(b))
		}
		var stderr strings.Builder
		cmd.Stderr = &stderr
		wg.Add(1)
		go func() {
			defer wg.Done()
			out, err := cmd.Output()
			if err != nil {
				err = fmt.Errorf("%w: %s", err, stderr.String())
			}
			results[p] = result{out, err}
		}()
	}
	wg.Wait()
	var ids []string
	for p, r := range results {
		if r.err != nil {
			t.Errorf("process %d: %v", p, r.err)
		}
		for _, line := range strings.Split(string(r.out), "\n") {
			if id, ok := strings.CutPrefix(line, "txn "); ok {
				ids = append(ids, id)
			}
		}
	}
	t.Logf("%d processes made %d commits", procs, len(ids))
	verifyLog(t, tbl, ids, procs*commits)
}

func TestConcurrency_ProcessesRacingOnLocalDiskEachCommitOnce(t *testing.T) {
	tbl, _ := testTable(t).Create()
	loc := tbl.Location()
	raceProcesses(t, tbl, loc, nil, 4, 6)
}

func TestConcurrency_ProcessesRacingOnS3EachCommitOnce(t *testing.T) {
	srv := s3server.Start(t)
	loc := srv.Location("procs")
	cfg := srv.S3Config()
	store, err := storage.Open(context.Background(), loc, storage.Config{S3: cfg})
	if err != nil {
		t.Fatal(err)
	}
	tbl := NewTable(store)
	if _, err := tbl.Create(context.Background(), CreateOptions{Schema: testTable(t).schema}); err != nil {
		t.Fatal(err)
	}
	raceProcesses(t, tbl, loc, &cfg, 3, 3)
}

// TestConcurrency_CompetingCompactionsHaveExactlyOneWinner races rewrites of the same files:
// one wins, the others fail with a conflict, and no row is lost or duplicated.
func TestConcurrency_CompetingCompactionsHaveExactlyOneWinner(t *testing.T) {
	tbl, _ := testTable(t).Create()
	appendFiles(t, tbl, dataFile("a.parquet", 3), dataFile("b.parquet", 4))
	ctx := context.Background()
	snap, _ := tbl.Latest(ctx)
	const n = 6
	errs := make([]error, n)
	var wg sync.WaitGroup
	for i := 0; i < n; i++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			tx, err := snap.Begin(OpRewrite, TxnOptions{Operation: "OPTIMIZE", NoAutoCheckpoint: true})
			if err != nil {
				errs[i] = err
				return
			}
			tx.ReadFiles(snap.Files()...)
			tx.Remove(false, snap.Files()...)
			out := dataFile(fmt.Sprintf("compacted-%d.parquet", i), 7)
			out.DataChange = false
			tx.Add(out)
			_, errs[i] = tx.Commit(ctx)
		}()
	}
	wg.Wait()
	wins := 0
	for _, err := range errs {
		switch {
		case err == nil:
			wins++
		case !errors.Is(err, ErrConcurrentModification):
			t.Errorf("unexpected error: %v", err)
		}
	}
	if wins != 1 {
		t.Fatalf("%d compactions won, want exactly 1", wins)
	}
	latest, _ := tbl.Latest(ctx)
	var rows int64
	for _, f := range latest.Files() {
		n, _ := NumRecords(f.Stats)
		rows += n
	}
	if latest.Version() != 2 || latest.NumFiles() != 1 || rows != 7 {
		t.Fatalf("v%d, %d files, %d rows", latest.Version(), latest.NumFiles(), rows)
	}
}
