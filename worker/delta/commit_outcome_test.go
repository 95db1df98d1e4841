package delta

import (
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// faultProxy stands between the S3 client and the test server and misbehaves on one object key:
// it can lose the response of a PUT (after forwarding it, so the write happens, or before, so it
// does not) and fail reads of the key with 500.
type faultProxy struct {
	*httptest.Server
	mu sync.Mutex
	// key is the object key (path suffix) the faults apply to.
	key string
	// losePuts: PUTs of key whose response is lost; forwardLost says whether they reach the server.
	losePuts    int
	forwardLost bool
	// failReads: GETs and HEADs of key answered with 500 (-1: all of them).
	failReads int
	puts      int // PUTs of key seen
}

func newFaultProxy(t *testing.T, srv *s3server.Server) *faultProxy {
	target, err := url.Parse(srv.Endpoint)
	if err != nil {
		t.Fatal(err)
	}
	p := &faultProxy{}
	forward := &httputil.ReverseProxy{Rewrite: func(r *httputil.ProxyRequest) {
		r.SetURL(target)
		r.Out.Host = r.In.Host // SigV4 signed the host the client talked to
	}}
	p.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		p.mu.Lock()
		mine := p.key != "" && strings.HasSuffix(r.URL.Path, p.key)
		lose, fwd, failRead := false, p.forwardLost, false
		switch {
		case mine && r.Method == http.MethodPut:
			p.puts++
			if p.losePuts > 0 {
				p.losePuts--
				lose = true
			}
		case mine && (r.Method == http.MethodGet || r.Method == http.MethodHead):
			if p.failReads != 0 {
				p.failReads--
				failRead = true
			}
		}
		p.mu.Unlock()
		switch {
		case failRead:
			w.WriteHeader(http.StatusInternalServerError)
			_, _ = w.Write([]byte(`<?xml version="1.0" encoding="UTF-8"?><Error><Code>InternalError</Code><Message>injected</Message></Error>`))
		case lose:
			if fwd {
				forward.ServeHTTP(httptest.NewRecorder(), r) // the write happens; its answer goes nowhere
			}
			hj, ok := w.(http.Hijacker)
			if !ok {
				t.Error("the proxy cannot hijack connections")
				return
			}
			if conn, _, err := hj.Hijack(); err == nil {
				conn.Close() // the client sees the connection drop without an answer
			}
		default:
			forward.ServeHTTP(w, r)
		}
	}))
	t.Cleanup(p.Close)
	return p
}

func (p *faultProxy) set(f func(p *faultProxy)) {
	p.mu.Lock()
	defer p.mu.Unlock()
	f(p)
}

// proxiedTable creates a table on the test server and returns it as seen directly and through
// the proxy, by a client that does not retry (so that every fault reaches the commit logic).
func proxiedTable(t *testing.T) (direct, proxied *Table, p *faultProxy) {
	return proxiedTableAttempts(t, 1)
}

// proxiedTableAttempts is proxiedTable whose proxied store sends each request up to attempts times.
func proxiedTableAttempts(t *testing.T, attempts int) (direct, proxied *Table, p *faultProxy) {
	srv := s3server.Start(t)
	ctx := context.Background()
	p = newFaultProxy(t, srv)
	cfg := srv.S3Config()
	directStore, err := storage.Open(ctx, srv.Location("t"), storage.Config{S3: cfg})
	must(t, err)
	cfg.Endpoint, cfg.MaxAttempts = p.URL, attempts
	proxiedStore, err := storage.Open(ctx, srv.Location("t"), storage.Config{S3: cfg})
	must(t, err)
	direct = NewTable(directStore, WithClock(newFakeClock(testEpoch)))
	_, err = direct.Create(ctx, CreateOptions{Schema: testTable(t).schema})
	must(t, err)
	return direct, NewTable(proxiedStore, WithClock(newFakeClock(testEpoch))), p
}

func beginAppend(t *testing.T, tbl *Table) *Transaction {
	t.Helper()
	snap, err := tbl.Latest(context.Background())
	must(t, err)
	tx, err := snap.Begin(OpAppend, TxnOptions{Operation: "WRITE", NoAutoCheckpoint: true,
		Retry: RetryPolicy{Backoff: func(int) time.Duration { return 20 * time.Millisecond }}})
	must(t, err)
	tx.Add(dataFile("a.parquet", 1))
	return tx
}

// onlyCommit checks that version 1 exists once, holds tx, and that there is no version 2.
func onlyCommit(t *testing.T, direct *Table, tx *Transaction) {
	t.Helper()
	ctx := context.Background()
	snap, err := direct.Latest(ctx)
	must(t, err)
	if snap.Version() != 1 || snap.NumFiles() != 1 || snap.CommitInfo().TxnID != tx.TxnID() {
		t.Fatalf("latest v%d with %d files, txnId %s", snap.Version(), snap.NumFiles(), snap.CommitInfo().TxnID)
	}
}

func TestCommit_LostAcknowledgementIsSettledByReadingTheLogBack(t *testing.T) {
	ctx := context.Background()
	t.Run("the write landed, the next reads fail a while", func(t *testing.T) {
		direct, proxied, p := proxiedTable(t)
		tx := beginAppend(t, proxied)
		p.set(func(p *faultProxy) { p.key, p.losePuts, p.forwardLost, p.failReads = CommitKey(1), 1, true, 3 })
		res, err := tx.Commit(ctx)
		if err != nil || res.Version != 1 {
			t.Fatalf("commit: %v", err)
		}
		onlyCommit(t, direct, tx)
	})
	t.Run("the write never reached the store", func(t *testing.T) {
		direct, proxied, p := proxiedTable(t)
		tx := beginAppend(t, proxied)
		p.set(func(p *faultProxy) { p.key, p.losePuts, p.forwardLost = CommitKey(1), 2, false })
		res, err := tx.Commit(ctx)
		if err != nil || res.Version != 1 || res.Attempts != 3 {
			t.Fatalf("commit: %+v %v", res, err)
		}
		onlyCommit(t, direct, tx)
	})
	t.Run("no write ever reaches the store", func(t *testing.T) {
		direct, proxied, p := proxiedTable(t)
		tx := beginAppend(t, proxied)
		tx.opts.Retry.MaxAttempts = 3
		p.set(func(p *faultProxy) { p.key, p.losePuts, p.forwardLost = CommitKey(1), 1000, false })
		_, err := tx.Commit(ctx)
		var notWritten *CommitNotWrittenError
		if !errors.As(err, &notWritten) || !strings.Contains(err.Error(), "not committed") || notWritten.Attempts != 3 {
			t.Fatalf("err = %v", err)
		}
		if snap, err := direct.Latest(ctx); err != nil || snap.Version() != 0 {
			t.Fatalf("the table changed: %v", err)
		}
	})
	t.Run("the store's retry met the landed write and cannot read it back", func(t *testing.T) {
		// The SDK resends the lost PUT, which meets the object it wrote (412); reading it back fails.
		// The outcome is unknown: taking it for another writer's commit would make the caller delete
		// the files of its own landed commit.
		direct, proxied, p := proxiedTableAttempts(t, 2)
		tx := beginAppend(t, proxied)
		p.set(func(p *faultProxy) { p.key, p.losePuts, p.forwardLost, p.failReads = CommitKey(1), 1, true, -1 })
		_, err := tx.Commit(ctx)
		var unknown *CommitOutcomeUnknownError
		if !errors.As(err, &unknown) || unknown.Version != 1 {
			t.Fatalf("err = %v, want the outcome unknown", err)
		}
		if p.puts != 2 {
			t.Fatalf("%d PUTs of the commit, want the lost one and the SDK's retry", p.puts)
		}
		onlyCommit(t, direct, tx)
	})
	t.Run("the write landed and the store cannot be read", func(t *testing.T) {
		direct, proxied, p := proxiedTable(t)
		tx := beginAppend(t, proxied)
		p.set(func(p *faultProxy) { p.key, p.losePuts, p.forwardLost, p.failReads = CommitKey(1), 1, true, -1 })
		_, err := tx.Commit(ctx)
		var unknown *CommitOutcomeUnknownError
		if !errors.As(err, &unknown) || unknown.TxnID != tx.TxnID() || unknown.Version != 1 {
			t.Fatalf("err = %v", err)
		}
		msg := err.Error()
		for _, want := range []string{"answer was lost", "could not be read back", "txnId " + tx.TxnID(), "add its rows twice"} {
			if !strings.Contains(msg, want) {
				t.Errorf("message lacks %q: %s", want, msg)
			}
		}
		if strings.Contains(msg, "FindCommit") {
			t.Errorf("the message names an internal function: %s", msg)
		}
		if p.puts != 1 {
			t.Fatalf("%d PUTs of the commit: an ambiguous commit must not be blindly rewritten", p.puts)
		}
		onlyCommit(t, direct, tx) // it did land, once
	})
}
