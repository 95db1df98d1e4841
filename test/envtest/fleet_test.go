package envtest

import (
	"context"
	"fmt"
	"net/http"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	eventsv1 "k8s.io/api/events/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/client-go/rest"
	clocktesting "k8s.io/utils/clock/testing"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/controllers"
)

// Fleet behaviour: the admission cap and queue, spread-out inspections, and the API calls a schedule slot
// makes, against the real API server.

// apiCounter counts the manager's API responses by "METHOD resource status".
type apiCounter struct {
	mu     sync.Mutex
	counts map[string]int
	next   http.RoundTripper
}

func (c *apiCounter) RoundTrip(req *http.Request) (*http.Response, error) {
	resp, err := c.next.RoundTrip(req)
	if err == nil {
		key := fmt.Sprintf("%s %s %d", req.Method, resourceOf(req.URL.Path), resp.StatusCode)
		c.mu.Lock()
		c.counts[key]++
		c.mu.Unlock()
	}
	return resp, err
}

// resourceOf names the resource of an API path: /apis/events.k8s.io/v1/namespaces/ns/events/x → events.
func resourceOf(path string) string {
	parts := strings.Split(strings.Trim(path, "/"), "/")
	if i := slices.Index(parts, "namespaces"); i >= 0 && i+2 < len(parts) {
		return parts[i+2]
	}
	if len(parts) > 0 {
		return parts[len(parts)-1]
	}
	return path
}

func (c *apiCounter) get(key string) int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.counts[key]
}

// matching sums the counts whose key matches pred.
func (c *apiCounter) matching(pred func(method, resource string, code int) bool) (int, string) {
	c.mu.Lock()
	defer c.mu.Unlock()
	n, seen := 0, []string{}
	for k, v := range c.counts {
		var method, resource string
		var code int
		if _, err := fmt.Sscanf(k, "%s %s %d", &method, &resource, &code); err == nil && pred(method, resource, code) {
			n += v
			seen = append(seen, fmt.Sprintf("%s ×%d", k, v))
		}
	}
	slices.Sort(seen)
	return n, strings.Join(seen, ", ")
}

// countingManager starts a manager whose API calls are counted.
func countingManager(t *testing.T, tune func(*controllers.Config)) (string, *clocktesting.FakeClock, *apiCounter) {
	t.Helper()
	ns := newNamespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	counter := &apiCounter{counts: map[string]int{}}
	restCfg := rest.CopyConfig(cfg)
	restCfg.Wrap(func(rt http.RoundTripper) http.RoundTripper { counter.next = rt; return counter })
	startManagerWith(t, []string{ns}, ns, clk, restCfg, tune)
	return ns, clk, counter
}

// With 100 policies, each schedule slot produced 27 event POSTs answered 409 and 27 PATCHes answered 404: a
// policy whose slot waits on several tables queued one Waiting event per table, all with the same reason,
// action and no related object, which the events.k8s.io recorder takes for one series. The second event
// became a PATCH of the first before the first's POST had landed (404), then a POST of the same name (409),
// and its note was lost. The reconciler now joins such notes into one event.
func TestFleet_ScheduleSlotSendsNoRejectedEventsAndLosesNoNote(t *testing.T) {
	ns, clk, counter := countingManager(t, nil)
	tier := map[string]string{"tier": "gold"}
	var names []string
	for i := range 6 {
		name := fmt.Sprintf("t%d", i)
		newTable(t, ns, name, tier) // never inspected: the slot waits on every table
		names = append(names, name)
	}
	p := newPolicy(t, ns, "every-minute", deltav1.OptimizePolicySpec{
		Targets: deltav1.PolicyTargets{Selector: &metav1.LabelSelector{MatchLabels: tier}}, Schedule: "* * * * *",
	})
	stepToNextSlot(t, clk, p, time.Second)
	eventually(t, "one Waiting event naming every table", func() (bool, string) {
		var list eventsv1.EventList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, e := range list.Items {
			if e.Regarding.Name == p.Name && e.Reason == controllers.EventWaiting {
				for _, n := range names {
					if !strings.Contains(e.Note, "table "+n+" ") {
						return false, "note misses " + n + ": " + e.Note
					}
				}
				return true, ""
			}
		}
		return false, fmt.Sprintf("%d events", len(list.Items))
	})
	// The recorder sends asynchronously: give a late PATCH or POST the time to show.
	consistently(t, "no event POST answered 409 and no PATCH answered 404", 2*time.Second, func() (bool, string) {
		n, seen := counter.matching(func(method, resource string, code int) bool {
			return method == http.MethodPatch && code == http.StatusNotFound ||
				resource == "events" && code == http.StatusConflict
		})
		return n == 0, seen
	})
	if counter.get("POST events 201") == 0 {
		t.Fatal("the counter saw no event POSTs: it does not see the manager's requests")
	}
}

// liveInspectJobs lists the namespace's live inspect Jobs.
func liveInspectJobs(t *testing.T, ns string) []batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns),
		client.MatchingLabels{deltav1.LabelOperation: "inspect"}); err != nil {
		t.Fatal(err)
	}
	live := liveJobs(list.Items)
	return slices.DeleteFunc(list.Items, func(j batchv1.Job) bool { return !slices.Contains(live, j.Name) })
}

// queuePositions reads the tables' status.queue: table → position, and the lengths they report.
func queuePositions(t *testing.T, ns string) (map[string]int32, map[int32]bool) {
	t.Helper()
	var list deltav1.DeltaTableList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	pos, lengths := map[string]int32{}, map[int32]bool{}
	for _, tb := range list.Items {
		if q := tb.Status.Queue; q != nil {
			pos[tb.Name] = q.Position
			lengths[q.Length] = true
		}
	}
	return pos, lengths
}

func TestFleet_CapHoldsAndTheHeadOfTheQueueStartsNext(t *testing.T) {
	const tables, maxRunning = 12, 3
	ns, clk, _ := countingManager(t, func(c *controllers.Config) { c.Admission.MaxRunning = maxRunning })
	var all []*deltav1.DeltaTable
	for i := range tables {
		all = append(all, newTable(t, ns, fmt.Sprintf("t%02d", i), nil))
	}
	eventually(t, "three inspections running and nine queued", func() (bool, string) {
		live := liveInspectJobs(t, ns)
		pos, _ := queuePositions(t, ns)
		return len(live) == maxRunning && len(pos) == tables-maxRunning, fmt.Sprintf("%d live, %d queued", len(live), len(pos))
	})
	finished := 0
	for finished < tables {
		var head string
		waiting := tables - finished - maxRunning
		if waiting > 0 {
			polls := 0
			eventually(t, "positions 1…n of n in the queued tables' status", func() (bool, string) {
				// Make every table look again, so that the positions in the statuses become current.
				if polls%20 == 0 {
					for _, tb := range all {
						poke(t, tb)
					}
				}
				polls++
				pos, lengths := queuePositions(t, ns)
				var got []int
				for name, p := range pos {
					got = append(got, int(p))
					if p == 1 {
						head = name
					}
				}
				slices.Sort(got)
				want := make([]int, waiting)
				for i := range want {
					want[i] = i + 1
				}
				return slices.Equal(got, want) && len(lengths) == 1 && lengths[int32(waiting)], fmt.Sprintf("positions %v, lengths %v", got, lengths)
			})
			var tb deltav1.DeltaTable
			if err := k8sClient.Get(context.Background(), client.ObjectKey{Namespace: ns, Name: head}, &tb); err != nil {
				t.Fatal(err)
			}
			if msg := condition(tb.Status.Conditions, deltav1.ConditionReady); !strings.Contains(msg, fmt.Sprintf("queued: position 1 of %d", waiting)) {
				t.Fatalf("Ready of the head table %s = %q, want its queue position", head, msg)
			}
			if finished == 0 {
				// kubectl deltakeeper explain says where the table waits, and why nothing runs on it yet.
				wantLines(t, "explain a queued table", mustPlugin(t, ns, "explain", head),
					fmt.Sprintf("the table's next Job is queued for a worker Job slot: position 1 of %d", waiting),
					"--max-running-jobs")
			}
		}
		live := liveInspectJobs(t, ns)
		if len(live) > maxRunning {
			t.Fatalf("%d inspect Jobs run, above the cap of %d", len(live), maxRunning)
		}
		job := live[0]
		finishJob(t, clk, &job, 0, encode(t, inspectResult(1, 10, 0)))
		finished++
		if head == "" {
			continue
		}
		eventually(t, "the head of the queue, "+head+", starts next", func() (bool, string) {
			live := liveInspectJobs(t, ns)
			var on []string
			for _, j := range live {
				on = append(on, j.Annotations[deltav1.AnnotationTable])
			}
			return len(live) == maxRunning && slices.Contains(on, head), fmt.Sprintf("running on %v", on)
		})
	}
	eventually(t, "every table inspected and none queued", func() (bool, string) {
		var list deltav1.DeltaTableList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		for _, tb := range list.Items {
			if tb.Status.LastInspectedTime == nil || tb.Status.Queue != nil {
				return false, tb.Name + " not done"
			}
		}
		return true, ""
	})
}

func TestFleet_InspectionsOf200TablesDueTogetherAreSpreadOverTheInterval(t *testing.T) {
	const tables = 200
	ns, clk, _ := countingManager(t, func(c *controllers.Config) { c.Admission.MaxRunning, c.Admission.StartRate = -1, -1 })
	for i := range tables {
		tb := &deltav1.DeltaTable{ObjectMeta: metav1.ObjectMeta{Name: fmt.Sprintf("t%03d", i), Namespace: ns},
			Spec: deltav1.DeltaTableSpec{Location: fmt.Sprintf("s3://lake/t%03d", i), InspectInterval: &metav1.Duration{Duration: time.Hour}}}
		if err := k8sClient.Create(context.Background(), tb); err != nil {
			t.Fatal(err)
		}
	}
	// Every table's first inspection ends in the same second.
	done := map[string]bool{}
	eventuallyWithin(t, 5*time.Minute, "200 first inspections finished", func() (bool, string) {
		for _, j := range liveInspectJobs(t, ns) {
			if !done[j.Name] {
				finishJob(t, clk, &j, 0, encode(t, inspectResult(1, 10, 0)))
				done[j.Name] = true
			}
		}
		return len(done) == tables, fmt.Sprintf("%d finished", len(done))
	})
	inspected := clk.Now()
	var next []time.Time
	eventuallyWithin(t, 5*time.Minute, "every table has its next inspection time", func() (bool, string) {
		var list deltav1.DeltaTableList
		if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns)); err != nil {
			return false, err.Error()
		}
		next = next[:0]
		for _, tb := range list.Items {
			if tb.Status.NextInspectTime != nil {
				next = append(next, tb.Status.NextInspectTime.Time)
			}
		}
		return len(next) == tables, fmt.Sprintf("%d of %d", len(next), tables)
	})
	seconds, perFiveMinutes := map[int64]bool{}, map[int64]int{}
	for _, n := range next {
		if n.Before(inspected.Add(29*time.Minute)) || n.After(inspected.Add(91*time.Minute)) {
			t.Errorf("next inspection %s is not within half and one and a half intervals after %s", n, inspected)
		}
		seconds[n.Unix()] = true
		perFiveMinutes[n.Unix()/300]++
	}
	if len(seconds) < tables*9/10 {
		t.Errorf("200 tables inspected together are next due in only %d distinct seconds", len(seconds))
	}
	for bucket, n := range perFiveMinutes {
		if n > 40 { // 200 over an hour is about 17 per five minutes
			t.Errorf("%d of 200 inspections fall in the five minutes from %s", n, time.Unix(bucket*300, 0).UTC())
		}
	}
}

func TestFleet_ARestartedManagerRecountsRunningJobsAndQueuesAgain(t *testing.T) {
	const maxRunning = 2
	ns := newNamespace(t)
	clk := clocktesting.NewFakeClock(time.Now())
	capped := func(c *controllers.Config) { c.Admission.MaxRunning = maxRunning }
	stop := startManagerWith(t, []string{ns}, ns, clk, cfg, capped)
	for i := range 5 {
		newTable(t, ns, fmt.Sprintf("t%d", i), nil)
	}
	eventually(t, "two inspections running and three queued", func() (bool, string) {
		live := liveInspectJobs(t, ns)
		pos, _ := queuePositions(t, ns)
		return len(live) == maxRunning && len(pos) == 3, fmt.Sprintf("%d live, %d queued", len(live), len(pos))
	})
	stop()
	// A new manager remembers nothing: it counts the two live Jobs from the API server and starts no third.
	startManagerWith(t, []string{ns}, ns, clk, cfg, capped)
	var all deltav1.DeltaTableList
	if err := k8sClient.List(context.Background(), &all, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	pokeAll := func() {
		for i := range all.Items {
			poke(t, &all.Items[i])
		}
	}
	// Every table reconciles under the new manager and queues again; the first to queue saw a shorter queue,
	// so keep poking until every status is current.
	polls := 0
	eventually(t, "the queued tables report their place again", func() (bool, string) {
		if polls%20 == 0 {
			pokeAll()
		}
		polls++
		pos, lengths := queuePositions(t, ns)
		var got []int
		for _, p := range pos {
			got = append(got, int(p))
		}
		slices.Sort(got)
		return slices.Equal(got, []int{1, 2, 3}) && len(lengths) == 1 && lengths[3], fmt.Sprintf("positions %v, lengths %v", got, lengths)
	})
	consistently(t, "no more than two inspections run", time.Second, func() (bool, string) {
		live := liveInspectJobs(t, ns)
		return len(live) <= maxRunning, fmt.Sprintf("%d live", len(live))
	})
	live := liveInspectJobs(t, ns)
	finishJob(t, clk, &live[0], 0, encode(t, inspectResult(1, 10, 0)))
	eventually(t, "the freed slot goes to a queued table", func() (bool, string) {
		live := liveInspectJobs(t, ns)
		pos, _ := queuePositions(t, ns)
		return len(live) == maxRunning && len(pos) == 2, fmt.Sprintf("%d live, %d queued", len(live), len(pos))
	})
}

// eventuallyWithin is eventually with a longer deadline, for tests of hundreds of objects on a loaded machine.
func eventuallyWithin(t *testing.T, d time.Duration, what string, cond func() (bool, string)) {
	t.Helper()
	last := ""
	for deadline := time.Now().Add(d); time.Now().Before(deadline); time.Sleep(100 * time.Millisecond) {
		ok, msg := cond()
		if ok {
			return
		}
		last = msg
	}
	t.Fatalf("timed out waiting for %s; last: %s", what, last)
}
