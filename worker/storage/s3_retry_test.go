package storage_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/s3server"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// failFirst answers the first k requests with status/code and lets the rest through.
func failFirst(k int64, status int, code string) interceptor {
	return func(_ *proxy, n int64, w http.ResponseWriter, r *http.Request) bool {
		if n > k {
			return false
		}
		writeS3Error(w, status, code, "injected by the test")
		return true
	}
}

func openS3(t *testing.T, srv *s3server.Server, cfg storage.S3Config, prefix string) storage.Store {
	t.Helper()
	st, err := storage.Open(ctx, srv.Location(prefix), storage.Config{S3: cfg})
	if err != nil {
		t.Fatal(err)
	}
	return st
}

func TestS3_RetriesThrottlingAndServerErrors(t *testing.T) {
	srv := s3server.Start(t)
	for _, tc := range []struct {
		name   string
		k      int64
		status int
		code   string
	}{
		{"503 SlowDown", 3, http.StatusServiceUnavailable, "SlowDown"},
		{"429 without an error code", 2, http.StatusTooManyRequests, ""},
		{"500 InternalError", 2, http.StatusInternalServerError, "InternalError"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			p := newProxy(t, srv, failFirst(tc.k, tc.status, tc.code))
			cfg := p.config(srv)
			cfg.MaxAttempts = int(tc.k) + 1
			st := openS3(t, srv, cfg, "retry")
			key := "_delta_log/" + strings.ReplaceAll(tc.name, " ", "-") + ".json"
			if err := st.PutIfAbsent(ctx, key, []byte("commit")); err != nil {
				t.Fatalf("PutIfAbsent through %d injected failures: %v", tc.k, err)
			}
			if got := p.count(""); got != int(tc.k)+1 {
				t.Errorf("%d requests reached the proxy, want %d failed + 1", got, tc.k)
			}
			if got := mustGet(t, st, key); string(got) != "commit" {
				t.Fatalf("stored %q", got)
			}
		})
	}
}

func TestS3_GivesUpWithClearErrorWhenAttemptsRunOut(t *testing.T) {
	srv := s3server.Start(t)
	p := newProxy(t, srv, failFirst(1000, http.StatusServiceUnavailable, "SlowDown"))
	for _, attempts := range []int{1, 3} {
		cfg := p.config(srv)
		cfg.MaxAttempts = attempts
		st := openS3(t, srv, cfg, "giveup")
		before := p.count("")
		err := st.PutIfAbsent(ctx, "k", []byte("x"))
		if err == nil || errors.Is(err, storage.ErrAlreadyExists) {
			t.Fatalf("MaxAttempts %d: err = %v, want a throttling error", attempts, err)
		}
		for _, want := range []string{"throttling or failing", "raise the S3 max attempts", "SlowDown"} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("MaxAttempts %d: error %q does not mention %q", attempts, err, want)
			}
		}
		if got := p.count("") - before; got != attempts {
			t.Errorf("MaxAttempts %d: %d requests sent", attempts, got)
		}
	}
}

// A conditional write whose response is lost and that is then retried meets its own object: the
// retry gets 412. The store must recognise its own bytes and report success, or a Delta committer
// would believe it lost a commit that is in fact in the log.
func TestS3PutIfAbsent_RetryAfterLostResponseRecognisesOwnWrite(t *testing.T) {
	srv := s3server.Start(t)
	p := newProxy(t, srv, func(p *proxy, n int64, w http.ResponseWriter, r *http.Request) bool {
		if n != 1 {
			return false
		}
		p.forward.ServeHTTP(httptest.NewRecorder(), r)                              // the write happens ...
		writeS3Error(w, http.StatusServiceUnavailable, "SlowDown", "response lost") // ... the answer is lost
		return true
	})
	st := openS3(t, srv, p.config(srv), "lost")
	if err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("mine")); err != nil {
		t.Fatalf("PutIfAbsent whose first response was lost: %v, want success", err)
	}
	if p.count(http.MethodPut) != 2 {
		t.Fatalf("%d PUTs, want the lost one and its retry", p.count(http.MethodPut))
	}
	// Somebody else's object found by a retried request is still a lost race.
	retrying := newProxy(t, srv, failFirst(1, http.StatusServiceUnavailable, "SlowDown"))
	other := openS3(t, srv, retrying.config(srv), "lost")
	if err := other.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("other")); !errors.Is(err, storage.ErrAlreadyExists) {
		t.Fatalf("retried PutIfAbsent over another writer's object: %v, want ErrAlreadyExists", err)
	}
	if retrying.count(http.MethodPut) != 2 {
		t.Fatalf("%d PUTs, want a throttled one and its retry", retrying.count(http.MethodPut))
	}
	if got := mustGet(t, st, "_delta_log/00000000000000000000.json"); !bytes.Equal(got, []byte("mine")) {
		t.Fatalf("stored %q", got)
	}
}

func TestS3PutIfAbsent_ConditionalRequestConflictIsAlreadyExists(t *testing.T) {
	srv := s3server.Start(t)
	p := newProxy(t, srv, failFirst(1, http.StatusConflict, "ConditionalRequestConflict"))
	st := openS3(t, srv, p.config(srv), "conflict")
	err := st.PutIfAbsent(ctx, "k", []byte("x"))
	if !errors.Is(err, storage.ErrAlreadyExists) {
		t.Fatalf("409 ConditionalRequestConflict: err = %v, want ErrAlreadyExists", err)
	}
}

// The same lost answer, but the object cannot be read back: whose it is is unknown. Reporting
// ErrAlreadyExists would tell a Delta committer that another writer won, and it would delete the files
// of what may be its own landed commit (seen under fault injection: a compaction's commit landed, the
// store said "exists", the read-back failed, and the outputs were deleted under the log).
func TestS3PutIfAbsent_RetryAfterLostResponseWithUnreadableObjectIsNotAlreadyExists(t *testing.T) {
	srv := s3server.Start(t)
	p := newProxy(t, srv, func(p *proxy, n int64, w http.ResponseWriter, r *http.Request) bool {
		switch {
		case n == 1:
			p.forward.ServeHTTP(httptest.NewRecorder(), r)
			writeS3Error(w, http.StatusServiceUnavailable, "SlowDown", "response lost")
			return true
		case r.Method == http.MethodGet || r.Method == http.MethodHead:
			writeS3Error(w, http.StatusInternalServerError, "InternalError", "reads fail")
			return true
		}
		return false
	})
	cfg := p.config(srv)
	cfg.MaxAttempts = 2
	st := openS3(t, srv, cfg, "unreadable")
	err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("mine"))
	if err == nil || errors.Is(err, storage.ErrAlreadyExists) {
		t.Fatalf("PutIfAbsent whose own write cannot be read back: %v, want an error that is not ErrAlreadyExists", err)
	}
	if !strings.Contains(err.Error(), "reading the object back") {
		t.Errorf("error %q does not say the read-back failed", err)
	}
}
