package torture

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/delta"
	"github.com/deltakeeper/deltakeeper/worker/storage"
	"github.com/deltakeeper/deltakeeper/worker/table"
	"github.com/deltakeeper/deltakeeper/worker/types"
)

// The environment of a helper process (this test binary, re-executed).
const (
	envHelperRole     = "DELTAKEEPER_TORTURE_HELPER" // "append"
	envHelperTable    = "DELTAKEEPER_TORTURE_TABLE"
	envHelperAppender = "DELTAKEEPER_TORTURE_APPENDER"
	envHelperBatches  = "DELTAKEEPER_TORTURE_BATCHES"
	envHelperSeed     = "DELTAKEEPER_TORTURE_HELPER_SEED"
)

// batchID names one batch of one appender.
type batchID struct{ appender, seq int }

// batchRows are the rows of a batch: a pure function of the seed and the batch, so that the test
// knows every row each appender may have written. Ids are appender·10⁹ + seq·1000 + i.
func batchRows(seed uint64, b batchID) []types.Struct {
	rng := rand.New(rand.NewPCG(seed, uint64(b.appender)<<32|uint64(b.seq)))
	n := 10 + b.seq%23
	return rowsFor(rng, int64(b.appender+1)*1_000_000_000+int64(b.seq)*1000, n)
}

func batchIDs(seed uint64, b batchID) []int64 {
	rows := batchRows(seed, b)
	ids := make([]int64, len(rows))
	for i, r := range rows {
		ids[i] = r[0].(int64)
	}
	return ids
}

// runHelper is the body of a helper process; its exit code is the process's.
func runHelper(role string) int {
	if role != "append" {
		fmt.Fprintf(os.Stderr, "unknown helper role %q\n", role)
		return 2
	}
	appender, _ := strconv.Atoi(os.Getenv(envHelperAppender))
	batches, _ := strconv.Atoi(os.Getenv(envHelperBatches))
	seed, _ := strconv.ParseUint(os.Getenv(envHelperSeed), 10, 64)
	if err := appendBatches(context.Background(), os.Getenv(envHelperTable), appender, batches, seed, os.Stdout); err != nil {
		fmt.Fprintf(os.Stderr, "appender %d: %v\n", appender, err)
		return 1
	}
	return 0
}

// appendBatches is an independent writer: one blind append per batch, each on a fresh snapshot,
// retried (same rows) only when the commit certainly did not land. It reports "ok <seq>
// <version>" for every batch committed.
func appendBatches(ctx context.Context, location string, appender, batches int, seed uint64, report io.Writer) error {
	store, err := storage.Open(ctx, location, storage.ConfigFromEnv())
	if err != nil {
		return err
	}
	tbl := delta.NewTable(store)
	pace := rand.New(rand.NewPCG(seed, uint64(appender)))
	for seq := range batches {
		b := batchID{appender, seq}
		for attempt := 1; ; attempt++ {
			snap, err := tbl.Latest(ctx)
			if err != nil {
				return err
			}
			res, err := table.Append(ctx, snap, batchRows(seed, b), table.WriteOptions{})
			if err == nil {
				fmt.Fprintf(report, "ok %d %d\n", seq, res.Commit.Version)
				break
			}
			// A conflict (a concurrent metadata change) or lost races: not committed, files gone.
			if attempt < 20 && (errors.Is(err, delta.ErrConcurrentModification) || errors.Is(err, delta.ErrCommitRetriesExhausted)) {
				fmt.Fprintf(report, "retry %d %v\n", seq, strings.ReplaceAll(err.Error(), "\n", " "))
				continue
			}
			return fmt.Errorf("batch %d: %w", seq, err)
		}
		time.Sleep(time.Duration(pace.IntN(15)) * time.Millisecond)
	}
	return nil
}

// appenderProcess is a running helper process.
type appenderProcess struct {
	index int
	cmd   *exec.Cmd
	// committed maps each committed batch to the version its append reported.
	committed map[int]int64
	retries   int
	stderr    strings.Builder
	done      chan error
}

// startAppender runs appendBatches in a new process of this test binary.
func startAppender(s *site, index, batches int, seed uint64) (*appenderProcess, error) {
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(s.env(""), envHelperRole+"=append", envHelperTable+"="+s.location,
		envHelperAppender+"="+strconv.Itoa(index), envHelperBatches+"="+strconv.Itoa(batches),
		envHelperSeed+"="+strconv.FormatUint(seed, 10))
	a := &appenderProcess{index: index, cmd: cmd, committed: map[int]int64{}, done: make(chan error, 1)}
	cmd.Stderr = &a.stderr
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	go func() {
		sc := bufio.NewScanner(out)
		var perr error
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			switch {
			case len(f) == 3 && f[0] == "ok":
				seq, _ := strconv.Atoi(f[1])
				v, _ := strconv.ParseInt(f[2], 10, 64)
				if _, dup := a.committed[seq]; dup {
					perr = fmt.Errorf("appender %d reported batch %d committed twice", index, seq)
				}
				a.committed[seq] = v
			case len(f) >= 2 && f[0] == "retry":
				a.retries++
			}
		}
		err := cmd.Wait()
		if err != nil {
			err = fmt.Errorf("appender %d: %w: %s", index, err, tail(a.stderr.String(), 2000))
		}
		a.done <- errors.Join(perr, err)
	}()
	return a, nil
}
