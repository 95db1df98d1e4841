package controllers

import (
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/clock"
	"sigs.k8s.io/controller-runtime/pkg/event"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// Admission is the one place that decides whether a worker Job may be created now. Every path that creates
// a worker Job (inspect, policy runs, run-now, ingest triggers, scale-out steps) asks it first:
//
//   - a manager-wide cap on running worker pods (an Indexed Job of parallelism N counts N) and an optional
//     per-namespace one;
//   - a start rate (token bucket), so that a policy slot over 1,000 tables, or 1,000 tables created at once,
//     starts Jobs at a steady pace instead of in one second;
//   - a fair queue of the runs that wait: oldest due first, where ingest triggers and run-now requests
//     (urgent) count as due urgentHeadStart earlier than they are, and a share of the cap (urgentReserve)
//     is kept for them, so inspections never starve them; inspections are never starved either, because a
//     routine run that has waited longer than the head start is ahead of a new urgent one.
//
// Nothing here is remembered across restarts: running Jobs are counted from the Job informer (a restart
// relists them), and waiters re-enter the queue with their due time when their reconcilers look again, so
// the order is recomputed from the objects' status. A waiter that stops asking (its object was deleted, its
// slot was skipped) leaves after waiterTTL.
type Admission struct {
	limits AdmissionLimits
	clock  clock.PassiveClock // real time: pacing and expiry are about the API server's load, not schedules

	mu sync.Mutex
	// running are the live worker Jobs the informer shows; reserved are Jobs admitted but not yet seen.
	running  map[types.NamespacedName]jobSlot
	reserved map[types.NamespacedName]reservation
	// queue holds the waiters in admission order; byKey indexes it.
	queue     []*waiter
	byKey     map[string]*waiter
	tokens    float64
	tokensAt  time.Time
	lastSweep time.Time
	wakeups   map[string]chan event.GenericEvent
}

// AdmissionLimits are the manager's flags.
type AdmissionLimits struct {
	// MaxRunning caps the worker pods of all running Jobs; 0 means no cap.
	MaxRunning int
	// MaxRunningPerNamespace caps them per namespace; 0 means no cap.
	MaxRunningPerNamespace int
	// StartRate is how many Jobs may start per second (0: unpaced); StartBurst how many at once.
	StartRate  float64
	StartBurst int
}

// Defaults of the manager's flags. 20 worker pods at the default requests (250m CPU, 512Mi) are 5 CPUs and
// 10 GiB: a share a shared cluster absorbs, enough to inspect 10,000 tables hourly when an inspection takes
// under a minute (10,000 × 30 s / 3,600 s ≈ 83 Jobs-seconds per second would need ~85; tables set longer
// intervals or the cap is raised). Five starts a second keeps the Job controller and scheduler comfortable.
const (
	DefaultMaxRunningJobs = 20
	DefaultJobStartRate   = 5
	DefaultJobStartBurst  = 10
)

const (
	// urgentHeadStart is how much earlier than its due time an urgent run counts in the queue.
	urgentHeadStart = 10 * time.Minute
	// waiterTTL drops a waiter that has not asked again for this long (queued reconcilers ask at least
	// every two minutes, requeueQueued plus a delay growing with the position, or sooner when woken).
	waiterTTL = 3 * time.Minute
	// reservationTTL frees the capacity of an admitted Job the informer never showed (its create failed).
	reservationTTL = time.Minute
	// requeueQueued is when a queued reconciler looks again if nothing wakes it first.
	requeueQueued = 30 * time.Second
	// wakeDebounce is the least time between two wake-ups of the same waiter.
	wakeDebounce = 2 * time.Second
)

// AdmissionRequest asks to create one worker Job.
type AdmissionRequest struct {
	Job  types.NamespacedName
	Kind JobKind
	// Pods is the Job's parallelism (1 unless Indexed).
	Pods int
	// Due is when the run became due: the inspect time, the schedule slot, the ingest trigger.
	Due time.Time
	// Urgent runs are ingest triggers and run-now requests.
	Urgent bool
	// Owner is the object whose reconciler asks: it is woken when its turn comes.
	Owner Owner
}

// Owner names the object whose reconciler waits: Kind is DeltaTable, OptimizePolicy or StreamIngest.
type Owner struct {
	Kind string
	Key  types.NamespacedName
}

// Queued is the answer to a run that must wait. Position is 1-based among all waiting runs.
type Queued struct {
	Position, Length int
	// RetryAfter is when to ask again if nothing wakes the waiter first.
	RetryAfter time.Duration
	// Since is when the run began to wait.
	Since time.Time
}

func (q *Queued) Error() string { return q.Message() }

// Message is the status text: "queued: position 12 of 340".
func (q *Queued) Message() string {
	return fmt.Sprintf("queued: position %d of %d", roughly(q.Position), roughly(q.Length))
}

// roughly keeps two significant digits of n from 100 on (1,234 → 1,200): every admitted run moves every
// waiter up one place, and 10,000 waiters writing their exact place into status at each look would be
// hundreds of status writes a second while a backlog drains.
func roughly(n int) int {
	if n < 100 {
		return n
	}
	p := 1
	for n/p >= 100 {
		p *= 10
	}
	return n / p * p
}

// Ticket is an admitted Job's claim on capacity. Cancel it when the Job was not created (its table was busy,
// the create failed), so that the capacity goes to the next run at once.
type Ticket struct {
	a   *Admission
	job types.NamespacedName
}

// Cancel releases the claim; a nil ticket (no admission configured) is fine.
func (t *Ticket) Cancel() {
	if t == nil || t.a == nil {
		return
	}
	t.a.mu.Lock()
	_, ok := t.a.reserved[t.job]
	delete(t.a.reserved, t.job)
	t.a.mu.Unlock()
	if ok {
		t.a.wakeHead()
	}
}

type jobSlot struct {
	namespace string
	kind      JobKind
	pods      int
}

type reservation struct {
	jobSlot
	at time.Time
}

type waiter struct {
	key      string
	req      AdmissionRequest
	order    time.Time // Due, minus urgentHeadStart when urgent
	since    time.Time // when it first waited
	seen     time.Time
	lastWake time.Time
}

// NewAdmission returns an admission with limits, on the real clock when clk is nil.
func NewAdmission(limits AdmissionLimits, clk clock.PassiveClock) *Admission {
	if clk == nil {
		clk = clock.RealClock{}
	}
	a := &Admission{
		limits: limits, clock: clk,
		running: map[types.NamespacedName]jobSlot{}, reserved: map[types.NamespacedName]reservation{},
		byKey: map[string]*waiter{}, tokens: float64(max(limits.StartBurst, 1)), tokensAt: clk.Now(),
		wakeups: map[string]chan event.GenericEvent{},
	}
	return a
}

// Admit decides on req: a ticket when the Job may be created now, or a *Queued error with its place in the
// queue. A nil Admission admits everything.
func (a *Admission) Admit(req AdmissionRequest) (*Ticket, error) {
	if a == nil {
		return nil, nil
	}
	req.Pods = max(req.Pods, 1)
	now := a.clock.Now()
	a.mu.Lock()
	a.sweep(now)
	a.refill(now)
	key := req.Job.String()
	w := a.byKey[key]
	// The same Job name is the same run: it keeps the due time it first asked with (an inspection due
	// "now" would otherwise move to the back of the queue at every pass).
	if w == nil || w.req.Urgent != req.Urgent {
		since := now
		if w != nil {
			since = w.since
			a.remove(w)
		}
		w = &waiter{key: key, req: req, order: orderTime(req), since: since}
		a.insert(w)
	}
	w.req.Owner, w.req.Pods, w.req.Kind, w.seen = req.Owner, req.Pods, req.Kind, now
	admitted, ahead := a.evaluate(w)
	if admitted && a.limits.StartRate > 0 && a.tokens < 1 {
		// Its turn, but no token yet: ask again when the next one is earned.
		wait := time.Duration((1 - a.tokens) / a.limits.StartRate * float64(time.Second))
		q := &Queued{Position: a.position(w), Length: len(a.queue), RetryAfter: max(wait, 10*time.Millisecond), Since: w.since}
		a.mu.Unlock()
		return nil, q
	}
	if !admitted {
		// Far from the head, look again less often: the admission wakes the runs whose turn comes.
		pos := a.position(w)
		retry := requeueQueued + time.Duration(min(pos, 900))*100*time.Millisecond
		q := &Queued{Position: pos, Length: len(a.queue), RetryAfter: retry, Since: w.since}
		wake := a.toWake(ahead, now)
		a.mu.Unlock()
		a.send(wake)
		return nil, q
	}
	a.remove(w)
	if a.limits.StartRate > 0 {
		a.tokens--
	}
	a.reserved[req.Job] = reservation{jobSlot: jobSlot{namespace: req.Job.Namespace, kind: req.Kind, pods: req.Pods}, at: now}
	a.mu.Unlock()
	a.wakeHead() // the next runs in line move up
	return &Ticket{a: a, job: req.Job}, nil
}

// Forget drops job's waiter, for a run that no longer wants to start (skipped, deleted).
func (a *Admission) Forget(job types.NamespacedName) {
	if a == nil {
		return
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if w := a.byKey[job.String()]; w != nil {
		a.remove(w)
	}
}

// Status is the queue's place in an object's status.
func (q *Queued) Status(runs int) *deltav1.QueueStatus {
	if q == nil {
		return nil
	}
	return &deltav1.QueueStatus{Position: int32(roughly(q.Position)), Length: int32(roughly(q.Length)), Runs: int32(runs),
		Since: &metav1.Time{Time: q.Since.Truncate(time.Second).UTC()}}
}

func orderTime(req AdmissionRequest) time.Time {
	if req.Urgent {
		return req.Due.Add(-urgentHeadStart)
	}
	return req.Due
}

func less(a, b *waiter) int {
	if c := a.order.Compare(b.order); c != 0 {
		return c
	}
	return strings.Compare(a.key, b.key)
}

func (a *Admission) insert(w *waiter) {
	i, _ := slices.BinarySearchFunc(a.queue, w, less)
	a.queue = slices.Insert(a.queue, i, w)
	a.byKey[w.key] = w
}

func (a *Admission) remove(w *waiter) {
	if i, ok := slices.BinarySearchFunc(a.queue, w, less); ok {
		a.queue = slices.Delete(a.queue, i, i+1)
	}
	delete(a.byKey, w.key)
}

func (a *Admission) position(w *waiter) int {
	i, _ := slices.BinarySearchFunc(a.queue, w, less)
	return i + 1
}

// usage is the worker pods running or admitted, in all and per namespace.
func (a *Admission) usage() (int, map[string]int) {
	total, byNS := 0, map[string]int{}
	for _, s := range a.running {
		total += s.pods
		byNS[s.namespace] += s.pods
	}
	for _, r := range a.reserved {
		total += r.pods
		byNS[r.namespace] += r.pods
	}
	return total, byNS
}

// evaluate walks the queue from its head, handing the free capacity out in order, and reports whether
// target gets some; ahead are the waiters before it that would get capacity first (to be woken). Without a
// target it returns the waiters that would get capacity now. A run that does not fit the cap blocks the
// runs behind it (no backfilling, so an Indexed Job of many pods is not starved by small ones); a routine
// run held back by the urgent reserve blocks only routine runs; a run whose namespace is full blocks nobody.
func (a *Admission) evaluate(target *waiter) (bool, []*waiter) {
	used, byNS := a.usage()
	maxPods, nsCap := a.limits.MaxRunning, a.limits.MaxRunningPerNamespace
	routineCap := maxPods - maxPods/5 // urgentReserve: a fifth of the cap is kept for ingest and run-now
	starts := -1                      // starts the tokens allow now; -1: unpaced
	if a.limits.StartRate > 0 {
		starts = int(a.tokens)
		if target == nil && starts == 0 {
			starts = 1 // wake the head: it learns when its token comes
		}
	}
	var ahead []*waiter
	routineBlocked := false
	for _, w := range a.queue {
		if starts >= 0 && len(ahead) >= starts && (target == nil || len(ahead) > 0) {
			// The tokens go to the runs ahead first; a lone head run waits for its token in Admit.
			return false, ahead
		}
		need := w.req.Pods
		if maxPods > 0 {
			need = min(need, maxPods)
		}
		if nsCap > 0 && byNS[w.req.Job.Namespace]+min(need, nsCap) > nsCap {
			continue
		}
		if !w.req.Urgent && (routineBlocked || maxPods > 0 && used+need > routineCap) {
			routineBlocked = true
			continue
		}
		if maxPods > 0 && used+need > maxPods {
			return false, ahead
		}
		if w == target {
			return true, ahead
		}
		used += need
		byNS[w.req.Job.Namespace] += need
		ahead = append(ahead, w)
	}
	return false, ahead
}

// refill adds the tokens earned since the last call.
func (a *Admission) refill(now time.Time) {
	if a.limits.StartRate <= 0 {
		return
	}
	burst := float64(max(a.limits.StartBurst, 1))
	a.tokens = min(burst, a.tokens+now.Sub(a.tokensAt).Seconds()*a.limits.StartRate)
	a.tokensAt = now
}

// sweep drops waiters that stopped asking and reservations whose Job never appeared.
func (a *Admission) sweep(now time.Time) {
	if now.Sub(a.lastSweep) < 10*time.Second {
		return
	}
	a.lastSweep = now
	a.queue = slices.DeleteFunc(a.queue, func(w *waiter) bool {
		if now.Sub(w.seen) > waiterTTL {
			delete(a.byKey, w.key)
			return true
		}
		return false
	})
	for k, r := range a.reserved {
		if now.Sub(r.at) > reservationTTL {
			delete(a.reserved, k)
		}
	}
}
