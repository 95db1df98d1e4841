// Package s3server starts the project's S3-compatible test server (rclone "serve s3" over a temp
// directory, built by hack/build-s3server.sh) for a test, so storage code is exercised against a real
// HTTP S3 implementation with real conditional writes rather than a mock.
//
// Objects are plain files under DataDir()/<bucket>/<key>, which lets tests check what actually reached
// "S3" without going through the code under test.
package s3server

import (
	"context"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"io/fs"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil/emulator"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// EnvBinary names the environment variable that overrides where the server binary is found.
const EnvBinary = "DELTAKEEPER_S3SERVER"

// Region is the region the test server accepts; rclone ignores it but SigV4 needs one.
const Region = "us-east-1"

// Server is one running test server with one bucket.
type Server struct {
	// Endpoint is the base URL, e.g. "http://127.0.0.1:40123".
	Endpoint string
	// AccessKeyID and SecretAccessKey are generated per server.
	AccessKeyID     string
	SecretAccessKey string
	// Bucket exists and is empty when Start returns.
	Bucket string

	dataDir string
	proc    *emulator.Process
}

// DataDir is the directory the server serves: bucket B's object K is the file DataDir()/B/K.
//
// Read raw objects here freely, but write through S3 (see UploadDir): the server caches directory
// listings (rclone's --dir-cache-time, 5 minutes), so files placed here behind its back can stay
// invisible to List and Stat. Turning the cache off makes every request 10-100x slower.
func (s *Server) DataDir() string { return s.dataDir }

// UploadDir copies every file under dir into the bucket below prefix through the S3 API, e.g. to
// serve a fixture Delta table from the test server. It returns the table's location.
func (s *Server) UploadDir(t testing.TB, dir, prefix string) string {
	t.Helper()
	ctx := context.Background()
	loc := s.Location(prefix)
	st, err := storage.Open(ctx, loc, storage.Config{S3: s.S3Config()})
	if err != nil {
		t.Fatalf("s3server: %v", err)
	}
	err = filepath.WalkDir(dir, func(path string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		rel, err := filepath.Rel(dir, path)
		if err != nil {
			return err
		}
		data, err := os.ReadFile(path)
		if err != nil {
			return err
		}
		return st.Put(ctx, filepath.ToSlash(rel), data)
	})
	if err != nil {
		t.Fatalf("s3server: uploading %s to %s: %v", dir, loc, err)
	}
	return loc
}

// ObjectPath is the file holding key in the server's bucket.
func (s *Server) ObjectPath(key string) string {
	return filepath.Join(s.dataDir, s.Bucket, filepath.FromSlash(key))
}

// S3Config is a client configuration for this server: static keys, path-style addressing, and quick
// retries so tests that provoke retries stay fast.
func (s *Server) S3Config() storage.S3Config {
	return storage.S3Config{
		Endpoint:        s.Endpoint,
		Region:          Region,
		UsePathStyle:    true,
		AccessKeyID:     s.AccessKeyID,
		SecretAccessKey: s.SecretAccessKey,
		MaxBackoff:      50 * time.Millisecond,
	}
}

// Location is the URI of the bucket, optionally with a prefix: Location("t1") = "s3://<bucket>/t1".
func (s *Server) Location(prefix string) string {
	if prefix == "" {
		return "s3://" + s.Bucket
	}
	return "s3://" + s.Bucket + "/" + strings.Trim(prefix, "/")
}

// Log returns what the server printed so far, for failure messages.
func (s *Server) Log() string { return s.proc.Log() }

// Start runs a fresh server on a free loopback port with a temp data directory and one bucket, and
// stops it when the test ends. A missing binary fails the test: the server is part of the project's
// build, and a skipped storage test would hide exactly the bugs it exists to catch.
func Start(t testing.TB) *Server {
	t.Helper()
	bin, err := Binary()
	if err != nil {
		t.Fatalf("s3server: %v", err)
	}
	s := &Server{
		AccessKeyID:     "dk" + randomHex(t, 8), // rclone refuses access keys shorter than 3 characters
		SecretAccessKey: randomHex(t, 20),
		Bucket:          "test-" + randomHex(t, 4),
		dataDir:         t.TempDir(),
	}
	// A bucket is a directory in rclone's root; making it up front saves a round trip and a code path.
	if err := os.Mkdir(filepath.Join(s.dataDir, s.Bucket), 0o755); err != nil {
		t.Fatalf("s3server: creating bucket directory: %v", err)
	}

	// Port 0 and reading the bound address from the log avoids the pick-a-free-port-then-bind race.
	args := []string{"serve", "s3",
		"--config", "", // no rclone.conf: the local backend needs none
		"--addr", "127.0.0.1:0",
		"--auth-key", s.AccessKeyID + "," + s.SecretAccessKey,
		"--log-level", "NOTICE",
		s.dataDir}
	s.proc, s.Endpoint = emulator.Start(t, "s3server", bin, args, nil, listenRE)
	if err := waitReady(s.Endpoint, 10*time.Second); err != nil {
		t.Fatalf("s3server: %v\n%s", err, s.Log())
	}
	return s
}

var listenRE = regexp.MustCompile(`Starting s3 server on \[(http://[^\]/ ]+)/?\]`)

// waitReady polls until the server answers HTTP at all (an unsigned request gets 403, which is fine).
func waitReady(endpoint string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	client := &http.Client{Timeout: time.Second}
	for {
		resp, err := client.Get(endpoint + "/")
		if err == nil {
			resp.Body.Close()
			return nil
		}
		if time.Now().After(deadline) {
			return fmt.Errorf("server at %s not answering after %s: %w", endpoint, timeout, err)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// Binary locates the server: $DELTAKEEPER_S3SERVER, else bin/s3server/<version>/s3server under the
// module root (the directory holding go.mod, found by walking up from the working directory), where
// <version> is the rclone version pinned in hack/s3server/go.mod. A binary built from other sources
// than the checked-in ones (stamp mismatch) is refused, so a stale bin/ cannot mask a version bump.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w; unset it or run hack/build-s3server.sh", EnvBinary, p, err)
		}
		return p, nil
	}
	root, err := moduleRoot()
	if err != nil {
		return "", err
	}
	mod := filepath.Join(root, "hack", "s3server")
	version, err := pinnedVersion(filepath.Join(mod, "go.mod"))
	if err != nil {
		return "", err
	}
	bin := filepath.Join(root, "bin", "s3server", version, "s3server")
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("test S3 server %s is missing: run hack/build-s3server.sh", bin)
	}
	want, err := sourceStamp(mod)
	if err != nil {
		return "", err
	}
	got, _ := os.ReadFile(filepath.Join(filepath.Dir(bin), ".s3server.stamp"))
	if strings.TrimSpace(string(got)) != want {
		return "", fmt.Errorf("test S3 server %s was built from other sources than hack/s3server: run hack/build-s3server.sh", bin)
	}
	return bin, nil
}

// pinnedVersion reads the rclone version from the wrapper module's go.mod.
func pinnedVersion(goMod string) (string, error) {
	data, err := os.ReadFile(goMod)
	if err != nil {
		return "", fmt.Errorf("reading the server's pinned version: %w", err)
	}
	for line := range strings.Lines(string(data)) {
		f := strings.Fields(strings.TrimPrefix(strings.TrimSpace(line), "require "))
		if len(f) >= 2 && f[0] == "github.com/rclone/rclone" {
			return f[1], nil
		}
	}
	return "", fmt.Errorf("%s does not require github.com/rclone/rclone", goMod)
}

// sourceStamp must match hack/build-s3server.sh: the first 16 hex digits of sha256(go.sum + main.go).
func sourceStamp(mod string) (string, error) {
	h := sha256.New()
	for _, name := range []string{"go.sum", "main.go"} {
		data, err := os.ReadFile(filepath.Join(mod, name))
		if err != nil {
			return "", fmt.Errorf("reading the server's sources: %w", err)
		}
		h.Write(data)
	}
	return hex.EncodeToString(h.Sum(nil))[:16], nil
}

// moduleRoot finds the main module's directory, skipping nested modules such as hack/s3server.
func moduleRoot() (string, error) {
	dir, err := os.Getwd()
	if err != nil {
		return "", err
	}
	for {
		data, err := os.ReadFile(filepath.Join(dir, "go.mod"))
		if err == nil && strings.HasPrefix(string(data), "module github.com/deltakeeper/deltakeeper\n") {
			return dir, nil
		}
		parent := filepath.Dir(dir)
		if parent == dir {
			return "", fmt.Errorf("no go.mod of github.com/deltakeeper/deltakeeper above the working directory: "+
				"run the tests inside the repository or set %s", EnvBinary)
		}
		dir = parent
	}
}

func randomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatalf("s3server: %v", err)
	}
	return hex.EncodeToString(b)
}
