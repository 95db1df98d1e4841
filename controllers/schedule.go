package controllers

import (
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"strconv"
	"strings"
	"time"
	_ "time/tzdata" // time zones must resolve in a distroless image without /usr/share/zoneinfo

	"github.com/robfig/cron/v3"
)

// Schedule is a standard 5-field cron schedule (minute hour day-of-month month day-of-week) evaluated in an
// IANA time zone, as Kubernetes CronJob evaluates it, with cron's (cronie's) daylight-saving rule for
// schedules at fixed hours (see Next).
type Schedule struct {
	spec cron.Schedule
	loc  *time.Location
	// fixedHours is true when the hour field names hours ("3", "1-4", "2,14") rather than "*" or a step:
	// such a schedule means wall-clock times, others mean intervals of real time.
	fixedHours bool
}

// ParseSchedule parses a policy's schedule and time zone. The API's CEL rules reject most mistakes; this is
// the same check for objects that predate them, and the only check of the time zone's existence.
func ParseSchedule(expr, timeZone string) (*Schedule, error) {
	if strings.Contains(expr, "TZ=") {
		return nil, fmt.Errorf("schedule %q must not contain TZ= or CRON_TZ=: set spec.timeZone instead", expr)
	}
	fields := strings.Fields(expr)
	if len(fields) != 5 {
		return nil, fmt.Errorf("schedule %q has %d fields, want 5 (minute hour day-of-month month day-of-week), e.g. '0 3 * * *'", expr, len(fields))
	}
	if timeZone == "" {
		timeZone = "UTC"
	}
	loc, err := time.LoadLocation(timeZone)
	if err != nil {
		return nil, fmt.Errorf("timeZone %q is not an IANA time zone (e.g. Europe/Berlin): %w", timeZone, err)
	}
	spec, err := cron.ParseStandard(expr)
	if err != nil {
		return nil, fmt.Errorf("schedule %q: %w", expr, err)
	}
	return &Schedule{spec: spec, loc: loc, fixedHours: !strings.ContainsAny(fields[1], "*/?")}, nil
}

// Next returns the first slot strictly after t, in UTC; zero if the schedule never fires (e.g. 30 February).
//
// Daylight saving, for schedules at fixed hours ("30 2 * * *"): when the clocks go forward, a slot whose
// wall-clock time does not exist that night runs at the end of the gap (03:00) instead of not at all; when
// they go back, a wall-clock time that occurs twice runs once. Plain robfig/cron (and Kubernetes CronJob)
// skip the first and run the second twice. Schedules with "*" or a step in the hour field are intervals of
// real time and are left alone.
func (s *Schedule) Next(t time.Time) time.Time {
	next := s.spec.Next(t.In(s.loc))
	if !s.fixedHours {
		return next.UTC()
	}
	if gap := s.gapSlot(t, next); !gap.IsZero() {
		return gap.UTC()
	}
	if next.IsZero() {
		return next
	}
	prev := t.In(s.loc)
	if sameWallClock(prev, next) && s.spec.Next(prev.Add(-time.Minute)).Equal(prev) {
		// t is itself a slot and next repeats its wall-clock time: the second pass through a DST overlap.
		next = s.spec.Next(next)
	}
	return next.UTC()
}

// gapSlot returns the end of a spring-forward gap in (t, next) when the schedule has a slot inside the gap
// (a wall-clock time that does not exist), else zero.
func (s *Schedule) gapSlot(t, next time.Time) time.Time {
	if next.IsZero() {
		return time.Time{}
	}
	// A slot is at most a year after t (monthly and yearly schedules); two transitions a year, so a few
	// iterations cover it.
	for at, i := t.In(s.loc), 0; i < 8; i++ {
		_, end := at.ZoneBounds()
		if end.IsZero() || !end.Before(next) {
			return time.Time{}
		}
		_, before := end.Add(-time.Nanosecond).Zone()
		_, after := end.Zone()
		if after > before && end.After(t) {
			// In the zone in force before the change, the gap's wall-clock hours are the instants
			// [end, end+gap): a slot there is one the night skips.
			fixed := time.FixedZone("before", before)
			from := t
			if end.Add(-time.Nanosecond).After(from) {
				from = end.Add(-time.Nanosecond)
			}
			if c := s.spec.Next(from.In(fixed)); !c.IsZero() && c.Before(end.Add(time.Duration(after-before)*time.Second)) {
				return end
			}
		}
		at = end
	}
	return time.Time{}
}

func sameWallClock(a, b time.Time) bool {
	return a.Format("2006-01-02 15:04") == b.Format("2006-01-02 15:04") && !a.Equal(b)
}

// maxMissedIteration bounds the walk over missed slots; past it the walk jumps close to now.
const maxMissedIteration = 100

// SlotPlan is what a schedule asks for at a given moment.
type SlotPlan struct {
	// Due is the latest slot in (last, now]; zero when none.
	Due time.Time
	// Run is true when Due should start now; false when it is too late (startingDeadlineSeconds).
	Run bool
	// Skipped is the latest slot that will never run (earlier missed slots, or Due itself when too late).
	Skipped time.Time
	// Missed counts the slots in (last, now] that will not run; TooMany when the walk gave up counting.
	Missed  int
	TooMany bool
	// Next is the first slot after now.
	Next time.Time
}

// Plan decides which slot, if any, runs at now, given the last slot handled. At most one missed slot is
// caught up, the latest; it is skipped too when it is older than the starting deadline. The plan is a pure
// function of its inputs, so a reconcile that is retried after a failed status write decides the same.
func (s *Schedule) Plan(last, now time.Time, deadline *time.Duration) SlotPlan {
	var plan SlotPlan
	var prev, latest time.Time
	count := 0
	for t := s.Next(last); !t.IsZero() && !t.After(now); t = s.Next(t) {
		prev, latest = latest, t
		count++
		if count == maxMissedIteration && !prev.IsZero() {
			// Manager down for long, or the policy suspended for months with a frequent schedule: jump to a
			// few periods before now instead of walking every slot.
			if from := now.Add(-3 * latest.Sub(prev)); from.After(latest) {
				plan.TooMany = true
				t = from
			}
		}
	}
	after := now
	if last.After(now) {
		after = last
	}
	plan.Next = s.Next(after)
	if latest.IsZero() {
		return plan
	}
	plan.Due = latest
	plan.Missed = count - 1
	if count > 1 {
		plan.Skipped = prev
	}
	if deadline != nil && now.Sub(latest) > *deadline {
		plan.Skipped = latest
		plan.Missed++
		return plan
	}
	plan.Run = true
	return plan
}

// Spreading. A fleet's tables are usually created together (one kubectl apply, one GitOps sync), so plain
// "last + interval" keeps their inspections due in the same second forever, and a failing bucket makes all
// its tables retry together. The functions below spread them deterministically: the same table always gets
// the same offsets (a retried reconcile decides the same, and a restart changes nothing), different tables
// get different ones.

// spreadFraction maps key to a fixed value in [0, 1): the top 53 bits of its SHA-256 (FNV's high bits barely
// change between keys that differ in their last characters, such as UIDs and numbered names).
func spreadFraction(key string) float64 {
	sum := sha256.Sum256([]byte(key))
	return float64(binary.BigEndian.Uint64(sum[:8])>>11) / (1 << 53)
}

// phaseDue returns the first instant at or after earliest that falls on key's phase of interval: the
// instants phase + k·interval (from the Unix epoch), phase = spreadFraction(key)·interval. Tables whose
// inspections fall due together are thus spread evenly over the interval after one cycle, and stay spread.
func phaseDue(earliest time.Time, interval time.Duration, key string) time.Time {
	if interval <= 0 {
		return earliest
	}
	phase := int64(spreadFraction(key) * float64(interval))
	r := (earliest.UnixNano() - phase) % int64(interval)
	if r < 0 {
		r += int64(interval)
	}
	if r == 0 {
		return earliest
	}
	return earliest.Add(interval - time.Duration(r))
}

// jitteredBackoff spreads a back-off d over [d/2, d) ("equal jitter"), fixed per key and attempt.
func jitteredBackoff(d time.Duration, key string, attempt int32) time.Duration {
	if d <= 0 {
		return d
	}
	return d/2 + time.Duration(spreadFraction(key+"/"+strconv.Itoa(int(attempt)))*float64(d/2))
}
