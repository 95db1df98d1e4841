package optimize

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/expr"
	"github.com/deltakeeper/deltakeeper/worker/result"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
)

// The concurrent writers of these tests. Each is a function of the table, so the same writer runs
// in this process or in a child process (the test binary re-executed, see TestMain).
var concurrentWriters = map[string]func(ctx context.Context, tbl *delta.Table) error{
	// Another engine compacts the partition 2024-01-01 (Spark OPTIMIZE WHERE, say).
	"compact-first-day": func(ctx context.Context, tbl *delta.Table) error {
		where, err := expr.Parse("order_date = '2024-01-01'")
		if err != nil {
			return err
		}
		_, err = Run(ctx, tbl, Options{Where: where}, nil)
		return err
	},
	// A DELETE removes one file of the partition 2024-01-02 (dataChange=true).
	"delete-a-second-day-file": func(ctx context.Context, tbl *delta.Table) error {
		snap, err := tbl.Latest(ctx)
		if err != nil {
			return err
		}
		tx, err := snap.Begin(delta.OpMerge, delta.TxnOptions{Operation: "DELETE"})
		if err != nil {
			return err
		}
		for _, f := range snap.Files() {
			if f.PartitionValues[0].Value == "2024-01-02" {
				tx.Remove(true, f)
				break
			}
		}
		_, err = tx.Commit(ctx)
		return err
	},
	// An ingest appends five small files, one blind-append commit each.
	"append": func(ctx context.Context, tbl *delta.Table) error {
		_, err := table.WriteDemoData(ctx, tbl, table.DemoOptions{Files: 5, RowsPerFile: 100, Seed: 9}, nil)
		return err
	},
}

const (
	envHelper   = "DELTAKEEPER_OPTIMIZE_TEST_WRITER"
	envLocation = "DELTAKEEPER_OPTIMIZE_TEST_TABLE"
)

func TestMain(m *testing.M) {
	if w := os.Getenv(envHelper); w != "" {
		os.Exit(childWriter(w, os.Getenv(envLocation)))
	}
	os.Exit(m.Run())
}

func childWriter(name, location string) int {
	ctx := context.Background()
	store, err := storage.Open(ctx, location, storage.ConfigFromEnv())
	if err == nil {
		err = concurrentWriters[name](ctx, delta.NewTable(store))
	}
	if err != nil {
		fmt.Fprintf(os.Stderr, "writer %s: %v\n", name, err)
		return 1
	}
	return 0
}

// childProcess starts the named writer on the table in a new process of this test binary.
func childProcess(t *testing.T, name string, tbl *delta.Table, s3env []string) *exec.Cmd {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(append(os.Environ(), envHelper+"="+name, envLocation+"="+tbl.Location()), s3env...)
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &out
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if cmd.ProcessState == nil {
			_ = cmd.Process.Kill()
			_ = cmd.Wait()
		}
	})
	return cmd
}

func waitChild(t *testing.T, cmd *exec.Cmd) {
	t.Helper()
	if err := cmd.Wait(); err != nil {
		t.Fatalf("concurrent writer: %v: %s", err, cmd.Stdout)
	}
}

// concurrencyCases: what the concurrent writer does, and what our compaction must do about it.
var concurrencyCases = []struct {
	writer       string
	droppedDay   string // the partition whose bin must be dropped, "" for none
	replanned    bool   // the dropped bin's live files are re-planned and committed again
	rowsAppended int
}{
	// Blind appends never conflict with compaction: the commit is rebased onto them.
	{writer: "append", rowsAppended: 500},
	// A compaction of the same files wins: our bin of that partition is dropped, the rest commits;
	// none of its files is left to re-plan.
	{writer: "compact-first-day", droppedDay: "2024-01-01"},
	// A delete of an input wins: the bin that read it is dropped, the rest commits, and the bin's
	// other files are re-planned on the new snapshot and compacted in a second commit.
	{writer: "delete-a-second-day-file", droppedDay: "2024-01-02", replanned: true},
}

// TestOptimize_RetriesOnlyWhileInputsAreLive lets a concurrent writer commit between our rewrite and
// our commit — in this process on local disk, and from another process against the S3 server — and
// checks the outcome against the conflict rules and the rows against the state the writer left.
func TestOptimize_RetriesOnlyWhileInputsAreLive(t *testing.T) {
	for _, b := range backends {
		for _, c := range concurrencyCases {
			t.Run(b.name+"/"+c.writer, func(t *testing.T) {
				store := b.open(t, "orders")
				tbl := demoTable(t, store, 16, 100, true)
				var s3env []string
				if b.name == "s3" {
					s3env = s3Env(t, store)
				}
				var afterWriter []string
				calls := 0
				// The first progress call comes after the first bin is rewritten and before anything
				// is committed (one batch): the writer commits exactly there.
				progress := func(string) {
					if calls++; calls != 1 {
						return
					}
					if b.name == "s3" {
						waitChild(t, childProcess(t, c.writer, tbl, s3env))
					} else if err := concurrentWriters[c.writer](t.Context(), delta.NewTable(store)); err != nil {
						t.Fatal(err)
					}
					afterWriter = latestRows(t, tbl)
				}
				before := latestRows(t, tbl)
				rep, err := Run(t.Context(), tbl, Options{Parallelism: 2}, progress)
				if err != nil {
					t.Fatal(err)
				}
				sameRows(t, "after optimize", latestRows(t, tbl), afterWriter)
				if c.rowsAppended > 0 && len(afterWriter) != len(before)+c.rowsAppended {
					t.Fatalf("the writer left %d rows, want %d", len(afterWriter), len(before)+c.rowsAppended)
				}
				var dropped []string
				lost := 0
				for _, d := range rep.Dropped {
					dropped = append(dropped, d.Partition)
					lost += d.Files
				}
				if rep.Op.ConflictFiles != int64(lost) || (c.droppedDay != "") != (lost > 0) {
					t.Fatalf("conflictFiles = %d, want the %d files of the dropped bins", rep.Op.ConflictFiles, lost)
				}
				var want []string
				if c.droppedDay != "" {
					want = []string{"order_date=" + c.droppedDay}
				}
				commits, replans := 1, 0
				if c.replanned {
					commits, replans = 2, 1
				}
				if !slices.Equal(dropped, want) || rep.Op.Outcome != result.Succeeded || len(rep.Commits) != commits || rep.Replans != replans {
					t.Fatalf("dropped %v (want %v), %d commits (want %d), %d re-plans (want %d), op %+v",
						dropped, want, len(rep.Commits), commits, rep.Replans, replans, rep.Op)
				}
				if c.replanned {
					// Every live file of the re-planned day is in the compacted output now.
					if n := filesIn(latest(t, tbl), c.droppedDay); n != 1 {
						t.Fatalf("%s holds %d files after the re-planned compaction, want 1", c.droppedDay, n)
					}
					if !strings.Contains(rep.Op.Message, "re-planned 1 times") {
						t.Fatalf("message %q does not report the re-plan", rep.Op.Message)
					}
				}
				if o := orphans(t, tbl); len(o) > 0 {
					t.Fatalf("files of dropped bins were left behind: %v", o)
				}
			})
		}
	}
}

func filesIn(snap *delta.Snapshot, day string) int {
	n := 0
	for _, f := range snap.Files() {
		if f.PartitionValues[0].Value == day {
			n++
		}
	}
	return n
}

// TestOptimize_InputsRemovedOnEveryAttemptEndsWithinItsBounds deletes one input of the bin being
// compacted before each of its commits: the run re-plans at most its bound, commits nothing, says
// so, and leaves no file behind.
func TestOptimize_InputsRemovedOnEveryAttemptEndsWithinItsBounds(t *testing.T) {
	store := localStore(t)
	tbl := demoTable(t, store, 12, 100, false) // one bin of every file
	attempts := 0
	var afterWriter []string
	progress := func(msg string) {
		if !strings.HasPrefix(msg, "rewrote ") {
			return
		}
		// Another writer deletes one of the bin's files before it commits.
		attempts++
		snap := latest(t, tbl)
		tx, err := snap.Begin(delta.OpMerge, delta.TxnOptions{Operation: "DELETE"})
		if err != nil {
			t.Fatal(err)
		}
		tx.Remove(true, snap.Files()[0])
		if _, err := tx.Commit(t.Context()); err != nil {
			t.Fatal(err)
		}
		afterWriter = latestRows(t, tbl)
	}
	rep, err := Run(t.Context(), tbl, Options{Parallelism: 2}, progress)
	if err != nil {
		t.Fatal(err)
	}
	if attempts != 1+defaultMaxReplans || rep.Replans != defaultMaxReplans || len(rep.Commits) != 0 || rep.Op.Outcome != result.NothingToDo {
		t.Fatalf("%d attempts, %d re-plans, %d commits, op %+v; want %d attempts and nothing committed",
			attempts, rep.Replans, len(rep.Commits), rep.Op, 1+defaultMaxReplans)
	}
	if !strings.Contains(rep.Op.Message, fmt.Sprintf("not re-planned again after %d rounds", defaultMaxReplans)) {
		t.Fatalf("message %q does not say why the run stopped", rep.Op.Message)
	}
	sameRows(t, "after optimize", latestRows(t, tbl), afterWriter)
	if o := orphans(t, tbl); len(o) > 0 {
		t.Fatalf("files of abandoned attempts were left behind: %v", o)
	}
}

// TestOptimize_ConcurrentAppendsFromAnotherProcessLoseNoRows runs an ingest in another process
// throughout a compaction that commits every bin separately: every row of both survives exactly once.
func TestOptimize_ConcurrentAppendsFromAnotherProcessLoseNoRows(t *testing.T) {
	store := localStore(t)
	tbl := demoTable(t, store, 24, 100, true)
	before := latestRows(t, tbl)
	base := latest(t, tbl).Version()
	child := childProcess(t, "append", tbl, nil)
	calls := 0
	progress := func(string) {
		// Make sure the two really overlap: after our first commit, wait for the ingest's first.
		if calls++; calls != 2 {
			return
		}
		deadline := time.Now().Add(2 * time.Minute)
		for latest(t, tbl).Version() < base+3 {
			if time.Now().After(deadline) {
				t.Fatal("the concurrent ingest did not commit within 2 minutes")
			}
			time.Sleep(20 * time.Millisecond)
		}
	}
	rep, err := Run(t.Context(), tbl, Options{BatchSize: 1, Parallelism: 2}, progress)
	if err != nil {
		t.Fatal(err)
	}
	waitChild(t, child)
	if len(rep.Dropped) != 0 || len(rep.Commits) != len(rep.Plan.Bins) {
		t.Fatalf("blind appends made the compaction drop %d bins; %d commits for %d bins", len(rep.Dropped), len(rep.Commits), len(rep.Plan.Bins))
	}
	t.Logf("%d compaction commits rebased over %d concurrent commits", len(rep.Commits), rep.Rebased)
	after := latestRows(t, tbl)
	if len(after) != len(before)+500 {
		t.Fatalf("%d rows, want %d + 500 appended", len(after), len(before))
	}
	// Every earlier row is still there exactly once, and no order id appears twice.
	rest := slices.Clone(after)
	for _, r := range before {
		i, ok := slices.BinarySearch(rest, r)
		if !ok {
			t.Fatalf("row lost: %s", r)
		}
		rest = slices.Delete(rest, i, i+1)
	}
	ids := map[string]bool{}
	for _, r := range after {
		id, _, _ := strings.Cut(r, " | ")
		if ids[id] {
			t.Fatalf("order id %s appears twice", id)
		}
		ids[id] = true
	}
	if o := orphans(t, tbl); len(o) > 0 {
		t.Fatalf("orphaned files: %v", o)
	}
}

// s3Env is the AWS environment that lets a child process open the same S3 table.
func s3Env(t *testing.T, store storage.Store) []string {
	t.Helper()
	cfg := s3Configs[store.Location()]
	return []string{
		"AWS_ACCESS_KEY_ID=" + cfg.AccessKeyID, "AWS_SECRET_ACCESS_KEY=" + cfg.SecretAccessKey,
		"AWS_REGION=" + cfg.Region, "AWS_ENDPOINT_URL_S3=" + cfg.Endpoint,
		storage.EnvS3PathStyle + "=" + strconv.FormatBool(cfg.UsePathStyle),
	}
}
