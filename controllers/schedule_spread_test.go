package controllers

import (
	"fmt"
	"testing"
	"time"
)

func TestPhaseDue_SpreadsTablesDueTogetherOverTheInterval(t *testing.T) {
	const tables = 200
	interval := time.Hour
	created := time.Date(2026, 5, 21, 12, 0, 0, 0, time.UTC) // 200 tables inspected in the same second
	perMinute := map[int]int{}
	seconds := map[int64]bool{}
	for i := range tables {
		key := fmt.Sprintf("uid-%04d", i)
		due := phaseDue(created.Add(interval/2), interval, key)
		if due.Before(created.Add(interval/2)) || !due.Before(created.Add(interval/2+interval)) {
			t.Fatalf("table %d due at %s, outside [last+interval/2, last+3·interval/2)", i, due)
		}
		// The steady state: the next inspection, one interval later, lands on the same phase.
		if next := phaseDue(due.Add(interval/2), interval, key); !next.Equal(due.Add(interval)) {
			t.Fatalf("table %d: next inspection %s, want exactly one interval after %s", i, next, due)
		}
		perMinute[int(due.Sub(created)/time.Minute)]++
		seconds[due.Unix()] = true
	}
	if len(seconds) < tables*9/10 {
		t.Errorf("200 tables fall in only %d distinct seconds", len(seconds))
	}
	for m, n := range perMinute {
		if n > 15 { // 200 over 60 minutes is about 3.3 a minute
			t.Errorf("minute %d has %d of 200 inspections", m, n)
		}
	}
}

func TestJitteredBackoff_SpreadsRetriesAndIsStable(t *testing.T) {
	d := 4 * time.Minute
	seconds := map[time.Duration]bool{}
	for i := range 200 {
		key := fmt.Sprintf("uid-%d", i)
		got := jitteredBackoff(d, key, 3)
		if got < d/2 || got >= d {
			t.Fatalf("backoff %s outside [%s, %s)", got, d/2, d)
		}
		if got != jitteredBackoff(d, key, 3) {
			t.Fatal("the same table and attempt must get the same back-off")
		}
		seconds[got.Truncate(time.Second)] = true
	}
	if len(seconds) < 80 { // 200 over the 120 seconds of [2m, 4m): about 97 expected
		t.Errorf("200 failed tables retry in only %d distinct seconds", len(seconds))
	}
}
