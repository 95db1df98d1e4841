package torture

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"os/exec"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3fault"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// runTimeout bounds one CLI run: a run that hangs is a finding, not a reason to stall the suite.
const runTimeout = 3 * time.Minute

// killPlan says when to SIGKILL a run: a delay after it starts, or (through a proxy) exactly when
// its n-th request arrives — forwarded to the server or not. The zero plan lets the run finish.
type killPlan struct {
	after   time.Duration
	request int64
	forward bool
}

func (p killPlan) String() string {
	switch {
	case p.after > 0:
		return fmt.Sprintf("SIGKILL %s after the start", p.after)
	case p.request > 0 && p.forward:
		return fmt.Sprintf("SIGKILL at request #%d, which then reaches the server", p.request)
	case p.request > 0:
		return fmt.Sprintf("SIGKILL at request #%d, which never reaches the server", p.request)
	}
	return "no kill"
}

// runOutcome is what one run (one or more CLI steps) did.
type runOutcome struct {
	argv     [][]string
	code     int  // the last step's exit code
	killed   bool // a step died of the SIGKILL
	killedAt string
	took     time.Duration
	requests int64 // through the proxy
	stdout   string
	stderr   string
	results  []*result.Result // one per step that printed one
}

func (o runOutcome) String() string {
	var argv []string
	for _, a := range o.argv {
		argv = append(argv, "deltakeeper "+strings.Join(a, " "))
	}
	s := fmt.Sprintf("%s: exit %d after %s", strings.Join(argv, " && "), o.code, o.took.Round(time.Millisecond))
	if o.killed {
		s += ", killed " + o.killedAt
	}
	return s + fmt.Sprintf("\nstdout: %s\nstderr: %s", tail(o.stdout, 1500), tail(o.stderr, 1500))
}

// succeeded reports a run that completed with success or nothing to do (exit 0 or 3).
func (o runOutcome) succeeded() bool { return !o.killed && (o.code == 0 || o.code == 3) }

// message is the error the run reported, from its result documents or its stderr.
func (o runOutcome) message() string {
	var msgs []string
	for _, r := range o.results {
		if r.Message != "" {
			msgs = append(msgs, r.Message)
		}
	}
	if len(msgs) == 0 {
		return strings.TrimSpace(o.stderr)
	}
	return strings.Join(msgs, "; ")
}

func tail(s string, n int) string {
	s = strings.TrimSpace(s)
	if len(s) <= n {
		return s
	}
	return "…" + s[len(s)-n:]
}

// runner runs the CLI on one site, through proxy when set (S3), and kills it as planned.
type runner struct {
	site  *site
	proxy *s3fault.Proxy
	// extraEnv is added to the environment of the next runs (AWS_MAX_ATTEMPTS).
	extraEnv []string

	mu   sync.Mutex
	cur  *os.Process
	note string // where the kill landed
	// gen counts the runs: a kill meant for one run (a timer that fired as its run ended, a fault rule
	// still installed) must never land on the next run's process.
	gen uint64
}

func newRunner(s *site, proxy *s3fault.Proxy) *runner { return &runner{site: s, proxy: proxy} }

// kill SIGKILLs the running step of run gen, noting where; between steps, or once run gen has
// ended, it does nothing (the kill is lost, and the run does not count as killed).
func (r *runner) kill(gen uint64, where string) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.gen == gen && r.cur != nil && r.note == "" {
		r.note = where
		_ = r.cur.Kill()
	}
}

// run runs the steps in order (args after the program name) with the rules on the proxy plus the
// kill plan's, stopping after a killed or failed step.
func (r *runner) run(steps [][]string, plan killPlan, seed uint64, rules ...s3fault.Rule) runOutcome {
	ctx, cancel := context.WithTimeout(context.Background(), runTimeout)
	defer cancel()
	r.mu.Lock()
	r.gen++
	gen := r.gen
	r.mu.Unlock()
	endpoint := ""
	var base int64
	if r.proxy != nil {
		endpoint = r.proxy.URL
		base = r.proxy.Requests()
		if plan.request > 0 {
			fault := s3fault.Fault{Kind: s3fault.Reset}
			if plan.forward {
				fault = s3fault.Fault{Kind: s3fault.Pass}
			}
			n := base + plan.request
			rules = append([]s3fault.Rule{{Name: "kill", Match: func(q s3fault.Request) bool { return q.N == n }, Fault: fault,
				OnInject: func(q s3fault.Request) {
					r.kill(gen, fmt.Sprintf("at request #%d (%s %s %s)", plan.request, q.Method, q.Op, q.Key))
				}}}, rules...)
		}
		r.proxy.SetRules(seed, rules...)
	}
	r.mu.Lock()
	r.note = ""
	r.mu.Unlock()
	out := runOutcome{argv: steps}
	start := time.Now()
	var timer *time.Timer
	if plan.after > 0 {
		timer = time.AfterFunc(plan.after, func() { r.kill(gen, fmt.Sprintf("%s after the start", plan.after)) })
		defer timer.Stop()
	}
	var stdout, stderr bytes.Buffer
	for i, args := range steps {
		cmd := r.site.cli(ctx, endpoint, args...)
		cmd.Env = append(cmd.Env, r.extraEnv...)
		var so bytes.Buffer
		cmd.Stdout, cmd.Stderr = &so, &stderr
		r.mu.Lock()
		if err := cmd.Start(); err != nil {
			r.mu.Unlock()
			out.code, out.stderr = -1, err.Error()
			return out
		}
		r.cur = cmd.Process
		r.mu.Unlock()
		err := cmd.Wait()
		r.mu.Lock()
		r.cur = nil
		r.mu.Unlock()
		stdout.Write(so.Bytes())
		if res, derr := result.Decode(lastLine(so.Bytes())); derr == nil {
			out.results = append(out.results, res)
		}
		out.code = cmd.ProcessState.ExitCode()
		var ee *exec.ExitError
		if errors.As(err, &ee) {
			if ws, ok := ee.Sys().(syscall.WaitStatus); ok && ws.Signaled() && ws.Signal() == syscall.SIGKILL {
				if ctx.Err() != nil {
					out.stderr = fmt.Sprintf("step %d did not finish within %s and was stopped", i+1, runTimeout)
					out.code = -1
					break
				}
				out.killed = true
				r.mu.Lock()
				out.killedAt = fmt.Sprintf("%s, during step %d (%s)", r.note, i+1, args[0])
				r.mu.Unlock()
				break
			}
		} else if err != nil {
			out.code = -1
			stderr.WriteString(err.Error())
		}
		if out.code != 0 && out.code != 3 {
			break
		}
	}
	out.took = time.Since(start)
	if timer != nil {
		timer.Stop()
	}
	if r.proxy != nil {
		// A killed client may leave requests in flight: let the server finish them before anyone
		// looks at the table.
		wctx, wcancel := context.WithTimeout(context.Background(), time.Minute)
		if err := r.proxy.WaitIdle(wctx); err != nil {
			stderr.WriteString("\n" + err.Error())
		}
		wcancel()
		out.requests = r.proxy.Requests() - base
		r.proxy.SetRules(seed) // nothing injected between runs
	}
	out.stdout, out.stderr = stdout.String(), out.stderr+stderr.String()
	return out
}

func lastLine(b []byte) []byte {
	b = bytes.TrimSpace(b)
	if i := bytes.LastIndexByte(b, '\n'); i >= 0 {
		return b[i+1:]
	}
	return b
}

// estimate tracks how long, and how many requests, a complete run of a command takes, to spread
// the kill moments over it.
type estimate struct {
	took     time.Duration
	requests int64
}

func (e *estimate) update(o runOutcome) {
	if o.killed || !o.succeeded() {
		return
	}
	e.took = max(o.took, 50*time.Millisecond)
	if o.requests > 0 {
		e.requests = o.requests
	}
}

// pick draws a kill moment: uniform over the expected run (with some margin past its end, which
// lets the harness notice when the estimate is off), or on S3 half the time at a request.
func (e estimate) pick(rng *rand.Rand, viaProxy bool) killPlan {
	if viaProxy && e.requests > 0 && rng.IntN(2) == 0 {
		return killPlan{request: 1 + rng.Int64N(e.requests), forward: rng.IntN(2) == 0}
	}
	return killPlan{after: time.Duration(1 + rng.Int64N(int64(e.took)*11/10))}
}

// mustSucceed fails the test unless the run completed with success or nothing to do.
func mustSucceed(t testing.TB, what string, o runOutcome) {
	t.Helper()
	if !o.succeeded() {
		t.Fatalf("%s did not succeed: %s\n%s", what, o, replayHint(t))
	}
}
