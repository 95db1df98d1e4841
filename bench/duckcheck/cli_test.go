package duckcheck

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

// The merge model drives the deltakeeper binary as a user would, so that flag parsing, the exit codes and the
// JSON result are part of what it checks. The binary is built once per test process, on first use.
var (
	cliOnce sync.Once
	cliPath string
	cliDir  string
	cliErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if cliDir != "" {
		os.RemoveAll(cliDir)
	}
	os.Exit(code)
}

// deltakeeperBinary returns the path of cmd/deltakeeper built from this worktree (the default build settings,
// so that `go test`'s build cache serves most of it).
func deltakeeperBinary(t *testing.T) string {
	t.Helper()
	cliOnce.Do(func() {
		root, err := testutil.RepoRoot()
		if err != nil {
			cliErr = err
			return
		}
		if cliDir, err = os.MkdirTemp("", "deltakeeper-duckcheck-bin-*"); err != nil {
			cliErr = err
			return
		}
		cliPath = filepath.Join(cliDir, "deltakeeper")
		cmd := exec.Command("go", "build", "-o", cliPath, "./cmd/deltakeeper")
		cmd.Dir = root
		if out, err := cmd.CombinedOutput(); err != nil {
			cliErr = fmt.Errorf("building the CLI: %w\n%s", err, out)
		}
	})
	if cliErr != nil {
		t.Fatal(cliErr)
	}
	return cliPath
}

// cliRun is one finished command: its exit code, stdout and stderr.
type cliRun struct {
	args           []string
	code           int
	stdout, stderr string
}

func (r cliRun) String() string {
	return fmt.Sprintf("deltakeeper %s\n exit %d\n stdout: %s\n stderr: %s", strings.Join(r.args, " "), r.code,
		strings.TrimSpace(r.stdout), strings.TrimSpace(r.stderr))
}

// runCLI runs the binary with args and returns how it ended; only a failure to start it (or a hang past two
// minutes) fails the test.
func runCLI(t *testing.T, args ...string) cliRun {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, deltakeeperBinary(t), args...)
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	err := cmd.Run()
	run := cliRun{args: args, stdout: stdout.String(), stderr: stderr.String()}
	var exit *exec.ExitError
	switch {
	case err == nil:
	case errors.As(err, &exit) && ctx.Err() == nil:
		run.code = exit.ExitCode()
	default:
		t.Fatalf("deltakeeper %s: %v\n%s", strings.Join(args, " "), err, stderr.String())
	}
	return run
}
