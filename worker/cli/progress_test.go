package cli

import (
	"bytes"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
)

// Every progress line off a terminal: "<phase>: <files> files, <bytes>[ (<pct>%)], <elapsed> elapsed…".
var progressLine = regexp.MustCompile(`^(optimize|cluster|z-order|vacuum|checkpoint|ingest|merge): \d+(/\d+)? files, `)

func withProgressEvery(t *testing.T, d time.Duration) {
	t.Helper()
	old := progressInterval
	progressInterval = d
	t.Cleanup(func() { progressInterval = old })
}

func TestProgress_OffATerminalPrintsPlainLinesWithCountsOnStderr(t *testing.T) {
	withProgressEvery(t, 0) // a line on every advance: the test sees the periodic lines without waiting
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 12, 200, "--partitioned")
	out, errOut, code := execute(t, newMaintainCmd, loc, "--optimize", "--target-file-size", "268435456",
		"--vacuum", "--retention", "0s", "--allow-short-retention", "--checkpoint")
	if code != 0 {
		t.Fatalf("maintain exited %d: %s %s", code, out, errOut)
	}
	for _, want := range []string{
		"optimize: 0/12 files, 0 B/", "(0%), 0s elapsed; started",
		"optimize: 12/12 files,", "(100%)", "; done",
		"vacuum: 0/12 files", "vacuum: 12/12 files",
		"checkpoint: 0 files, 0 B",
	} {
		if !strings.Contains(errOut, want) {
			t.Errorf("stderr lacks %q:\n%s", want, errOut)
		}
	}
	// Between start and done, lines for the work in between: one per bin (3 partitions).
	if n := strings.Count(errOut, "optimize: "); n < 3+2 {
		t.Errorf("%d optimize lines, want start, one per bin and done:\n%s", n, errOut)
	}
	for _, l := range strings.Split(strings.TrimSpace(errOut), "\n") {
		if !progressLine.MatchString(l) {
			t.Errorf("not a progress line: %q", l)
		}
	}
	if strings.Contains(out, "elapsed") || strings.Contains(errOut, "\r") || strings.Contains(errOut, "\x1b[") {
		t.Errorf("progress leaked into stdout or drew a terminal bar off a terminal:\nstdout %q\nstderr %q", out, errOut)
	}
}

func TestProgress_IngestLinesCountTheBatchesFiles(t *testing.T) {
	withProgressEvery(t, 0)
	dir := t.TempDir()
	src := filepath.Join(dir, "src")
	if err := os.MkdirAll(src, 0o755); err != nil {
		t.Fatal(err)
	}
	for _, f := range []string{"a.csv", "b.csv"} {
		if err := os.WriteFile(filepath.Join(src, f), []byte("id,day\n1,2024-01-01\n"), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	_, errOut, code := execute(t, newIngestCmd, filepath.Join(dir, "t"), "--source", src, "--format", "csv", "--option", "header=true", "--available-now")
	if code != 0 || !strings.Contains(errOut, "ingest: 0 files, 0 B, 0s elapsed; started") || !strings.Contains(errOut, "ingest: 2 files, ") {
		t.Fatalf("exit %d, stderr:\n%s", code, errOut)
	}
}

func TestProgress_JSONAndQuietPrintNothingBesidesTheResult(t *testing.T) {
	withProgressEvery(t, 0)
	for _, flags := range [][]string{{"-o", "json"}, {"--quiet"}, {"-q", "-o", "json"}} {
		loc := filepath.Join(t.TempDir(), "orders")
		demoTable(t, loc, 12, 200, "--partitioned")
		args := append([]string{loc, "--optimize", "--vacuum", "--retention", "0s", "--allow-short-retention", "--checkpoint"}, flags...)
		out, errOut, code := execute(t, newMaintainCmd, args...)
		if code != 0 || errOut != "" {
			t.Errorf("%v: exit %d, stderr %q", flags, code, errOut)
		}
		if flags[len(flags)-1] == "json" {
			if lines := strings.Split(strings.TrimSpace(out), "\n"); len(lines) != 1 || decodeResult(t, out).Outcome == "" {
				t.Errorf("%v: stdout is not exactly the one JSON result:\n%s", flags, out)
			}
		}
	}
}

func TestProgress_LinesEstimateTheRemainingTimeFromTheBytesDone(t *testing.T) {
	var buf bytes.Buffer
	now := time.Date(2026, 12, 2, 3, 0, 0, 0, time.UTC)
	p := newProgress(&buf, true)
	p.now = func() time.Time { return now }
	withProgressEvery(t, 10*time.Second)
	p.Start("optimize", 10, 1000)
	now = now.Add(5 * time.Second)
	p.Advance(2, 200) // within the interval: no line
	now = now.Add(5 * time.Second)
	p.update("rewrote 5/10 bins")
	p.Advance(3, 300)
	now = now.Add(2 * time.Second)
	p.done()
	want := "optimize: 0/10 files, 0 B/1000 B (0%), 0s elapsed; started\n" +
		"optimize: 2/10 files, 200 B/1000 B (20%), 10s elapsed, ETA 40s; rewrote 5/10 bins\n" +
		"optimize: 5/10 files, 500 B/1000 B (50%), 12s elapsed; done; rewrote 5/10 bins\n"
	if buf.String() != want {
		t.Errorf("lines:\n%s\nwant:\n%s", buf.String(), want)
	}
	var off bytes.Buffer
	q := newProgress(&off, false)
	q.Start("vacuum", 3, 30)
	q.Advance(3, 30)
	q.update("deleted 3/3 files")
	q.done()
	if off.Len() != 0 {
		t.Errorf("a disabled progress printed %q", off.String())
	}
}
