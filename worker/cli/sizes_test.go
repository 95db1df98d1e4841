package cli

import (
	"errors"
	"path/filepath"
	"strings"
	"testing"

	"github.com/deltakeeper/deltakeeper/worker/result"
)

func TestParseSize_ReadsTheSpellingsThatTheToolPrintsAndTheYAMLUses(t *testing.T) {
	cases := []struct {
		in   string
		want int64
	}{
		{"", 0}, // the flag's default
		{"2097152", 2 << 20},
		{"2MiB", 2 << 20},
		{"2Mi", 2 << 20},
		{"2mb", 2 << 20},
		{"2m", 2 << 20},
		{"64.0 MiB", 64 << 20},
		{"10g", 10 << 30},
		{"1.5GiB", 3 << 29},
	}
	for _, c := range cases {
		if got, err := parseSize("--target-file-size", c.in); err != nil || got != c.want {
			t.Errorf("parseSize(%q) = %d, %v; want %d", c.in, got, err, c.want)
		}
	}
}

func TestParseSize_RefusesAsABadArgumentThatEchoesTheFlagAndValue(t *testing.T) {
	for _, in := range []string{"big", "0", "0m", "2 parsecs", "-5m"} {
		_, err := parseSize("--max-bytes-per-trigger", in)
		var refusal *result.Error
		if !errors.As(err, &refusal) || refusal.Outcome != result.Refused || refusal.Reason != result.ReasonBadArgument {
			t.Errorf("parseSize(%q): %v; want a BadArgument refusal", in, err)
			continue
		}
		if msg := err.Error(); !strings.Contains(msg, "--max-bytes-per-trigger") || !strings.Contains(msg, `"`+in+`"`) || !strings.Contains(msg, "256MiB") {
			t.Errorf("parseSize(%q) error %q: want the flag, the value and what to write", in, msg)
		}
	}
}

func TestOptimize_AcceptsTheSizeThatInspectPrints(t *testing.T) {
	loc := filepath.Join(t.TempDir(), "orders")
	demoTable(t, loc, 3, 50)
	for _, size := range []string{"64.0 MiB", "2MiB", "2Mi", "2mb", "2m"} {
		out, errOut, code := execute(t, newOptimizeCmd, loc, "--dry-run", "--target-file-size", size, "-o", "json")
		if code != 0 {
			t.Fatalf("--target-file-size %q: exit %d: %s%s", size, code, out, errOut)
		}
		if r := decodeResult(t, out); r.Outcome == result.Refused || r.Outcome == result.Failed {
			t.Fatalf("--target-file-size %q: %s", size, out)
		}
	}
}
