package storage

import (
	"context"
	"fmt"
	"net/http"
	"sync/atomic"
)

// Azure's and Google's SDKs retry inside one call and do not say how many requests a call sent, but
// PutIfAbsent must know: only a call that sent more than one request can meet its own earlier write
// (a lost acknowledgement) when the server refuses it. countingTransport sits below the SDKs' retry
// loops and counts every request whose context carries a counter.

//
// It can also cap the attempts of a call: the GCS SDK retries a single-request upload until its
// context ends, ignoring its own attempt limit, which would hang a commit on a failing server forever.

type attemptCounterKey struct{}

// attemptCounter counts the requests of one call.
type attemptCounter struct {
	n          atomic.Int32
	limit      int32 // 0: no limit
	lastStatus atomic.Int32
}

// Load returns the number of requests sent so far.
func (c *attemptCounter) Load() int32 { return c.n.Load() }

// withAttemptCounter returns a context whose requests are counted in the returned counter; with
// limit > 0, requests beyond the limit fail with errAttemptsExhausted instead of being sent.
func withAttemptCounter(ctx context.Context, limit int) (context.Context, *attemptCounter) {
	c := &attemptCounter{limit: int32(limit)}
	return context.WithValue(ctx, attemptCounterKey{}, c), c
}

// errAttemptsExhausted ends a call whose attempts ran out; it carries the last HTTP status so that
// the error is classified like the server's own answer.
type errAttemptsExhausted struct {
	attempts, status int
}

func (e *errAttemptsExhausted) Error() string {
	return fmt.Sprintf("gave up after %d attempts; the last answer was HTTP %d %s", e.attempts, e.status, http.StatusText(e.status))
}

// countingTransport counts requests made under withAttemptCounter, then hands them to base.
type countingTransport struct{ base http.RoundTripper }

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	c, ok := r.Context().Value(attemptCounterKey{}).(*attemptCounter)
	if !ok {
		return t.base.RoundTrip(r)
	}
	if c.limit > 0 && c.n.Load() >= c.limit {
		if r.Body != nil {
			r.Body.Close()
		}
		return nil, &errAttemptsExhausted{attempts: int(c.n.Load()), status: int(c.lastStatus.Load())}
	}
	c.n.Add(1)
	resp, err := t.base.RoundTrip(r)
	if resp != nil {
		c.lastStatus.Store(int32(resp.StatusCode))
	}
	return resp, err
}

// newCloudHTTPClient is the HTTP client of the Azure and GCS stores: the default transport with room
// for a Parquet reader's concurrent ranged GETs to one host, under countingTransport.
func newCloudHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: countingTransport{base: tr}}
}
