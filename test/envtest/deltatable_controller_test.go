package envtest

import (
	"fmt"
	"slices"
	"strings"
	"testing"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

func TestDeltaTable_InspectJobFillsTheStatus(t *testing.T) {
	ctx, ns, clk := controllerTest(t)
	table := newTable(t, ns, "orders", map[string]string{"app.kubernetes.io/instance": "argo-app"})
	table.Spec.ClusterBy = []string{"order_date"}
	table.Spec.Properties = &deltav1.TableProperties{OptimizeWrite: ptr.To(true)}
	if err := k8sClient.Update(ctx, table); err != nil {
		t.Fatal(err)
	}

	job := waitLiveJob(t, ns, "orders", "inspect")
	if job.Labels["app.kubernetes.io/instance"] != "" || job.OwnerReferences[0].Name != "orders" {
		t.Errorf("Job labels %v owner %v: the table's labels must not be copied; the table owns the Job", job.Labels, job.OwnerReferences)
	}
	if h := leaseHolder(t, ns, "orders"); h != job.Name {
		t.Errorf("lock holder = %q, want the inspect Job %s", h, job.Name)
	}
	waitTable(t, table, "shows the running inspection", func(tb *deltav1.DeltaTable) (bool, string) {
		ready := condition(tb.Status.Conditions, deltav1.ConditionReady)
		return tb.Status.ActiveJob != "" && strings.HasPrefix(ready, "False/"), ready
	})

	// The spec was updated right after creation: the Job that runs applies generation 2 (or 1, then 2 follows).
	res := inspectResult(12, 340, 57, "order_date")
	res.Applied = &result.Applied{Properties: []string{"delta.autoOptimize.optimizeWrite"}, ClusteringColumns: []string{"order_date"}, Version: ptr.To[int64](12)}
	finishJob(t, clk, job, 0, encode(t, res))
	if job.Annotations[deltav1.AnnotationGeneration] == "1" {
		job = waitLiveJob(t, ns, "orders", "inspect")
		// Later than the first (status times have whole seconds), so that it is the newest run.
		clk.Step(2 * time.Second)
		finishJob(t, clk, job, 0, encode(t, res))
	}

	// Both inspections report the same facts: wait for the last one to be recorded, not just the facts.
	got := waitTable(t, table, "inspected", func(tb *deltav1.DeltaTable) (bool, string) {
		ready := condition(tb.Status.Conditions, deltav1.ConditionReady)
		newest := len(tb.Status.RecentRuns) > 0 && tb.Status.RecentRuns[0].JobName == job.Name
		return ready == "True/Inspected: version 12: 340 files (57 small), 340.0MiB" && newest, ready
	})
	st := got.Status
	checks := []struct {
		name string
		ok   bool
	}{
		{"version", *st.Version == 12},
		{"files", st.NumFiles == 340 && st.NumSmallFiles == 57 && st.SizeBytes == 340<<20 && st.Size == "340.0MiB"},
		{"clustering", slices.Equal(st.ClusteringColumns, []string{"order_date"}) && len(st.Clustering) == 1 && st.Clustering[0].AvgDepth == 2.5},
		{"protocol", st.Protocol != nil && st.Protocol.MinWriterVersion == 2},
		{"lastInspectedTime", st.LastInspectedTime != nil},
		{"observedGeneration", st.ObservedGeneration == got.Generation},
		{"Reachable", strings.HasPrefix(condition(st.Conditions, deltav1.ConditionReachable), "True/Inspected")},
		{"PropertiesApplied", strings.Contains(condition(st.Conditions, deltav1.ConditionPropertiesApplied), "committed delta.autoOptimize.optimizeWrite")},
		{"recentRuns", len(st.RecentRuns) >= 1 && st.RecentRuns[0].Result == deltav1.RunSucceeded && st.RecentRuns[0].JobName == job.Name},
		{"activeJob cleared", st.ActiveJob == ""},
		{"no failures", st.FailedInspections == 0},
	}
	for _, c := range checks {
		if !c.ok {
			t.Errorf("%s: status %+v", c.name, st)
		}
	}
	eventually(t, "the lock released", func() (bool, string) { h := leaseHolder(t, ns, "orders"); return h == "", h })
	waitEvent(t, ns, "orders", "PropertiesApplied", "optimizeWrite")
	consistently(t, "no further inspect Job before inspectInterval", 500*time.Millisecond, func() (bool, string) {
		live := liveJobs(tableJobs(t, ns, "orders", "inspect"))
		return len(live) == 0, fmt.Sprint(live)
	})
}

func TestDeltaTable_FailuresSetConditionsAndBackOff(t *testing.T) {
	ctx, ns, clk := controllerTest(t)
	table := newTable(t, ns, "events", nil)

	// 1. The worker cannot reach the store: Reachable=False, a Warning, and no retry before the back-off.
	job := waitLiveJob(t, ns, "events", "inspect")
	finishJob(t, clk, job, 1, encode(t, &result.Result{Command: "inspect", Outcome: result.Failed, Reason: result.ReasonUnreachable,
		Message: "GET https://AKIAIOSFODNN7EXAMPLE:secret@minio/lake: 403 Forbidden"}))
	got := waitTable(t, table, "unreachable", func(tb *deltav1.DeltaTable) (bool, string) {
		return tb.Status.FailedInspections == 1, condition(tb.Status.Conditions, deltav1.ConditionReady)
	})
	ready := condition(got.Status.Conditions, deltav1.ConditionReady)
	if !strings.HasPrefix(ready, "False/Unreachable") || strings.Contains(ready, "secret@") || strings.Contains(ready, "AKIA") {
		t.Errorf("Ready = %q: want False/Unreachable without credentials", ready)
	}
	waitEvent(t, ns, "events", "RunFailed", "403 Forbidden")
	consistently(t, "no retry before the back-off", 500*time.Millisecond, func() (bool, string) {
		n := len(tableJobs(t, ns, "events", "inspect"))
		return n == 1, fmt.Sprintf("%d inspect Jobs", n)
	})

	// 2. After a minute the retry runs; its pod writes garbage and exits 0: InvalidResult.
	clk.Step(61 * time.Second)
	poke(t, table)
	job = waitLiveJob(t, ns, "events", "inspect")
	finishJob(t, clk, job, 0, "Error: unknown flag --quality\nUsage: deltakeeper worker inspect")
	got = waitTable(t, table, "invalid result", func(tb *deltav1.DeltaTable) (bool, string) {
		return tb.Status.FailedInspections == 2, condition(tb.Status.Conditions, deltav1.ConditionReady)
	})
	if ready := condition(got.Status.Conditions, deltav1.ConditionReady); !strings.HasPrefix(ready, "False/InvalidResult") {
		t.Errorf("Ready = %q, want False/InvalidResult", ready)
	}
	waitEvent(t, ns, "events", "InvalidResult", "could not be read")

	// 3. The back-off doubled: one minute is not enough now, two are.
	clk.Step(61 * time.Second)
	poke(t, table)
	consistently(t, "no retry within the doubled back-off", 500*time.Millisecond, func() (bool, string) {
		n := len(tableJobs(t, ns, "events", "inspect"))
		return n == 2, fmt.Sprintf("%d inspect Jobs", n)
	})

	// 4. A spec change retries at once, and a refused run (exit 2) says UnsupportedTable.
	if err := k8sClient.Get(ctx, client.ObjectKeyFromObject(table), table); err != nil {
		t.Fatal(err)
	}
	table.Spec.InspectInterval = &metav1.Duration{Duration: 2 * time.Hour}
	if err := k8sClient.Update(ctx, table); err != nil {
		t.Fatal(err)
	}
	job = waitLiveJob(t, ns, "events", "inspect")
	finishJob(t, clk, job, 2, encode(t, &result.Result{Command: "inspect", Outcome: result.Refused, Reason: result.ReasonUnsupportedFeature,
		Message: `table uses table feature "variantType-preview": variant columns cannot be rewritten yet (no variant passthrough in the Parquet writer)`}))
	got = waitTable(t, table, "refused", func(tb *deltav1.DeltaTable) (bool, string) {
		return tb.Status.FailedInspections == 3, condition(tb.Status.Conditions, deltav1.ConditionReady)
	})
	if ready := condition(got.Status.Conditions, deltav1.ConditionReady); !strings.HasPrefix(ready, "False/UnsupportedTable") {
		t.Errorf("Ready = %q, want False/UnsupportedTable", ready)
	}
	if len(got.Status.RecentRuns) != 3 || got.Status.RecentRuns[0].Result != deltav1.RunRefused {
		t.Errorf("recentRuns = %+v", got.Status.RecentRuns)
	}
}
