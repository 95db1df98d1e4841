package storage_test

import (
	"fmt"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"sync"
	"sync/atomic"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// proxy is a reverse proxy in front of the test server that counts requests and can answer some of
// them itself, to simulate throttling, lost responses or a TLS front end.
type proxy struct {
	*httptest.Server
	forward   *httputil.ReverseProxy
	requests  atomic.Int64
	mu        sync.Mutex
	byMethod  map[string]int
	intercept interceptor // may be nil
}

// interceptor may answer request number n (1-based) itself, returning true, or let it through.
// It can pass a request on with p.forward, e.g. to let a write happen but lose its response.
type interceptor func(p *proxy, n int64, w http.ResponseWriter, r *http.Request) bool

func newProxy(t *testing.T, srv *s3server.Server, intercept interceptor) *proxy {
	p := newUnstartedProxy(t, srv, intercept)
	p.Start()
	return p
}

func newUnstartedProxy(t *testing.T, srv *s3server.Server, intercept interceptor) *proxy {
	return newUnstartedProxyTo(t, srv.Endpoint, intercept)
}

// newProxyTo starts a proxy in front of any HTTP server (the Azure and GCS emulators).
func newProxyTo(t *testing.T, endpoint string, intercept interceptor) *proxy {
	p := newUnstartedProxyTo(t, endpoint, intercept)
	p.Start()
	return p
}

func newUnstartedProxyTo(t *testing.T, endpoint string, intercept interceptor) *proxy {
	target, err := url.Parse(endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &proxy{byMethod: map[string]int{}, intercept: intercept}
	p.forward = &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // SigV4 signed the host the client talked to
	}}
	p.Server = httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		n := p.requests.Add(1)
		p.mu.Lock()
		p.byMethod[r.Method]++
		p.mu.Unlock()
		if p.intercept != nil && p.intercept(p, n, w, r) {
			return
		}
		p.forward.ServeHTTP(w, r)
	}))
	t.Cleanup(p.Close)
	return p
}

// count returns how many requests with method arrived ("" for all).
func (p *proxy) count(method string) int {
	if method == "" {
		return int(p.requests.Load())
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.byMethod[method]
}

// config points srv's client configuration at the proxy.
func (p *proxy) config(srv *s3server.Server) storage.S3Config {
	cfg := srv.S3Config()
	cfg.Endpoint = p.URL
	return cfg
}

// writeS3Error answers like S3 does.
func writeS3Error(w http.ResponseWriter, status int, code, message string) {
	w.Header().Set("Content-Type", "application/xml")
	w.WriteHeader(status)
	if code == "" {
		return
	}
	fmt.Fprintf(w, `<?xml version="1.0" encoding="UTF-8"?><Error><Code>%s</Code><Message>%s</Message><RequestId>test</RequestId></Error>`, code, message)
}
