package controllers

import (
	"strings"
	"testing"
	"time"

	clocktesting "k8s.io/utils/clock/testing"
)

func mustSchedule(t *testing.T, expr, tz string) *Schedule {
	t.Helper()
	s, err := ParseSchedule(expr, tz)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestParseSchedule_RejectsWhatCronJobRejects(t *testing.T) {
	for _, tc := range []struct{ expr, tz, want string }{
		{"0 3 * * * *", "UTC", "6 fields"},
		{"@hourly", "UTC", "1 fields"},
		{"CRON_TZ=Europe/Berlin 0 3 * * *", "UTC", "TZ="},
		{"0 25 * * *", "UTC", "schedule"},
		{"0 3 * * *", "Mars/Olympus", "not an IANA time zone"},
	} {
		if _, err := ParseSchedule(tc.expr, tc.tz); err == nil || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("ParseSchedule(%q, %q) = %v, want an error about %q", tc.expr, tc.tz, err, tc.want)
		}
	}
	if _, err := ParseSchedule("0 3 * * *", ""); err != nil {
		t.Errorf("empty time zone means UTC: %v", err)
	}
}

func TestScheduleNext_HandlesDaylightSavingLikeCron(t *testing.T) {
	berlin, _ := time.LoadLocation("Europe/Berlin")
	at := func(y int, m time.Month, d, h, min int) time.Time { return time.Date(y, m, d, h, min, 0, 0, berlin) }
	tests := []struct {
		name, expr string
		from       time.Time
		want       []time.Time
	}{
		{
			name: "spring forward: 02:30 does not exist on 29 March, the slot runs at 03:00",
			expr: "30 2 * * *", from: at(2026, 3, 28, 12, 0),
			want: []time.Time{at(2026, 3, 29, 3, 0), at(2026, 3, 30, 2, 30)},
		},
		{
			name: "fall back: 02:30 happens twice on 25 October, the slot runs once",
			expr: "30 2 * * *", from: at(2026, 10, 24, 12, 0),
			want: []time.Time{time.Date(2026, 10, 25, 0, 30, 0, 0, time.UTC), at(2026, 10, 26, 2, 30)},
		},
		{
			name: "slots outside the change are untouched",
			expr: "0 3 * * *", from: at(2026, 3, 28, 12, 0),
			want: []time.Time{at(2026, 3, 29, 3, 0), at(2026, 3, 30, 3, 0)},
		},
		{
			name: "interval schedules keep real-time intervals through the overlap",
			expr: "0 * * * *", from: at(2026, 10, 25, 1, 30),
			want: []time.Time{
				time.Date(2026, 10, 24, 23, 59, 59, 0, time.UTC).Add(time.Second), // 02:00 CEST
				time.Date(2026, 10, 25, 1, 0, 0, 0, time.UTC),                     // 02:00 CET
				time.Date(2026, 10, 25, 2, 0, 0, 0, time.UTC),                     // 03:00 CET
			},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := mustSchedule(t, tc.expr, "Europe/Berlin")
			at := tc.from
			for i, want := range tc.want {
				at = s.Next(at)
				if !at.Equal(want) {
					t.Fatalf("slot %d = %s (%s), want %s", i, at, at.In(berlin), want.In(berlin))
				}
			}
		})
	}
	if got := mustSchedule(t, "0 0 30 2 *", "Europe/Berlin").Next(at(2026, 1, 1, 0, 0)); !got.IsZero() {
		t.Errorf("30 February fired at %s", got)
	}
}

func TestSchedulePlan_CatchesUpOnceAndRespectsTheDeadline(t *testing.T) {
	daily := mustSchedule(t, "0 3 * * *", "UTC")
	day := func(d, h, m int) time.Time { return time.Date(2026, 5, d, h, m, 0, 0, time.UTC) }
	dur := func(d time.Duration) *time.Duration { return &d }
	tests := []struct {
		name     string
		sched    *Schedule
		last     time.Time
		now      time.Time
		deadline *time.Duration
		want     SlotPlan
	}{
		{
			name: "before the first slot: nothing due, next slot",
			last: day(20, 10, 0), now: day(20, 23, 0),
			want: SlotPlan{Next: day(21, 3, 0)},
		},
		{
			name: "slot just passed: run it",
			last: day(20, 3, 0), now: day(21, 3, 0),
			want: SlotPlan{Due: day(21, 3, 0), Run: true, Next: day(22, 3, 0)},
		},
		{
			name: "manager down for three slots: run only the latest, record the one before as skipped",
			last: day(18, 3, 0), now: day(21, 9, 0),
			want: SlotPlan{Due: day(21, 3, 0), Run: true, Skipped: day(20, 3, 0), Missed: 2, Next: day(22, 3, 0)},
		},
		{
			name: "late within startingDeadlineSeconds: run",
			last: day(20, 3, 0), now: day(21, 3, 4), deadline: dur(5 * time.Minute),
			want: SlotPlan{Due: day(21, 3, 0), Run: true, Next: day(22, 3, 0)},
		},
		{
			name: "later than startingDeadlineSeconds: skip",
			last: day(20, 3, 0), now: day(21, 3, 6), deadline: dur(5 * time.Minute),
			want: SlotPlan{Due: day(21, 3, 0), Skipped: day(21, 3, 0), Missed: 1, Next: day(22, 3, 0)},
		},
		{
			name:  "too many missed slots (every minute, a year): jump, run the latest",
			sched: mustSchedule(t, "* * * * *", "UTC"),
			last:  time.Date(2025, 5, 21, 0, 0, 0, 0, time.UTC), now: day(21, 9, 30),
			want: SlotPlan{Due: day(21, 9, 30), Run: true, Skipped: day(21, 9, 29), TooMany: true, Next: day(21, 9, 31)},
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			s := tc.sched
			if s == nil {
				s = daily
			}
			clk := clocktesting.NewFakePassiveClock(tc.now)
			got := s.Plan(tc.last, clk.Now(), tc.deadline)
			if tc.want.TooMany {
				got.Missed = 0 // approximate once the walk jumped
			}
			if got != tc.want {
				t.Errorf("Plan =\n%+v\nwant\n%+v", got, tc.want)
			}
		})
	}
}

func TestSchedulePlan_IsStableAcrossRetries(t *testing.T) {
	s := mustSchedule(t, "*/15 * * * *", "America/New_York")
	clk := clocktesting.NewFakeClock(time.Date(2026, 11, 1, 5, 50, 0, 0, time.UTC)) // 01:50 EDT, before fall-back
	last := time.Date(2026, 11, 1, 5, 0, 0, 0, time.UTC)
	first := s.Plan(last, clk.Now(), nil)
	clk.Step(2 * time.Second) // a retried reconcile a moment later decides the same slot
	if again := s.Plan(last, clk.Now(), nil); again.Due != first.Due || !first.Run {
		t.Errorf("plans differ: %+v vs %+v", first, again)
	}
	if first.Skipped.IsZero() || first.Missed != 2 {
		t.Errorf("three slots passed since last, two must be skipped: %+v", first)
	}
}
