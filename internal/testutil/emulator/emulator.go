// Package emulator runs a storage server (the S3 test server, Azurite, fake-gcs-server) as a child
// process of a test on 127.0.0.1: its output is kept for failure messages, it dies with the test
// binary, and it is stopped when the test ends.
package emulator

import (
	"bufio"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

// startTimeout bounds the wait for an emulator to serve. Node starts Azurite in a second on an idle
// machine but has taken over 30 s on a loaded 2-core one.
const startTimeout = 3 * time.Minute

// Process is one running emulator.
type Process struct {
	name  string
	cmd   *exec.Cmd
	done  chan struct{}
	logMu sync.Mutex
	log   strings.Builder
}

// Start runs bin with args (and env added to the test's environment), waits until a line of its
// output matches listen, whose first group is returned as the address it serves, and stops it when
// the test ends.
func Start(t testing.TB, name, bin string, args, env []string, listen *regexp.Regexp) (*Process, string) {
	t.Helper()
	p := &Process{name: name, done: make(chan struct{})}
	p.cmd = exec.Command(bin, args...)
	p.cmd.Env = append(os.Environ(), env...)
	setProcAttr(p.cmd)
	logR, logW, err := os.Pipe()
	if err != nil {
		t.Fatalf("%s: %v", name, err)
	}
	p.cmd.Stdout, p.cmd.Stderr = logW, logW
	err = p.cmd.Start()
	logW.Close()
	if err != nil {
		logR.Close()
		t.Fatalf("%s: starting %s: %v", name, bin, err)
	}
	addr := make(chan string, 1)
	go p.readLog(logR, listen, addr)
	go func() { _ = p.cmd.Wait(); close(p.done) }()
	t.Cleanup(p.stop)
	select {
	case a := <-addr:
		return p, a
	case <-p.done:
		t.Fatalf("%s: exited before serving:\n%s", name, p.Log())
	case <-time.After(startTimeout):
		t.Fatalf("%s: not serving after %s:\n%s", name, startTimeout, p.Log())
	}
	return nil, ""
}

// Log returns what the emulator printed so far.
func (p *Process) Log() string {
	p.logMu.Lock()
	defer p.logMu.Unlock()
	return p.log.String()
}

func (p *Process) readLog(r io.ReadCloser, listen *regexp.Regexp, addr chan<- string) {
	defer r.Close()
	sc := bufio.NewScanner(r)
	sent := false
	for sc.Scan() {
		line := sc.Text()
		p.logMu.Lock()
		p.log.WriteString(line + "\n")
		p.logMu.Unlock()
		if m := listen.FindStringSubmatch(line); m != nil && !sent {
			addr <- m[1]
			sent = true
		}
	}
}

// stop asks the emulator to exit and kills it if it does not within a few seconds.
func (p *Process) stop() {
	if p.cmd.Process == nil {
		return
	}
	_ = p.cmd.Process.Signal(os.Interrupt)
	select {
	case <-p.done:
	case <-time.After(5 * time.Second):
		_ = p.cmd.Process.Kill()
		<-p.done
	}
}

// Binary returns $envVar if set (it must exist), else rel under the repository root if it exists,
// else an error saying which hack/ script installs it: a missing emulator fails the test, it is never
// skipped.
func Binary(envVar, rel, script string) (string, error) {
	if p := os.Getenv(envVar); p != "" {
		if _, err := os.Stat(p); err != nil {
			return "", fmt.Errorf("%s=%s: %w; unset it or run %s", envVar, p, err, script)
		}
		return p, nil
	}
	root, err := testutil.RepoRoot()
	if err != nil {
		return "", fmt.Errorf("%w: run the tests inside the repository or set %s", err, envVar)
	}
	bin := filepath.Join(root, rel)
	if _, err := os.Stat(bin); err != nil {
		return "", fmt.Errorf("%s is missing: run %s (or set %s)", bin, script, envVar)
	}
	return bin, nil
}

// RandomHex returns n random bytes in hex, for per-server credentials and names.
func RandomHex(t testing.TB, n int) string {
	b := make([]byte, n)
	if _, err := rand.Read(b); err != nil {
		t.Fatal(err)
	}
	return hex.EncodeToString(b)
}
