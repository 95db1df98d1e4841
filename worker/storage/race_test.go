package storage_test

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Environment of the helper process that TestMain turns the test binary into.
const (
	envHelper     = "DELTAKEEPER_STORAGE_TEST_HELPER" // "put-if-absent", "abandon-write"
	envLocation   = "DELTAKEEPER_STORAGE_TEST_LOCATION"
	envWriterID   = "DELTAKEEPER_STORAGE_TEST_WRITER"
	envRounds     = "DELTAKEEPER_STORAGE_TEST_ROUNDS"
	roundInterval = 25 * time.Millisecond
)

func TestMain(m *testing.M) {
	switch os.Getenv(envHelper) {
	case "put-if-absent":
		os.Exit(putIfAbsentHelper())
	case "abandon-write":
		os.Exit(abandonWriteHelper())
	}
	os.Exit(m.Run())
}

// racePayload is what writer id stores for round r: distinct per writer and a few KiB, so a partial
// or mixed object could not pass for any writer's.
func racePayload(writer string, round int) []byte {
	head := fmt.Sprintf("writer=%s round=%d\n", writer, round)
	return append([]byte(head), randomBytes(uint64(round)<<32|uint64(len(writer))<<16|uint64(hashString(writer)), 4096)...)
}

func hashString(s string) uint16 {
	var h uint16
	for _, c := range []byte(s) {
		h = h*31 + uint16(c)
	}
	return h
}

func raceKey(round int) string { return fmt.Sprintf("_delta_log/%020d.json", round) }

// checkRace asserts one winner per round, ErrAlreadyExists for everybody else, and the winner's bytes.
func checkRace(t *testing.T, st storage.Store, rounds int, results map[int]map[string]error) {
	t.Helper()
	for r := range rounds {
		var winners []string
		for writer, err := range results[r] {
			switch {
			case err == nil:
				winners = append(winners, writer)
			case !errors.Is(err, storage.ErrAlreadyExists):
				t.Errorf("round %d: writer %s lost with %v, want ErrAlreadyExists", r, writer, err)
			}
		}
		if len(winners) != 1 {
			t.Errorf("round %d: %d winners %v among %d writers, want exactly 1", r, len(winners), winners, len(results[r]))
			continue
		}
		got := mustGet(t, st, raceKey(r))
		if want := racePayload(winners[0], r); string(got) != string(want) {
			t.Errorf("round %d: stored object is not the winner's (%s) bytes: starts %q", r, winners[0], got[:min(len(got), 30)])
		}
	}
}

func TestPutIfAbsent_ExactlyOneWinnerAmongGoroutines(t *testing.T) {
	const writers, rounds = 16, 8
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			results := map[int]map[string]error{}
			for r := range rounds {
				results[r] = map[string]error{}
				var mu sync.Mutex
				var wg sync.WaitGroup
				start := make(chan struct{})
				for w := range writers {
					id := "g" + strconv.Itoa(w)
					wg.Go(func() {
						<-start
						err := st.PutIfAbsent(ctx, raceKey(r), racePayload(id, r))
						mu.Lock()
						results[r][id] = err
						mu.Unlock()
					})
				}
				close(start)
				wg.Wait()
			}
			checkRace(t, st, rounds, results)
			if leftovers := b.leftovers(t, st); len(leftovers) > 0 {
				t.Fatalf("racing writers left temp files behind: %v", leftovers)
			}
		})
	}
}

// TestPutIfAbsent_ExactlyOneWinnerAcrossProcesses re-executes the test binary as independent writer
// processes (each with its own client, connection pool and file descriptors). All writers attempt
// round r at the same wall-clock instant, handed out by the parent, so every round is a real race.
func TestPutIfAbsent_ExactlyOneWinnerAcrossProcesses(t *testing.T) {
	const procs, rounds = 4, 8
	for _, b := range backends(t) {
		t.Run(b.name, func(t *testing.T) {
			st := b.open(t)
			type child struct {
				id    string
				cmd   *exec.Cmd
				stdin io.WriteCloser
				out   *bufio.Scanner
			}
			var children []*child
			for p := range procs {
				c := &child{id: "p" + strconv.Itoa(p)}
				c.cmd = exec.Command(os.Args[0], "-test.run=^$")
				c.cmd.Env = append(os.Environ(), b.env(st)...)
				c.cmd.Env = append(c.cmd.Env,
					envHelper+"=put-if-absent", envLocation+"="+st.Location(),
					envWriterID+"="+c.id, envRounds+"="+strconv.Itoa(rounds))
				c.cmd.Stderr = os.Stderr
				var err error
				if c.stdin, err = c.cmd.StdinPipe(); err != nil {
					t.Fatal(err)
				}
				stdout, err := c.cmd.StdoutPipe()
				if err != nil {
					t.Fatal(err)
				}
				c.out = bufio.NewScanner(stdout)
				if err := c.cmd.Start(); err != nil {
					t.Fatal(err)
				}
				t.Cleanup(func() { _ = c.cmd.Process.Kill(); _ = c.cmd.Wait() })
				children = append(children, c)
			}
			// Every child has opened its store before the clock starts.
			for _, c := range children {
				if !c.out.Scan() || c.out.Text() != "ready" {
					t.Fatalf("writer %s did not become ready: %q %v", c.id, c.out.Text(), c.out.Err())
				}
			}
			startAt := time.Now().Add(100 * time.Millisecond).UnixNano()
			for _, c := range children {
				fmt.Fprintf(c.stdin, "%d\n", startAt)
				c.stdin.Close()
			}
			results := map[int]map[string]error{}
			for r := range rounds {
				results[r] = map[string]error{}
			}
			for _, c := range children {
				for c.out.Scan() {
					var r int
					var outcome string
					if _, err := fmt.Sscanf(c.out.Text(), "round %d %s", &r, &outcome); err != nil {
						t.Fatalf("writer %s printed %q", c.id, c.out.Text())
					}
					switch outcome {
					case "won":
						results[r][c.id] = nil
					case "exists":
						results[r][c.id] = storage.ErrAlreadyExists
					default:
						results[r][c.id] = errors.New(strings.TrimPrefix(c.out.Text(), fmt.Sprintf("round %d ", r)))
					}
				}
				if err := c.cmd.Wait(); err != nil {
					t.Fatalf("writer %s: %v", c.id, err)
				}
			}
			for r := range rounds {
				if len(results[r]) != procs {
					t.Fatalf("round %d: %d of %d writers reported", r, len(results[r]), procs)
				}
			}
			checkRace(t, st, rounds, results)
		})
	}
}

// putIfAbsentHelper is the child side: open the store from the environment, say "ready", read the
// start time from stdin, then race for one key per round, printing "round <r> won|exists|<error>".
func putIfAbsentHelper() int {
	id, location := os.Getenv(envWriterID), os.Getenv(envLocation)
	rounds, err := strconv.Atoi(os.Getenv(envRounds))
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	st, err := storage.Open(ctx, location, storage.ConfigFromEnv())
	if err != nil {
		fmt.Fprintln(os.Stderr, "helper:", err)
		return 2
	}
	fmt.Println("ready")
	var startAt int64
	if _, err := fmt.Fscan(os.Stdin, &startAt); err != nil {
		fmt.Fprintln(os.Stderr, "helper: reading start time:", err)
		return 2
	}
	for r := range rounds {
		time.Sleep(time.Until(time.Unix(0, startAt).Add(time.Duration(r) * roundInterval)))
		err := st.PutIfAbsent(ctx, raceKey(r), racePayload(id, r))
		switch {
		case err == nil:
			fmt.Printf("round %d won\n", r)
		case errors.Is(err, storage.ErrAlreadyExists):
			fmt.Printf("round %d exists\n", r)
		default:
			fmt.Printf("round %d %v\n", r, err)
		}
	}
	return 0
}
