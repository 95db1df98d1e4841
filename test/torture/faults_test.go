package torture

import (
	"errors"
	"fmt"
	"math/rand/v2"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3fault"
)

// faultMenu are the fault rules a run draws from. Each is a function of the run's random source,
// so a run replays from its seed.
var faultMenu = []struct {
	name  string
	rules func(rng *rand.Rand) []s3fault.Rule
}{
	{"throttling", func(rng *rand.Rand) []s3fault.Rule {
		return []s3fault.Rule{{Fault: s3fault.SlowDown, Probability: 0.1 + 0.2*rng.Float64(), Times: 1 + rng.IntN(4)}}
	}},
	{"429 without a code", func(rng *rand.Rand) []s3fault.Rule {
		return []s3fault.Rule{{Fault: s3fault.TooManyRequests, Probability: 0.2, Times: 1 + rng.IntN(2)}}
	}},
	{"500 on reads", func(rng *rand.Rand) []s3fault.Rule {
		return []s3fault.Rule{{Match: s3fault.Ops(s3fault.OpGet, s3fault.OpHead, s3fault.OpList), Fault: s3fault.InternalError,
			Probability: 0.2, Times: 1 + rng.IntN(3)}}
	}},
	{"connection resets", func(rng *rand.Rand) []s3fault.Rule {
		return []s3fault.Rule{{Fault: s3fault.ConnectionReset, Probability: 0.1, Times: 1 + rng.IntN(2)}}
	}},
	{"slow server", func(rng *rand.Rand) []s3fault.Rule {
		return []s3fault.Rule{{Fault: s3fault.Slow(time.Duration(10+rng.IntN(150)) * time.Millisecond), Probability: 0.3}}
	}},
	{"lost acknowledgement of a commit", func(rng *rand.Rand) []s3fault.Rule {
		return []s3fault.Rule{{Match: s3fault.CommitPuts(), Fault: s3fault.LostAcknowledgment, Skip: rng.IntN(2), Times: 1}}
	}},
	{"lost acknowledgement of a log write", func(rng *rand.Rand) []s3fault.Rule {
		return []s3fault.Rule{{Match: s3fault.LogPuts(), Fault: s3fault.LostAcknowledgment, Skip: rng.IntN(3), Times: 1}}
	}},
	{"500 after a commit was written", func(rng *rand.Rand) []s3fault.Rule {
		return []s3fault.Rule{{Match: s3fault.CommitPuts(), Fault: s3fault.InternalErrorAfter, Skip: rng.IntN(2), Times: 1}}
	}},
	{"500 after a write happened", func(rng *rand.Rand) []s3fault.Rule {
		return []s3fault.Rule{{Match: s3fault.Writes(), Fault: s3fault.InternalErrorAfter, Skip: rng.IntN(6), Times: 1}}
	}},
	{"lost acknowledgement of a delete", func(rng *rand.Rand) []s3fault.Rule {
		return []s3fault.Rule{{Match: s3fault.Ops(s3fault.OpDelete, s3fault.OpDeleteObjects), Fault: s3fault.LostAcknowledgment,
			Skip: rng.IntN(4), Times: 1}}
	}},
	// The ambiguous commit: written, every answer lost, and the log unreadable from then on, so the
	// committer cannot look it up.
	{"a commit written but every answer lost, and reading it back failing", func(*rand.Rand) []s3fault.Rule {
		var written atomic.Bool
		readLog := s3fault.All(s3fault.Ops(s3fault.OpGet, s3fault.OpHead, s3fault.OpList), s3fault.KeyContains("_delta_log/"))
		return []s3fault.Rule{
			{Match: s3fault.CommitPuts(), Fault: s3fault.InternalErrorAfter, OnInject: func(s3fault.Request) { written.Store(true) }},
			{Match: func(r s3fault.Request) bool { return written.Load() && readLog(r) }, Fault: s3fault.InternalError},
		}
	}},
	{"commits refused until the retries run out", func(rng *rand.Rand) []s3fault.Rule {
		return []s3fault.Rule{{Match: s3fault.CommitPuts(), Fault: s3fault.ServiceUnavailable}}
	}},
}

// drawFaults picks one to three rules from the menu.
func drawFaults(rng *rand.Rand) []s3fault.Rule {
	var rules []s3fault.Rule
	for _, i := range rng.Perm(len(faultMenu))[:1+rng.IntN(3)] {
		for _, r := range faultMenu[i].rules(rng) {
			r.Name = faultMenu[i].name
			rules = append(rules, r)
		}
	}
	return rules
}

// TestS3Faults runs every maintenance command through the fault proxy: each run succeeds with the
// table exact, or fails with a clear error and the table exact; then a clean run succeeds.
func TestS3Faults(t *testing.T) {
	for i, c := range crashCommands {
		runs := share(size.faultRuns, len(crashCommands), i, 1)
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			faultCell(t, c, runs)
		})
	}
}

func faultCell(t *testing.T, c crashCommand, runs int) {
	rng := rngOf(t)
	s := openS3(t, "t")
	f := newFixture(t, s, c.shape, rng)
	f.appendFiles(t, 3, 100)
	proxy := s3fault.Start(t, s.srv.Endpoint, seedOf(t))
	r := newRunner(s, proxy)
	failed, injected := 0, 0
	for run := range runs {
		c.prepare(t, f)
		before := mustState(t, f.observer, "before the run")
		rules := drawFaults(rng)
		attempts := 2 + rng.IntN(5)
		r.extraEnv = []string{"AWS_MAX_ATTEMPTS=" + strconv.Itoa(attempts)}
		firstInjection := len(proxy.Injections())
		out := r.run(c.steps(rng, s.location), killPlan{}, rng.Uint64(), rules...)
		r.extraEnv = nil
		inj := proxy.Injections()[firstInjection:]
		injected += len(inj)
		what := fmt.Sprintf("fault run %d with %d attempts per request and rules %v; injected %v:\n%s", run, attempts, rules, inj, out)
		after, err := f.latest(t.Context())
		if err != nil {
			t.Fatalf("after %s\n%v\n%s", what, err, replayHint(t))
		}
		if err := c.judgeRun(f, before, after, out.succeeded()); err != nil {
			t.Fatalf("after %s\nthe table changed: %v\n%s", what, err, replayHint(t))
		}
		if out.succeeded() {
			continue
		}
		failed++
		t.Logf("fault run %d (%v) failed with exit %d: %s", run, rules, out.code, tail(out.message(), 600))
		if err := clearFailure(out, s.location); err != nil {
			t.Fatalf("after %s\nthe failure is not clear: %v\n%s", what, err, replayHint(t))
		}
		verify(t, checkClearCommitError, ambiguousCommit(out))
		clean := r.run(c.steps(rng, s.location), killPlan{}, 0)
		mustSucceed(t, fmt.Sprintf("the clean run after %s", what), clean)
		final := mustState(t, f.observer, "after the clean run")
		if err := c.judgeRun(f, before, final, true); err != nil {
			t.Fatalf("the clean run after %s\nchanged the table: %v\n%s", what, err, replayHint(t))
		}
	}
	figures.add(func(fg *suiteFigures) {
		fg.faultRuns += runs
		fg.faultRunsFailed += failed
		fg.faultsInjected += injected
	})
	t.Logf("%d runs, %d failed cleanly, %d faults injected", runs, failed, injected)
	finalSweep(t, f, r)
}

// clearFailure checks a failed run's report: a documented exit code, a result document with a
// reason, and a message that names the table and is not a crash.
func clearFailure(out runOutcome, location string) error {
	var errs []error
	if out.code != 1 && out.code != 2 {
		errs = append(errs, fmt.Errorf("exit code %d, want 1 (failed) or 2 (refused)", out.code))
	}
	if len(out.results) == 0 {
		errs = append(errs, errors.New("no result document on stdout"))
	}
	for _, r := range out.results {
		if r.Outcome != "succeeded" && r.Outcome != "nothing_to_do" && r.Reason == "" {
			errs = append(errs, fmt.Errorf("result %s without a reason", r.Outcome))
		}
	}
	msg := out.message()
	bucketURI := location[:strings.Index(location[len("s3://"):], "/")+len("s3://")]
	switch {
	case msg == "":
		errs = append(errs, errors.New("no error message"))
	case !strings.Contains(msg, bucketURI):
		errs = append(errs, fmt.Errorf("the message does not name the table or its objects: %q", msg))
	}
	if strings.Contains(out.stderr, "panic:") || strings.Contains(out.stderr, "goroutine ") {
		errs = append(errs, errors.New("the process panicked"))
	}
	return errors.Join(errs...)
}

// ambiguousCommit reports a failure that leaves the user to find out whether a commit landed.
func ambiguousCommit(out runOutcome) error {
	msg := out.message()
	for _, s := range []string{"may or may not have been written", "FindCommit"} {
		if strings.Contains(msg, s) {
			return fmt.Errorf("the run reports an ambiguous commit: %q", tail(msg, 400))
		}
	}
	return nil
}
