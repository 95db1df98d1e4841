// Package gcsserver starts fake-gcs-server (built from the Go module proxy by hack/build-gcsserver.sh)
// for a test: a GCS JSON API on 127.0.0.1 with generations, preconditions and resumable uploads, so
// the GCS store is exercised against a real HTTP implementation rather than a mock.
//
// What fake-gcs-server v1.56.1 was checked to honour (worker/storage's TestCloud_* and race tests,
// which fail if it stops): an upload with ifGenerationMatch=0 over an existing object is refused with
// 412 conditionNotMet and leaves it unchanged; among 16 goroutines and among 4 processes racing for a
// name, exactly one wins every round; a read of a replaced generation fails.
package gcsserver

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	gcs "cloud.google.com/go/storage"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/internal/testutil/emulator"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// EnvBinary overrides where the server binary is found.
const EnvBinary = "DELTAKEEPER_GCSSERVER"

// Server is one running fake-gcs-server with one bucket.
type Server struct {
	// Endpoint is the base URL, e.g. "http://127.0.0.1:40123".
	Endpoint string
	// Bucket exists and is empty when Start returns.
	Bucket string

	proc *emulator.Process
}

var listenRE = regexp.MustCompile(`server started at (http://[0-9.]+:\d+)`)

// Start runs a fresh in-memory server on a free loopback port and stops it when the test ends. A
// missing binary fails the test.
func Start(t testing.TB) *Server {
	t.Helper()
	return StartOn(t, "127.0.0.1")
}

// StartOn is Start on another local address: the end-to-end tests bind the pod bridge's, which both the
// host and the cluster's pods reach.
func StartOn(t testing.TB, host string) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatalf("gcsserver: %v", err)
	}
	// The server must know its own URL for the Location of resumable uploads, so the port is picked
	// here rather than by the server.
	port, err := freePort(host)
	if err != nil {
		t.Fatalf("gcsserver: %v", err)
	}
	self := net.JoinHostPort(host, strconv.Itoa(port))
	s := &Server{Bucket: "test-" + emulator.RandomHex(t, 4)}
	args := []string{"-scheme", "http", "-host", host, "-port", strconv.Itoa(port),
		"-backend", "memory", "-external-url", "http://" + self, "-public-host", self, "-log-level", "info"}
	s.proc, s.Endpoint = emulator.Start(t, "gcsserver", bin, args, nil, listenRE)

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := storage.NewGCS(ctx, s.GCSConfig(), s.Bucket, "")
	if err != nil {
		t.Fatalf("gcsserver: %v", err)
	}
	if err := st.Bucket().Create(ctx, "test-project", &gcs.BucketAttrs{}); err != nil {
		t.Fatalf("gcsserver: creating bucket %s: %v\n%s", s.Bucket, err, s.Log())
	}
	return s
}

func freePort(host string) (int, error) {
	l, err := net.Listen("tcp", net.JoinHostPort(host, "0"))
	if err != nil {
		return 0, err
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port, nil
}

// GCSConfig is a client configuration for this server, with quick retries.
func (s *Server) GCSConfig() storage.GCSConfig {
	return storage.GCSConfig{Endpoint: s.Endpoint, MaxBackoff: 50 * time.Millisecond}
}

// Location is the URI of the bucket, optionally with a prefix.
func (s *Server) Location(prefix string) string {
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		return "gs://" + s.Bucket + "/" + prefix
	}
	return "gs://" + s.Bucket
}

// Env is what a child process needs to open this server's locations with storage.ConfigFromEnv.
func (s *Server) Env() []string {
	return []string{storage.EnvGCSEmulatorHost + "=" + s.Endpoint, storage.EnvGCSMaxBackoff + "=50ms"}
}

// Log returns what the server printed so far.
func (s *Server) Log() string { return s.proc.Log() }

// Binary locates the server: $DELTAKEEPER_GCSSERVER, else bin/gcsserver/<version>/gcsserver where
// <version> is the one pinned in hack/gcsserver/go.mod.
func Binary() (string, error) {
	if os.Getenv(EnvBinary) != "" {
		return emulator.Binary(EnvBinary, "", "hack/build-gcsserver.sh")
	}
	root, err := testutil.RepoRoot()
	if err != nil {
		return "", err
	}
	data, err := os.ReadFile(filepath.Join(root, "hack", "gcsserver", "go.mod"))
	if err != nil {
		return "", fmt.Errorf("reading the server's pinned version: %w", err)
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == "github.com/fsouza/fake-gcs-server" {
			return emulator.Binary(EnvBinary, filepath.Join("bin", "gcsserver", f[1], "gcsserver"), "hack/build-gcsserver.sh")
		}
	}
	return "", fmt.Errorf("hack/gcsserver/go.mod does not require github.com/fsouza/fake-gcs-server")
}
