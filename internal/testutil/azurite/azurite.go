// Package azurite starts Azurite, Microsoft's Azure Storage emulator (installed from npm by
// hack/build-azurite.sh), for a test: a real Blob service on 127.0.0.1 with shared-key authentication,
// conditional headers and block uploads, so the Azure store is exercised against the service's own
// semantics rather than a mock.
//
// What Azurite 3.37.0 was checked to honour (worker/storage's TestCloud_* and race tests, which fail
// if it stops): Put Blob with If-None-Match: * on an existing blob is refused with 409
// BlobAlreadyExists and leaves the blob unchanged; among 16 goroutines and among 4 processes racing
// for a name, exactly one wins every round; Get Blob with a stale If-Match is refused with 412. It
// has no ADLS Gen2 (DFS) endpoint, so rename-based commits could not be tested on it at all.
package azurite

import (
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
	"github.com/deltakeeper/deltakeeper/internal/testutil/emulator"
	"github.com/deltakeeper/deltakeeper/worker/storage"
)

// EnvBinary overrides where Azurite's blob server launcher (azurite-blob) is found.
const EnvBinary = "DELTAKEEPER_AZURITE"

// Server is one running Azurite blob service with one account and one container.
type Server struct {
	// Endpoint is the account's Blob service URL, "http://127.0.0.1:<port>/<account>".
	Endpoint string
	// Account and Key are generated per server (Azurite's AZURITE_ACCOUNTS).
	Account string
	Key     string
	// Container exists and is empty when Start returns.
	Container string

	proc *emulator.Process
}

var listenRE = regexp.MustCompile(`successfully listens on (http://[0-9.]+:\d+)`)

// Start runs a fresh in-memory Azurite on a free loopback port and stops it when the test ends. A
// missing installation fails the test.
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
		t.Fatalf("azurite: %v", err)
	}
	key := make([]byte, 64)
	_, _ = rand.Read(key)
	s := &Server{
		Account:   "dk" + emulator.RandomHex(t, 6),
		Key:       base64.StdEncoding.EncodeToString(key),
		Container: "test-" + emulator.RandomHex(t, 4),
	}
	args := []string{
		"--blobHost", host, "--blobPort", "0", // the bound port is read from the log
		"--inMemoryPersistence", "--extentMemoryLimit", "1024",
		// The Go SDK speaks a newer service version than Azurite announces; the operations we use
		// are all in Azurite's.
		"--skipApiVersionCheck",
		"--disableProductStyleUrl", "--disableTelemetry",
	}
	env := []string{"AZURITE_ACCOUNTS=" + s.Account + ":" + s.Key}
	var base string
	s.proc, base = emulator.Start(t, "azurite", bin, args, env, listenRE)
	s.Endpoint = base + "/" + s.Account

	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	st, err := storage.NewAzure(ctx, s.AzureConfig(), s.Account, s.Container, "")
	if err != nil {
		t.Fatalf("azurite: %v", err)
	}
	if _, err := st.Container().Create(ctx, nil); err != nil {
		t.Fatalf("azurite: creating container %s: %v\n%s", s.Container, err, s.Log())
	}
	return s
}

// AzureConfig is a client configuration for this server: its account key, and quick retries so
// tests that provoke retries stay fast.
func (s *Server) AzureConfig() storage.AzureConfig {
	return storage.AzureConfig{Account: s.Account, AccountKey: s.Key, Endpoint: s.Endpoint, MaxBackoff: 50 * time.Millisecond}
}

// Location is the URI of the container, optionally with a prefix, in its canonical abfss:// form.
func (s *Server) Location(prefix string) string {
	loc := "abfss://" + s.Container + "@" + s.Account + ".dfs.core.windows.net"
	if prefix = strings.Trim(prefix, "/"); prefix != "" {
		loc += "/" + prefix
	}
	return loc
}

// Env is what a child process needs to open this server's locations with storage.ConfigFromEnv.
func (s *Server) Env() []string {
	return []string{
		storage.EnvAzureAccount + "=" + s.Account,
		storage.EnvAzureKey + "=" + s.Key,
		storage.EnvAzureEndpoint + "=" + s.Endpoint,
		storage.EnvAzureMaxBackoff + "=50ms",
	}
}

// Log returns what Azurite printed so far.
func (s *Server) Log() string { return s.proc.Log() }

// Binary locates azurite-blob: $DELTAKEEPER_AZURITE, else where hack/build-azurite.sh installs the
// version pinned in it.
func Binary() (string, error) {
	if p := os.Getenv(EnvBinary); p != "" {
		return emulator.Binary(EnvBinary, "", "hack/build-azurite.sh")
	}
	root, err := testutil.RepoRoot()
	if err != nil {
		return "", err
	}
	version, err := PinnedVersion(root)
	if err != nil {
		return "", err
	}
	rel := filepath.Join("bin", "azurite", version, "node_modules", ".bin", "azurite-blob")
	return emulator.Binary(EnvBinary, rel, "hack/build-azurite.sh")
}

// PinnedVersion reads AZURITE_VERSION from hack/build-azurite.sh.
func PinnedVersion(root string) (string, error) {
	data, err := os.ReadFile(filepath.Join(root, "hack", "build-azurite.sh"))
	if err != nil {
		return "", fmt.Errorf("reading Azurite's pinned version: %w", err)
	}
	for line := range strings.Lines(string(data)) {
		if v, ok := strings.CutPrefix(strings.TrimSpace(line), "AZURITE_VERSION="); ok {
			return v, nil
		}
	}
	return "", fmt.Errorf("hack/build-azurite.sh sets no AZURITE_VERSION")
}
