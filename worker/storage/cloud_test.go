package storage_test

import (
	"bytes"
	"errors"
	"net/http"
	"net/http/httptest"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/internal/testutil/azurite"
	"github.com/deltakeeper/deltakeeper/internal/testutil/gcsserver"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// Tests of the Azure and GCS stores beyond the conformance suite: what the emulators must honour for
// the stores to be atomic, lost acknowledgements, and pinned reads.

// cloudServer is one emulator with a way to open a store through an optional proxy.
type cloudServer struct {
	name string
	// base is the server's URL without a path, for a proxy in front of it.
	base string
	// open opens a store on prefix, talking to endpoint (base, or a proxy's URL).
	open func(t *testing.T, endpoint, prefix string) storage.Store
}

func cloudServers(t *testing.T) []cloudServer {
	az := azurite.Start(t)
	gs := gcsserver.Start(t)
	return []cloudServer{
		{
			name: "azure",
			base: strings.TrimSuffix(az.Endpoint, "/"+az.Account),
			open: func(t *testing.T, endpoint, prefix string) storage.Store {
				cfg := az.AzureConfig()
				cfg.Endpoint = endpoint + "/" + az.Account
				st, err := storage.Open(ctx, az.Location(prefix), storage.Config{Azure: cfg})
				if err != nil {
					t.Fatal(err)
				}
				return st
			},
		},
		{
			name: "gcs",
			base: gs.Endpoint,
			open: func(t *testing.T, endpoint, prefix string) storage.Store {
				cfg := gs.GCSConfig()
				cfg.Endpoint = endpoint
				st, err := storage.Open(ctx, gs.Location(prefix), storage.Config{GCS: cfg})
				if err != nil {
					t.Fatal(err)
				}
				return st
			},
		},
	}
}

// The conditional create is the whole of Delta's mutual exclusion: if an emulator ignored it, the
// conformance suite would pass on a store that overwrites commits. This asserts the precondition
// itself, with the emulator's answer in the message.
func TestCloud_EmulatorHonoursCreateIfAbsent(t *testing.T) {
	for _, srv := range cloudServers(t) {
		t.Run(srv.name, func(t *testing.T) {
			st := srv.open(t, srv.base, "precondition")
			if err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("first")); err != nil {
				t.Fatal(err)
			}
			err := st.PutIfAbsent(ctx, "_delta_log/00000000000000000000.json", []byte("second"))
			if !errors.Is(err, storage.ErrAlreadyExists) {
				t.Fatalf("%s does not refuse a conditional create of an existing object (err = %v): "+
					"the store cannot be atomic on it", srv.name, err)
			}
			if got := mustGet(t, st, "_delta_log/00000000000000000000.json"); string(got) != "first" {
				t.Fatalf("%s overwrote the object despite the precondition: %q", srv.name, got)
			}
		})
	}
}

// A reader opened on one version must not return bytes of the next (Delta rewrites checkpoints and
// _last_checkpoint under the same name): the read fails instead.
func TestCloudOpen_ReaderIsPinnedToTheVersionItOpened(t *testing.T) {
	for _, srv := range cloudServers(t) {
		t.Run(srv.name, func(t *testing.T) {
			st := srv.open(t, srv.base, "pinned")
			v1, v2 := randomBytes(1, 5000), randomBytes(2, 5000)
			mustPut(t, st, "00000000000000000010.checkpoint.parquet", v1)
			r, err := st.Open(ctx, "00000000000000000010.checkpoint.parquet")
			if err != nil {
				t.Fatal(err)
			}
			defer r.Close()
			mustPut(t, st, "00000000000000000010.checkpoint.parquet", v2)
			p := make([]byte, 100)
			n, err := r.ReadAt(p, 0)
			if err == nil {
				t.Fatalf("ReadAt after the object was replaced returned %d bytes (new version: %t), want an error",
					n, bytes.Equal(p, v2[:100]))
			}
			if !strings.Contains(err.Error(), "since it was opened") {
				t.Errorf("error does not say the object changed: %v", err)
			}
		})
	}
}

// A create whose response is lost and that the SDK then retries meets its own object; it must count
// as a win, and somebody else's object met by a retried request must still be a lost race.
func TestCloudPutIfAbsent_RetryAfterLostResponseRecognisesOwnWrite(t *testing.T) {
	const key = "_delta_log/00000000000000000000.json"
	for _, srv := range cloudServers(t) {
		t.Run(srv.name, func(t *testing.T) {
			lose := newProxyTo(t, srv.base, func(p *proxy, n int64, w http.ResponseWriter, r *http.Request) bool {
				if r.Method == http.MethodGet || r.Method == http.MethodHead || p.count(r.Method) != 1 {
					return false
				}
				p.forward.ServeHTTP(httptest.NewRecorder(), r) // the write happens ...
				w.WriteHeader(http.StatusServiceUnavailable)   // ... the answer is lost
				return true
			})
			st := srv.open(t, lose.URL, "lost")
			if err := st.PutIfAbsent(ctx, key, []byte("mine")); err != nil {
				t.Fatalf("PutIfAbsent whose first response was lost: %v, want success", err)
			}
			writes := lose.count(http.MethodPut) + lose.count(http.MethodPost)
			if writes != 2 {
				t.Fatalf("%d writes, want the lost one and its retry", writes)
			}
			throttle := newProxyTo(t, srv.base, func(p *proxy, n int64, w http.ResponseWriter, r *http.Request) bool {
				if r.Method == http.MethodGet || r.Method == http.MethodHead || p.count(r.Method) != 1 {
					return false
				}
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			})
			other := srv.open(t, throttle.URL, "lost")
			if err := other.PutIfAbsent(ctx, key, []byte("other")); !errors.Is(err, storage.ErrAlreadyExists) {
				t.Fatalf("retried PutIfAbsent over another writer's object: %v, want ErrAlreadyExists", err)
			}
			if got := mustGet(t, st, key); string(got) != "mine" {
				t.Fatalf("stored %q", got)
			}
		})
	}
}

// Throttling and server errors are retried by the SDKs' policies; when attempts run out the error
// says so, and a refused (4xx) request is not retried.
func TestCloud_RetriesThrottlingAndGivesUpClearly(t *testing.T) {
	for _, srv := range cloudServers(t) {
		t.Run(srv.name, func(t *testing.T) {
			for _, status := range []int{http.StatusServiceUnavailable, http.StatusTooManyRequests, http.StatusInternalServerError} {
				p := newProxyTo(t, srv.base, func(p *proxy, n int64, w http.ResponseWriter, r *http.Request) bool {
					if n > 2 {
						return false
					}
					w.WriteHeader(status)
					return true
				})
				st := srv.open(t, p.URL, "retry")
				key := "_delta_log/" + http.StatusText(status) + ".json"
				if err := st.PutIfAbsent(ctx, key, []byte("commit")); err != nil {
					t.Fatalf("%d twice, then through: %v", status, err)
				}
				if got := mustGet(t, st, key); string(got) != "commit" {
					t.Fatalf("stored %q", got)
				}
			}
			down := newProxyTo(t, srv.base, func(p *proxy, n int64, w http.ResponseWriter, r *http.Request) bool {
				w.WriteHeader(http.StatusServiceUnavailable)
				return true
			})
			err := srv.open(t, down.URL, "retry").Put(ctx, "k", []byte("x"))
			if err == nil || !strings.Contains(err.Error(), "throttling or failing") {
				t.Fatalf("always 503: err = %v, want the throttling error", err)
			}
			if errors.Is(err, storage.ErrNotFound) || errors.Is(err, storage.ErrAlreadyExists) {
				t.Fatalf("always 503 classified as %v", err)
			}
		})
	}
}
