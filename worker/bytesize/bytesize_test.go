package bytesize

import (
	"strings"
	"testing"
)

func TestParse_AcceptsWhatPeopleAndTheToolWrite(t *testing.T) {
	const (
		kib = int64(1) << 10
		mib = int64(1) << 20
		gib = int64(1) << 30
	)
	cases := []struct {
		in   string
		want int64
	}{
		{"0", 0},
		{"268435456", 268435456},
		{"  4096 ", 4096},
		{"512b", 512},
		{"512B", 512},
		{"2k", 2 * kib},
		{"2KiB", 2 * kib},
		{"2m", 2 * mib},
		{"2mb", 2 * mib},
		{"2MB", 2 * mib},
		{"2Mi", 2 * mib},
		{"2MiB", 2 * mib},
		{"64.0 MiB", 64 * mib}, // what `inspect` prints
		{"1.5GiB", gib + gib/2},
		{"1.5 g", gib + gib/2},
		{"10g", 10 * gib},
		{"10Gi", 10 * gib},
		{"1t", 1 << 40},
		{"1PiB", 1 << 50},
		{"0.5k", 512},
		{"1.0005k", 1025}, // 1024.512 bytes: rounded to the nearest byte
		{"8191p", 8191 << 50},
	}
	for _, c := range cases {
		got, err := Parse(c.in)
		if err != nil {
			t.Errorf("Parse(%q): %v", c.in, err)
			continue
		}
		if got != c.want {
			t.Errorf("Parse(%q) = %d, want %d", c.in, got, c.want)
		}
	}
}

func TestParse_RefusesWithTheValueAndWhatToWrite(t *testing.T) {
	cases := []struct{ in, says string }{
		{"", "not a number"},
		{"mb", "not a number"},
		{"-1m", "not a number"},
		{"1,5g", "not a number"},
		{"1e9", "not a number"},
		{"2 eb", `unknown unit "eb"`},
		{"2xb", `unknown unit "xb"`},
		{"2 M i B", "not a number"},
		{"2mbs", `unknown unit "mbs"`},
		{"8192p", "too large"},
		{"99999999999999999999", "too large"},
	}
	for _, c := range cases {
		n, err := Parse(c.in)
		if err == nil {
			t.Errorf("Parse(%q) = %d, want an error", c.in, n)
			continue
		}
		msg := err.Error()
		if !strings.Contains(msg, c.says) || !strings.Contains(msg, "\""+c.in+"\"") {
			t.Errorf("Parse(%q) error %q: want it to echo the value and say %q", c.in, msg, c.says)
		}
		if c.says != "too large" && !strings.Contains(msg, Hint) {
			t.Errorf("Parse(%q) error %q does not say what to write", c.in, msg)
		}
	}
}

func TestParseSpark_KeepsTablePropertiesReadableBySpark(t *testing.T) {
	for in, want := range map[string]int64{"134217728": 134217728, "128m": 128 << 20, "128MB": 128 << 20, "1g": 1 << 30, "2 kb": 2048} {
		if got, err := ParseSpark(in); err != nil || got != want {
			t.Errorf("ParseSpark(%q) = %d, %v; want %d", in, got, err, want)
		}
	}
	for _, in := range []string{"128Mi", "128MiB", "1.5g", "64.0 MiB", "x", ""} {
		if n, err := ParseSpark(in); err == nil {
			t.Errorf("ParseSpark(%q) = %d; want an error (Spark cannot read it)", in, n)
		} else if !strings.Contains(err.Error(), "\""+in+"\"") {
			t.Errorf("ParseSpark(%q) error %q does not echo the value", in, err)
		}
	}
}

func TestFormat_ReadsBackWithinTheRoundingOfOneDecimal(t *testing.T) {
	for _, n := range []int64{0, 1023, 1024, 64 << 20, 3<<30 + 123456789, 5 << 40} {
		s := Format(n)
		got, err := Parse(s)
		if err != nil {
			t.Fatalf("Parse(Format(%d) = %q): %v", n, s, err)
		}
		// One decimal of the unit: within 5% of a unit, itself at most 1024 times smaller than n.
		if diff := got - n; diff < -n/200-1 || diff > n/200+1 {
			t.Errorf("Parse(Format(%d) = %q) = %d: off by %d", n, s, got, diff)
		}
	}
	if got := Format(64 << 20); got != "64.0 MiB" {
		t.Errorf("Format(64 MiB) = %q", got)
	}
}
