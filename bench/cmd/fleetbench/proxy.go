package main

import (
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/url"
	"sync"

	"k8s.io/client-go/rest"
)

// proxy sits between the manager and the API server and counts the manager's requests by verb (WATCH for
// watches), so that the figures are the manager's own, not the Job controller's or the benchmark's.
type proxy struct {
	srv    *http.Server
	addr   string
	mu     sync.Mutex
	counts counts
}

type counts map[string]int

func (c counts) total() int {
	n := 0
	for _, v := range c {
		n += v
	}
	return n
}

func (c counts) minus(o counts) counts {
	out := counts{}
	for k, v := range c {
		if d := v - o[k]; d != 0 {
			out[k] = d
		}
	}
	return out
}

func startProxy(cfg *rest.Config) (*proxy, error) {
	target, err := url.Parse(cfg.Host)
	if err != nil {
		return nil, err
	}
	transport, err := rest.TransportFor(cfg)
	if err != nil {
		return nil, fmt.Errorf("build the API server transport: %w", err)
	}
	p := &proxy{counts: counts{}}
	rp := httputil.NewSingleHostReverseProxy(target)
	rp.Transport = transport
	rp.FlushInterval = -1 // watches stream
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	p.addr = l.Addr().String()
	p.srv = &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		verb := r.Method
		if r.URL.Query().Get("watch") == "true" {
			verb = "WATCH"
		}
		p.mu.Lock()
		p.counts[verb]++
		p.mu.Unlock()
		rp.ServeHTTP(w, r)
	})}
	go func() { _ = p.srv.Serve(l) }()
	return p, nil
}

func (p *proxy) snapshot() counts {
	p.mu.Lock()
	defer p.mu.Unlock()
	out := counts{}
	for k, v := range p.counts {
		out[k] = v
	}
	return out
}

func (p *proxy) close() { _ = p.srv.Close() }

// kubeconfig points a client at the proxy (plain HTTP on loopback; the proxy authenticates upstream).
func (p *proxy) kubeconfig() []byte {
	return fmt.Appendf(nil, `apiVersion: v1
kind: Config
clusters:
- name: bench
  cluster: {server: "http://%s"}
users:
- name: bench
  user: {}
contexts:
- name: bench
  context: {cluster: bench, user: bench}
current-context: bench
`, p.addr)
}
