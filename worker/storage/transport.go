package storage

import (
	"context"
	"net/http"
	"sync/atomic"
)

// Azure's and Google's SDKs retry inside one call and do not say how many requests a call sent, but
// PutIfAbsent must know: only a call that sent more than one request can meet its own earlier write
// (a lost acknowledgement) when the server refuses it. countingTransport sits below the SDKs' retry
// loops and counts every request whose context carries a counter.

type attemptCounterKey struct{}

// withAttemptCounter returns a context whose requests are counted in the returned counter.
func withAttemptCounter(ctx context.Context) (context.Context, *atomic.Int32) {
	n := new(atomic.Int32)
	return context.WithValue(ctx, attemptCounterKey{}, n), n
}

// countingTransport counts requests made under withAttemptCounter, then hands them to base.
type countingTransport struct{ base http.RoundTripper }

func (t countingTransport) RoundTrip(r *http.Request) (*http.Response, error) {
	if n, ok := r.Context().Value(attemptCounterKey{}).(*atomic.Int32); ok {
		n.Add(1)
	}
	return t.base.RoundTrip(r)
}

// newCloudHTTPClient is the HTTP client of the Azure and GCS stores: the default transport with room
// for a Parquet reader's concurrent ranged GETs to one host, under countingTransport.
func newCloudHTTPClient() *http.Client {
	tr := http.DefaultTransport.(*http.Transport).Clone()
	tr.MaxIdleConnsPerHost = 64
	return &http.Client{Transport: countingTransport{base: tr}}
}
