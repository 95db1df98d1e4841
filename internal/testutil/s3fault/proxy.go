// Package s3fault is an HTTP proxy in front of an S3 endpoint (normally the project's test server,
// internal/testutil/s3server) that injects the failures real object stores produce: throttling and
// server errors (503 SlowDown, 500 InternalError, 429), connection resets, delays, silent servers,
// lost acknowledgements (the server completes the request, the client never hears) and errors after
// the fact (the server completes the request, the client is told it failed).
//
// Which request gets which fault is decided by rules: a matcher (which requests: commits, log puts,
// reads…), a fault, and when among the matching requests (skip the first n, at most m times, with a
// probability drawn from a seeded source). A run is reproducible from its rules and seed as long as
// the client sends its requests in the same order; the injection log (Injections) says what was done
// to which request, for failure messages. Rules can be swapped between runs, so one proxy serves a
// whole suite. Rule.OnInject is also the hook for a harness that wants to act at a precise request,
// e.g. kill the client process at its k-th request.
//
// The proxy speaks plain HTTP/1.1 and forwards everything byte for byte (the Host header too, which
// SigV4 signs), so nothing but the endpoint changes for the client. Error bodies are S3's XML; the
// rest is protocol-agnostic, which is what lets other stores' suites reuse it later.
package s3fault

import (
	"context"
	"fmt"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// Rule injects Fault into some of the requests Match selects.
type Rule struct {
	// Name labels the rule in the injection log; "" uses the fault's description.
	Name string
	// Match selects requests; nil selects every request.
	Match Matcher
	Fault Fault
	// Skip lets the first Skip matching requests through untouched.
	Skip int
	// Times bounds the injections; 0 means no bound.
	Times int
	// Probability is the chance that an eligible request is injected, drawn from the proxy's seeded
	// source; 0 means always.
	Probability float64
	// OnInject is called, synchronously and before the fault is applied, for every request the rule
	// injects.
	OnInject func(Request)
}

func (r Rule) String() string {
	var b strings.Builder
	b.WriteString(r.label())
	if r.Skip > 0 {
		fmt.Fprintf(&b, " after %d", r.Skip)
	}
	if r.Times > 0 {
		fmt.Fprintf(&b, " x%d", r.Times)
	}
	if r.Probability > 0 {
		fmt.Fprintf(&b, " p=%.2f", r.Probability)
	}
	return b.String()
}

func (r Rule) label() string {
	if r.Name != "" {
		return r.Name
	}
	return r.Fault.String()
}

// Injection records one injected fault.
type Injection struct {
	N      int64 // the request's arrival number
	Rule   string
	Fault  Fault
	Method string
	Op     Op
	Key    string
}

func (i Injection) String() string {
	return fmt.Sprintf("#%d %s %s %s: %s", i.N, i.Method, i.Op, i.Key, i.Rule)
}

// ruleState is a rule with its counters.
type ruleState struct {
	Rule
	matched, injected int
}

// Proxy is a running fault-injecting proxy.
type Proxy struct {
	// URL is the proxy's endpoint, to use instead of the server's.
	URL string

	server   *httptest.Server
	forward  *httputil.ReverseProxy
	closing  chan struct{}
	requests atomic.Int64
	inflight atomic.Int64

	mu         sync.Mutex
	rules      []*ruleState
	rng        *rand.Rand
	injections []Injection
}

// Start runs a proxy to upstream (e.g. s3server.Server.Endpoint) with rules and seed, and closes it
// when the test ends.
func Start(t testing.TB, upstream string, seed uint64, rules ...Rule) *Proxy {
	t.Helper()
	target, err := url.Parse(upstream)
	if err != nil || target.Host == "" {
		t.Fatalf("s3fault: upstream %q is not a URL with a host: %v", upstream, err)
	}
	p := &Proxy{closing: make(chan struct{})}
	p.forward = &httputil.ReverseProxy{
		Rewrite: func(r *httputil.ProxyRequest) {
			r.SetURL(target)
			r.Out.Host = r.In.Host // SigV4 signed the host the client talked to
		},
		// A forwarding failure (the server went away) is a 502, which S3 clients retry like a 5xx.
		ErrorHandler: func(w http.ResponseWriter, _ *http.Request, err error) {
			writeS3Error(w, http.StatusBadGateway, "BadGateway")
		},
	}
	p.SetRules(seed, rules...)
	p.server = httptest.NewServer(http.HandlerFunc(p.serve))
	p.URL = p.server.URL
	t.Cleanup(p.Close)
	return p
}

// Close stops the proxy, releasing requests held by Drop.
func (p *Proxy) Close() {
	select {
	case <-p.closing:
		return
	default:
		close(p.closing)
	}
	p.server.CloseClientConnections()
	p.server.Close()
}

// SetRules replaces the rules (their counters start at zero) and reseeds the random source; the
// request numbering and the injection log go on.
func (p *Proxy) SetRules(seed uint64, rules ...Rule) {
	p.mu.Lock()
	defer p.mu.Unlock()
	p.rules = p.rules[:0]
	for _, r := range rules {
		p.rules = append(p.rules, &ruleState{Rule: r})
	}
	p.rng = rand.New(rand.NewPCG(seed, seed^0x9e3779b97f4a7c15))
}

// Requests is the number of requests received so far.
func (p *Proxy) Requests() int64 { return p.requests.Load() }

// Injections returns the injection log since the proxy started, oldest first.
func (p *Proxy) Injections() []Injection {
	p.mu.Lock()
	defer p.mu.Unlock()
	return append([]Injection(nil), p.injections...)
}

// WaitIdle waits until no request is being handled: after a client was killed, the requests it
// left in flight have been completed or refused by the server.
func (p *Proxy) WaitIdle(ctx context.Context) error {
	for p.inflight.Load() > 0 {
		select {
		case <-ctx.Done():
			return fmt.Errorf("s3fault: %d requests still in flight: %w", p.inflight.Load(), ctx.Err())
		case <-time.After(5 * time.Millisecond):
		}
	}
	return nil
}

func (p *Proxy) serve(w http.ResponseWriter, r *http.Request) {
	p.inflight.Add(1)
	defer p.inflight.Add(-1)
	req := newRequest(p.requests.Add(1), r)
	rule, ok := p.pick(req)
	if !ok {
		rule.Fault = Fault{Kind: Pass}
	} else if rule.OnInject != nil {
		rule.OnInject(req)
	}
	p.apply(rule.Fault, w, r)
}

// pick returns the first rule that injects into req, updating the counters and the log. A request
// gets at most one fault.
func (p *Proxy) pick(req Request) (Rule, bool) {
	p.mu.Lock()
	defer p.mu.Unlock()
	for _, rs := range p.rules {
		if rs.Match != nil && !rs.Match(req) {
			continue
		}
		rs.matched++
		if rs.matched <= rs.Skip || (rs.Times > 0 && rs.injected >= rs.Times) {
			continue
		}
		if rs.Probability > 0 && p.rng.Float64() >= rs.Probability {
			continue
		}
		rs.injected++
		p.injections = append(p.injections, Injection{N: req.N, Rule: rs.label(), Fault: rs.Fault,
			Method: req.Method, Op: req.Op, Key: req.Key})
		return rs.Rule, true
	}
	return Rule{}, false
}
