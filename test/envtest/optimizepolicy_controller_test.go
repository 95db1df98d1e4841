package envtest

import (
	"context"
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	clocktesting "k8s.io/utils/clock/testing"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

func newPolicy(t *testing.T, ns, name string, spec deltav1.OptimizePolicySpec) *deltav1.OptimizePolicy {
	t.Helper()
	p := &deltav1.OptimizePolicy{ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns}, Spec: spec}
	if err := k8sClient.Create(context.Background(), p); err != nil {
		t.Fatal(err)
	}
	return p
}

// stepToNextSlot moves the clock just past the policy's next slot and pokes the policy; it returns the slot.
func stepToNextSlot(t *testing.T, clk *clocktesting.FakeClock, p *deltav1.OptimizePolicy, late time.Duration) time.Time {
	t.Helper()
	got := waitPolicy(t, p, "has a next slot", func(p *deltav1.OptimizePolicy) (bool, string) {
		return p.Status.NextScheduleTime != nil && p.Status.NextScheduleTime.After(clk.Now()), fmt.Sprintf("%+v", p.Status)
	})
	slot := got.Status.NextScheduleTime.Time
	clk.SetTime(slot.Add(late))
	poke(t, p)
	return slot
}

func policyJobs(t *testing.T, ns, policy string) []batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(ns), client.MatchingLabels{deltav1.LabelPolicy: policy}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

func TestOptimizePolicy_RunsTablesWhoseTriggersAreCrossedOnSchedule(t *testing.T) {
	_, ns, clk := controllerTest(t)
	gold := map[string]string{"tier": "gold"}
	inspectTable(t, clk, ns, "a", gold, 60)
	inspectTable(t, clk, ns, "b", gold, 5)
	inspectTable(t, clk, ns, "c", map[string]string{"tier": "bronze"}, 500)
	p := newPolicy(t, ns, "nightly", deltav1.OptimizePolicySpec{
		Targets:  deltav1.PolicyTargets{TableNames: []string{"gone"}, Selector: &metav1.LabelSelector{MatchLabels: gold}},
		Schedule: "*/5 * * * *",
	})
	got := waitPolicy(t, p, "resolved its targets", func(p *deltav1.OptimizePolicy) (bool, string) {
		return p.Status.NumTargets == 2 && p.Status.ObservedGeneration == p.Generation, fmt.Sprintf("%+v", p.Status)
	})
	if ready := condition(got.Status.Conditions, deltav1.ConditionReady); !strings.HasPrefix(ready, "False/TargetNotFound") || !strings.Contains(ready, "gone") {
		t.Errorf("Ready = %q, want TargetNotFound naming the missing table", ready)
	}
	waitEvent(t, ns, "nightly", "TargetNotFound", "gone")
	if jobs := policyJobs(t, ns, "nightly"); len(jobs) != 0 {
		t.Fatalf("Jobs before the first slot: %d", len(jobs))
	}

	slot := stepToNextSlot(t, clk, p, time.Second)
	job := waitLiveJob(t, ns, "a", "maintain")
	if job.Labels[deltav1.LabelPolicy] != "nightly" || job.OwnerReferences[0].Kind != "OptimizePolicy" ||
		!slices.Contains(job.Spec.Template.Spec.Containers[0].Args, "--optimize") ||
		job.Annotations[deltav1.AnnotationTrigger] != "SmallFiles" {
		t.Errorf("maintenance Job = labels %v owner %v args %v annotations %v", job.Labels, job.OwnerReferences,
			job.Spec.Template.Spec.Containers[0].Args, job.Annotations)
	}
	got = waitPolicy(t, p, "records the slot", func(p *deltav1.OptimizePolicy) (bool, string) {
		return p.Status.LastScheduleTime != nil && p.Status.LastScheduleTime.Time.Equal(slot) && len(p.Status.Active) == 1, fmt.Sprintf("%+v", p.Status)
	})
	if !got.Status.NextScheduleTime.Time.Equal(slot.Add(5 * time.Minute)) {
		t.Errorf("nextScheduleTime = %s, want %s", got.Status.NextScheduleTime, slot.Add(5*time.Minute))
	}
	waitEvent(t, ns, "nightly", "BelowTriggers", "b")
	waitEvent(t, ns, "nightly", "JobStarted", job.Name)
	for _, other := range []string{"b", "c"} {
		if live := liveJobs(tableJobs(t, ns, other, "maintain")); len(live) != 0 {
			t.Errorf("table %s got maintenance Jobs %v", other, live)
		}
	}

	finishJob(t, clk, job, 0, encode(t, maintainResult(4)))
	got = waitPolicy(t, p, "records the run", func(p *deltav1.OptimizePolicy) (bool, string) {
		return len(p.Status.RecentRuns) == 1 && len(p.Status.Active) == 0, fmt.Sprintf("%+v", p.Status)
	})
	run := got.Status.RecentRuns[0]
	if run.Result != deltav1.RunSucceeded || run.Table != "a" || run.FilesRemoved != 60 || run.FilesAdded != 5 || run.Reason != "SmallFiles" {
		t.Errorf("recentRuns[0] = %+v", run)
	}
	if c := condition(got.Status.Conditions, deltav1.ConditionLastRunSucceeded); !strings.HasPrefix(c, "True/RunSucceeded") {
		t.Errorf("LastRunSucceeded = %q", c)
	}
	ti := slices.IndexFunc(got.Status.Targets, func(s deltav1.TargetStatus) bool { return s.Table == "a" })
	if ti < 0 || got.Status.Targets[ti].LastRun == nil || got.Status.Targets[ti].LastRun.Result != deltav1.RunSucceeded {
		t.Errorf("targets = %+v", got.Status.Targets)
	}
	table := waitTable(t, &deltav1.DeltaTable{ObjectMeta: metav1.ObjectMeta{Name: "a", Namespace: ns}}, "records the maintenance",
		func(tb *deltav1.DeltaTable) (bool, string) {
			return strings.HasPrefix(condition(tb.Status.Conditions, deltav1.ConditionMaintenanceSucceeded), "True/RunSucceeded"),
				condition(tb.Status.Conditions, deltav1.ConditionMaintenanceSucceeded)
		})
	if table.Status.NumFiles != 5 || *table.Status.Version != 4 || table.Status.RecentRuns[0].JobName != job.Name {
		t.Errorf("the table's facts after maintenance: %+v", table.Status)
	}
	waitEvent(t, ns, "nightly", "RunSucceeded", job.Name)
	waitEvent(t, ns, "a", "RunSucceeded", job.Name)
}

func TestOptimizePolicy_NeverRunsTwoJobsOnATable(t *testing.T) {
	ctx, ns, clk := controllerTest(t)
	table := inspectTable(t, clk, ns, "shared", nil, 0)
	spec := deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"shared"}}}
	p1 := newPolicy(t, ns, "p1", spec)
	p2 := newPolicy(t, ns, "p2", spec)

	// Run-now ignores the triggers (0 small files) but not the table's lock.
	annotate(t, p1, deltav1.AnnotationRunNow, "first")
	j1 := waitLiveJob(t, ns, "shared", "maintain")
	annotate(t, p2, deltav1.AnnotationRunNow, "second")
	waitPolicy(t, p2, "waits for the table", func(p *deltav1.OptimizePolicy) (bool, string) {
		ready := condition(p.Status.Conditions, deltav1.ConditionReady)
		return strings.Contains(ready, "busy with Job "+j1.Name) && p.Status.LastRunNow == "", ready
	})
	// The table's own inspect Job waits too.
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(table), table); err != nil {
		t.Fatal(err)
	}
	table.Spec.Properties = &deltav1.TableProperties{AutoCompact: ptr.To(true)}
	if err := k8sClient.Update(ctx, table); err != nil {
		t.Fatal(err)
	}
	waitTable(t, table, "waits for the lock", func(tb *deltav1.DeltaTable) (bool, string) {
		ready := condition(tb.Status.Conditions, deltav1.ConditionReady)
		return strings.Contains(ready, "waits for Job "+j1.Name), ready
	})
	oneAtATime := func() (bool, string) {
		live := liveJobs(tableJobs(t, ns, "shared", ""))
		return len(live) <= 1, fmt.Sprintf("live Jobs on the table: %v", live)
	}
	consistently(t, "one Job at a time", 500*time.Millisecond, oneAtATime)

	// Finish whatever runs until all three (p1, p2, the inspection) are done; never two at once.
	done := map[string]bool{}
	for len(done) < 3 {
		var live []batchv1.Job
		eventually(t, "the next Job on the table", func() (bool, string) {
			if ok, msg := oneAtATime(); !ok {
				t.Fatal(msg)
			}
			live = nil
			for _, j := range tableJobs(t, ns, "shared", "") {
				if slices.Contains(liveJobs([]batchv1.Job{j}), j.Name) {
					live = append(live, j)
				}
			}
			return len(live) == 1, fmt.Sprintf("done %v", done)
		})
		j := live[0]
		owner := j.OwnerReferences[0].Name
		if done[owner] {
			t.Fatalf("%s started a second Job %s", owner, j.Name)
		}
		done[owner] = true
		msg := encode(t, maintainResult(5))
		if j.Labels[deltav1.LabelOperation] == "inspect" {
			msg = encode(t, inspectResult(6, 5, 0))
		}
		finishJob(t, clk, &j, 0, msg)
		consistently(t, "one Job at a time", 200*time.Millisecond, oneAtATime)
	}
	waitPolicy(t, p2, "acts on its run-now", func(p *deltav1.OptimizePolicy) (bool, string) {
		return p.Status.LastRunNow == "second" && len(p.Status.RecentRuns) == 1, fmt.Sprintf("%+v", p.Status)
	})
}

func TestOptimizePolicy_SuspendRunNowAndHistoryLimits(t *testing.T) {
	_, ns, clk := controllerTest(t)
	inspectTable(t, clk, ns, "t", nil, 100)
	p := newPolicy(t, ns, "every-minute", deltav1.OptimizePolicySpec{
		Targets:  deltav1.PolicyTargets{TableNames: []string{"t"}},
		Schedule: "* * * * *", Suspend: true,
		SuccessfulRunsHistoryLimit: ptr.To[int32](1), FailedRunsHistoryLimit: ptr.To[int32](1),
	})
	got := waitPolicy(t, p, "suspended", func(p *deltav1.OptimizePolicy) (bool, string) {
		return strings.HasPrefix(condition(p.Status.Conditions, deltav1.ConditionReady), "True/Suspended"), condition(p.Status.Conditions, deltav1.ConditionReady)
	})
	if got.Status.NextScheduleTime != nil {
		t.Errorf("nextScheduleTime = %s while suspended", got.Status.NextScheduleTime)
	}
	clk.Step(3 * time.Minute)
	poke(t, p)
	consistently(t, "no scheduled run while suspended", 500*time.Millisecond, func() (bool, string) {
		n := len(policyJobs(t, ns, "every-minute"))
		return n == 0, fmt.Sprintf("%d Jobs", n)
	})

	// Run-now runs while suspended; the history keeps one success and one failure.
	var names []string
	for i, outcome := range []result.Outcome{result.Succeeded, result.Succeeded, result.Failed} {
		annotate(t, p, deltav1.AnnotationRunNow, fmt.Sprintf("request-%d", i))
		job := waitLiveJob(t, ns, "t", "maintain")
		names = append(names, job.Name)
		res, code := maintainResult(int64(10+i)), int32(0)
		if outcome == result.Failed {
			res = &result.Result{Command: "maintain", Outcome: result.Failed, Reason: result.ReasonConflict, Message: "lost a conflict after 10 attempts"}
			code = 1
		}
		clk.Step(time.Minute)
		finishJob(t, clk, job, code, encode(t, res))
		want := fmt.Sprintf("request-%d", i)
		waitPolicy(t, p, "records "+want, func(p *deltav1.OptimizePolicy) (bool, string) {
			return p.Status.LastRunNow == want && len(p.Status.RecentRuns) == i+1, fmt.Sprintf("%+v", p.Status.RecentRuns)
		})
	}
	eventually(t, "Jobs beyond the history limits deleted", func() (bool, string) {
		var left []string
		for _, j := range policyJobs(t, ns, "every-minute") {
			if j.DeletionTimestamp == nil {
				left = append(left, j.Name)
			}
		}
		slices.Sort(left)
		want := []string{names[1], names[2]}
		slices.Sort(want)
		return slices.Equal(left, want), fmt.Sprintf("left %v, want %v", left, want)
	})
	got = waitPolicy(t, p, "reports the failure", func(p *deltav1.OptimizePolicy) (bool, string) {
		c := condition(p.Status.Conditions, deltav1.ConditionLastRunSucceeded)
		return strings.HasPrefix(c, "False/RunFailed"), c
	})
	if got.Status.RecentRuns[0].Reason != result.ReasonConflict || got.Status.RecentRuns[0].Result != deltav1.RunFailed {
		t.Errorf("recentRuns[0] = %+v", got.Status.RecentRuns[0])
	}
	waitEvent(t, ns, "every-minute", "RunFailed", "lost a conflict")
}

func TestOptimizePolicy_ForbidSkipsAndStartingDeadlineSkipsLateSlots(t *testing.T) {
	_, ns, clk := controllerTest(t)
	inspectTable(t, clk, ns, "t", nil, 100)
	p := newPolicy(t, ns, "five", deltav1.OptimizePolicySpec{
		Targets:  deltav1.PolicyTargets{TableNames: []string{"t"}},
		Schedule: "*/5 * * * *", StartingDeadlineSeconds: ptr.To[int64](60),
		ConcurrencyPolicy: deltav1.ConcurrencyForbid,
	})
	stepToNextSlot(t, clk, p, 10*time.Second)
	job := waitLiveJob(t, ns, "t", "maintain")

	// The next slot comes while the Job still runs: Forbid skips it.
	slot2 := stepToNextSlot(t, clk, p, 10*time.Second)
	got := waitPolicy(t, p, "skips the slot", func(p *deltav1.OptimizePolicy) (bool, string) {
		return p.Status.LastScheduleTime != nil && p.Status.LastScheduleTime.Time.Equal(slot2) && len(p.Status.RecentRuns) == 1, fmt.Sprintf("%+v", p.Status)
	})
	if r := got.Status.RecentRuns[0]; r.Result != deltav1.RunSkipped || r.Reason != deltav1.ReasonConcurrencyForbid {
		t.Errorf("recentRuns[0] = %+v", r)
	}
	waitEvent(t, ns, "five", "Skipped", "concurrencyPolicy Forbid")

	// The Job dies without a result (OOM): JobFailed on the policy and the table.
	finishJob(t, clk, job, 137, "fatal error: runtime: out of memory")
	waitPolicy(t, p, "reports the failed Job", func(p *deltav1.OptimizePolicy) (bool, string) {
		c := condition(p.Status.Conditions, deltav1.ConditionLastRunSucceeded)
		return strings.HasPrefix(c, "False/JobFailed") && strings.Contains(c, "out of memory"), c
	})
	waitTable(t, &deltav1.DeltaTable{ObjectMeta: metav1.ObjectMeta{Name: "t", Namespace: ns}}, "reports the failed Job", func(tb *deltav1.DeltaTable) (bool, string) {
		c := condition(tb.Status.Conditions, deltav1.ConditionMaintenanceSucceeded)
		return strings.HasPrefix(c, "False/JobFailed"), c
	})
	waitEvent(t, ns, "five", "JobFailed", "exited with code 137")

	// The manager "was down" past the next slot's deadline: the slot is skipped and recorded.
	slot3 := stepToNextSlot(t, clk, p, 2*time.Minute)
	waitPolicy(t, p, "skips the late slot", func(p *deltav1.OptimizePolicy) (bool, string) {
		return p.Status.LastSkippedTime != nil && p.Status.LastSkippedTime.Time.Equal(slot3), fmt.Sprintf("%+v", p.Status)
	})
	if live := liveJobs(tableJobs(t, ns, "t", "maintain")); len(live) != 0 {
		t.Errorf("a late slot started %v", live)
	}
	waitEvent(t, ns, "five", "MissedSchedule", "startingDeadlineSeconds")
}

func TestOptimizePolicy_WaitsForTheFirstInspection(t *testing.T) {
	_, ns, clk := controllerTest(t)
	newTable(t, ns, "fresh", nil)
	inspect := waitLiveJob(t, ns, "fresh", "inspect")
	p := newPolicy(t, ns, "eager", deltav1.OptimizePolicySpec{
		Targets: deltav1.PolicyTargets{TableNames: []string{"fresh"}}, Schedule: "*/5 * * * *",
		Triggers: &deltav1.Triggers{MinSmallFiles: ptr.To[int32](0)},
	})
	slot := stepToNextSlot(t, clk, p, time.Second)
	waitPolicy(t, p, "waits for the inspection", func(p *deltav1.OptimizePolicy) (bool, string) {
		ready := condition(p.Status.Conditions, deltav1.ConditionReady)
		ok := len(p.Status.Targets) == 1 && p.Status.Targets[0].PendingSince != nil && p.Status.Targets[0].PendingSince.Time.Equal(slot)
		return ok && strings.Contains(ready, "fresh has not been inspected yet"), ready
	})
	finishJob(t, clk, inspect, 0, encode(t, inspectResult(1, 3, 3)))
	job := waitLiveJob(t, ns, "fresh", "maintain")
	if job.Annotations[deltav1.AnnotationScheduledTime] != slot.UTC().Format(time.RFC3339) {
		t.Errorf("the waiting run belongs to slot %s, Job says %s", slot, job.Annotations[deltav1.AnnotationScheduledTime])
	}
	waitPolicy(t, p, "no longer waits", func(p *deltav1.OptimizePolicy) (bool, string) {
		return p.Status.Targets[0].PendingSince == nil, fmt.Sprintf("%+v", p.Status.Targets)
	})
}

func TestOptimizePolicy_RejectsAnUnknownTimeZone(t *testing.T) {
	_, ns, _ := controllerTest(t)
	p := newPolicy(t, ns, "mars", deltav1.OptimizePolicySpec{
		Targets: deltav1.PolicyTargets{TableNames: []string{"t"}}, Schedule: "0 3 * * *", TimeZone: "Mars/Olympus_Mons",
	})
	waitPolicy(t, p, "reports the time zone", func(p *deltav1.OptimizePolicy) (bool, string) {
		ready := condition(p.Status.Conditions, deltav1.ConditionReady)
		return strings.HasPrefix(ready, "False/InvalidSchedule") && strings.Contains(ready, "Mars/Olympus_Mons"), ready
	})
	waitEvent(t, ns, "mars", "InvalidSpec", "IANA")
}
