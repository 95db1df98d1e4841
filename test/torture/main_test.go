package torture

import (
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strconv"
	"testing"
	"time"

	"github.com/deltakeeper/deltakeeper/internal/testutil"
)

// cliBinary is the deltakeeper binary built once by TestMain for every child process.
var cliBinary string

// TestMain either runs as a helper process (an appender of the concurrency test, selected by its
// environment) or builds the CLI and runs the suite.
func TestMain(m *testing.M) {
	if role := os.Getenv(envHelperRole); role != "" {
		os.Exit(runHelper(role))
	}
	if err := loadConfig(); err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(2)
	}
	defaultParallelism()
	fmt.Printf("torture: size %s (%d kills, %d of keyed writers, and %d commits on each of %d backends, %d fault runs), seed %d (%s=%d replays it)\n",
		size.name, size.kills, size.keyedKills, size.commits, len(backends), size.faultRuns, masterSeed, envSeed, masterSeed)
	dir, err := os.MkdirTemp("", "deltakeeper-torture-bin-*")
	if err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
		os.Exit(2)
	}
	code := 2
	if cliBinary, err = buildCLI(dir); err != nil {
		fmt.Fprintln(os.Stderr, "torture:", err)
	} else {
		code = m.Run()
		fmt.Print(figures)
	}
	os.RemoveAll(dir)
	os.Exit(code)
}

// defaultParallelism runs more subtests at once than the CPUs, unless -test.parallel was given:
// the cells spend most of their time waiting for child processes, the S3 server and fsync (a CI run
// uses about a third of its wall time in CPU), so two at a time would leave the machine idle.
func defaultParallelism() {
	flag.Parse()
	given := false
	flag.Visit(func(f *flag.Flag) { given = given || f.Name == "test.parallel" })
	if !given {
		_ = flag.Set("test.parallel", strconv.Itoa(max(4, 2*runtime.GOMAXPROCS(0))))
	}
}

// buildCLI builds cmd/deltakeeper into dir, so that the suite tortures the binary users run and not
// a test double. It keeps the go command's default settings (cgo included), which lets it reuse
// the build cache `go test` just filled: with CGO_ENABLED=0, as `make build` does, every package
// would be compiled again.
func buildCLI(dir string) (string, error) {
	root, err := testutil.RepoRoot()
	if err != nil {
		return "", err
	}
	bin := filepath.Join(dir, "deltakeeper")
	start := time.Now()
	cmd := exec.Command("go", "build", "-o", bin, "./cmd/deltakeeper")
	cmd.Dir = root
	if out, err := cmd.CombinedOutput(); err != nil {
		return "", fmt.Errorf("building the CLI: %w\n%s", err, out)
	}
	fmt.Printf("torture: built %s in %s\n", bin, time.Since(start).Round(time.Millisecond))
	return bin, nil
}
