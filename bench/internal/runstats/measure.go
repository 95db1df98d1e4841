package runstats

import (
	"fmt"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"time"
)

// Measurement is one run of a benchmarked command: wall and CPU time (user+sys of the whole subtree),
// peak RSS in KiB, and the machine's load when it ended.
type Measurement struct {
	Wall, CPU time.Duration
	RSSKB     int64
	Load      string
}

// Measure runs cmd and measures it, returning its standard output. A child's ru_maxrss starts from the
// image of the process it was forked from (the kernel carries the old image's high-water mark across
// exec), and the drivers grow to hundreds of MiB running DuckDB in-process; so, where GNU time exists,
// the command runs under it and the peak RSS is the one time reports for its own small child.
func Measure(cmd *exec.Cmd) (Measurement, []byte, error) {
	var rssFile string
	if _, err := os.Stat("/usr/bin/time"); err == nil {
		f, err := os.CreateTemp("", "bench-rss-")
		if err == nil {
			rssFile = f.Name()
			f.Close()
			defer os.Remove(rssFile)
			wrapped := exec.Command("/usr/bin/time", append([]string{"-f", "%M", "-o", rssFile, cmd.Path}, cmd.Args[1:]...)...)
			wrapped.Env = cmd.Env
			cmd = wrapped
		}
	}
	var out strings.Builder
	cmd.Stdout, cmd.Stderr = &out, os.Stderr
	start := time.Now()
	err := cmd.Run()
	m := Measurement{Wall: time.Since(start), Load: LoadAvg()}
	if cmd.ProcessState != nil {
		ru := cmd.ProcessState.SysUsage().(*syscall.Rusage)
		m.CPU = time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
		m.RSSKB = ru.Maxrss
	}
	if rssFile != "" {
		if b, rerr := os.ReadFile(rssFile); rerr == nil {
			var kb int64
			if _, serr := fmt.Sscan(LastLine(string(b)), &kb); serr == nil {
				m.RSSKB = kb
			}
		}
	}
	if err != nil {
		return m, nil, fmt.Errorf("%s: %w: %s", strings.Join(cmd.Args, " "), err, out.String())
	}
	return m, []byte(out.String()), nil
}

// LastLine is the last non-empty line of s, trimmed: where a command prints its JSON result or GNU time
// its figure after other output.
func LastLine(s string) string {
	s = strings.TrimSpace(s)
	if i := strings.LastIndexByte(s, '\n'); i >= 0 {
		return strings.TrimSpace(s[i+1:])
	}
	return s
}
