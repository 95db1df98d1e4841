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
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// newStream creates a CSV stream into table.
func newStream(t *testing.T, ns, name, table string, edit func(*deltav1.StreamIngestSpec)) *deltav1.StreamIngest {
	t.Helper()
	si := &deltav1.StreamIngest{
		ObjectMeta: metav1.ObjectMeta{Name: name, Namespace: ns},
		Spec: deltav1.StreamIngestSpec{
			Source: deltav1.IngestSource{Files: &deltav1.FileSource{Location: "s3://landing/" + name + "/", Format: "csv",
				Options: map[string]string{"header": "true"}}},
			Target:  table,
			Trigger: &deltav1.IngestTrigger{Interval: &metav1.Duration{Duration: time.Minute}},
		},
	}
	if edit != nil {
		edit(&si.Spec)
	}
	if err := k8sClient.Create(context.Background(), si); err != nil {
		t.Fatal(err)
	}
	return si
}

// waitStream waits until the stream's status satisfies cond.
func waitStream(t *testing.T, si *deltav1.StreamIngest, what string, cond func(*deltav1.StreamIngest) (bool, string)) *deltav1.StreamIngest {
	t.Helper()
	var got deltav1.StreamIngest
	eventually(t, "stream "+si.Name+" "+what, func() (bool, string) {
		if err := k8sClient.Get(context.Background(), clientKey(si), &got); err != nil {
			return false, err.Error()
		}
		return cond(&got)
	})
	return &got
}

// streamJobs lists the stream's ingest Jobs.
func streamJobs(t *testing.T, si *deltav1.StreamIngest) []batchv1.Job {
	t.Helper()
	var list batchv1.JobList
	if err := k8sClient.List(context.Background(), &list, client.InNamespace(si.Namespace),
		client.MatchingLabels{deltav1.LabelStream: si.Name, deltav1.LabelOperation: "ingest"}); err != nil {
		t.Fatal(err)
	}
	return list.Items
}

// waitIngestJob waits for exactly one live ingest Job of the stream other than the ones in seen.
func waitIngestJob(t *testing.T, si *deltav1.StreamIngest, seen ...string) *batchv1.Job {
	t.Helper()
	var found *batchv1.Job
	eventually(t, "a new live ingest Job of "+si.Name, func() (bool, string) {
		jobs := streamJobs(t, si)
		live := liveJobs(jobs)
		if len(live) != 1 || slices.Contains(seen, live[0]) {
			return false, fmt.Sprintf("live %v, seen %v", live, seen)
		}
		for i := range jobs {
			if jobs[i].Name == live[0] {
				found = &jobs[i]
			}
		}
		return true, ""
	})
	return found
}

// noNewIngestJob checks for a while that the stream starts no Job.
func noNewIngestJob(t *testing.T, si *deltav1.StreamIngest, why string) {
	t.Helper()
	before := len(streamJobs(t, si))
	consistently(t, why, 1500*time.Millisecond, func() (bool, string) {
		jobs := streamJobs(t, si)
		return len(jobs) == before && len(liveJobs(jobs)) == 0, fmt.Sprintf("%d Jobs, live %v", len(jobs), liveJobs(jobs))
	})
}

// ingestResult is an ingest report: batches first..last (each 2 files, 100 rows) and a backlog.
func ingestResult(outcome result.Outcome, first, last, backlog int64) *result.Result {
	in := &result.Ingest{Stream: "s", LastBatch: last, Backlog: &result.Backlog{Files: backlog, Bytes: backlog << 20, OldestAgeSec: backlog * 10}}
	for id := first; id <= last; id++ {
		in.Batches = append(in.Batches, result.IngestBatch{ID: id, Files: 2, Bytes: 2 << 20, Rows: 100, Version: 5 + id, Written: map[string]int{"day=2026-12-01": 1}})
		in.NumBatches++
		in.Rows += 100
	}
	v := 5 + last
	return &result.Result{Command: "ingest", Outcome: outcome, Version: &v, DurationMs: 20000, Ingest: in}
}

func refusedIngest(reason string, in *result.Ingest) *result.Result {
	in.LastBatch = -1
	return &result.Result{Command: "ingest", Outcome: result.Refused, Reason: reason, Message: "see the stream's conditions", Ingest: in}
}

func TestStreamIngest_OneJobAtATimeFoldsBatchesIntoStatus(t *testing.T) {
	_, ns, clk := controllerTest(t)
	table := newTable(t, ns, "clicks", nil)
	inspect := waitLiveJob(t, ns, "clicks", "inspect")
	si := newStream(t, ns, "clicks-csv", "clicks", nil)

	// The ingest Job starts while the inspect Job holds the table's lock: streams take no lock.
	job := waitIngestJob(t, si)
	args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " ")
	for _, want := range []string{"worker ingest s3://lake/clicks --source s3://landing/clicks-csv/ --format csv --option header=true",
		"--checkpoint s3://lake/clicks/_deltakeeper/streams/" + ns + ".clicks-csv", "--time-budget 30s", "-o json"} {
		if !strings.Contains(args, want) {
			t.Errorf("args %q lack %q", args, want)
		}
	}
	if h := leaseHolder(t, ns, "clicks"); h != inspect.Name {
		t.Errorf("lock holder = %q, want the inspect Job %s", h, inspect.Name)
	}
	poke(t, si)
	consistently(t, "one ingest Job at a time", time.Second, func() (bool, string) {
		live := liveJobs(streamJobs(t, si))
		return len(live) == 1, fmt.Sprintf("live %v", live)
	})
	waitStream(t, si, "names its Job", func(s *deltav1.StreamIngest) (bool, string) {
		return s.Status.ActiveJob == job.Name && s.Status.JobsStarted == 1, fmt.Sprintf("%+v", s.Status)
	})

	// Time budget spent with files pending: the batches show, and the next Job starts at once.
	finishJob(t, clk, job, 0, encode(t, ingestResult(result.Succeeded, 0, 2, 7)))
	got := waitStream(t, si, "folds the first Job", func(s *deltav1.StreamIngest) (bool, string) {
		return s.Status.LastBatchID != nil && *s.Status.LastBatchID == 2, fmt.Sprintf("%+v", s.Status)
	})
	if got.Status.CommittedVersion == nil || *got.Status.CommittedVersion != 7 || len(got.Status.RecentBatches) != 3 ||
		got.Status.RecentBatches[0].BatchID != 2 || got.Status.RecentBatches[0].FilesWritten["day=2026-12-01"] != 1 ||
		got.Status.Backlog == nil || got.Status.Backlog.Files != 7 || got.Status.Backlog.OldestPendingAge.Duration != 70*time.Second {
		t.Errorf("status = %+v", got.Status)
	}
	if r := condition(got.Status.Conditions, deltav1.ConditionReady); !strings.HasPrefix(r, "True/BatchCommitted") {
		t.Errorf("Ready = %s", r)
	}
	if p := condition(got.Status.Conditions, deltav1.ConditionProgressing); !strings.HasPrefix(p, "True/BatchCommitted") {
		t.Errorf("Progressing = %s", p)
	}
	waitEvent(t, ns, "clicks-csv", "BatchesCommitted", "3 batches")
	second := waitIngestJob(t, si, job.Name)

	// Caught up: the next Job waits for the interval, counted from the last Job's start.
	finishJob(t, clk, second, 0, encode(t, ingestResult(result.Succeeded, 3, 3, 0)))
	got = waitStream(t, si, "caught up", func(s *deltav1.StreamIngest) (bool, string) {
		r := condition(s.Status.Conditions, deltav1.ConditionReady)
		return strings.HasPrefix(r, "True/CaughtUp") && s.Status.NextJobTime != nil, r
	})
	if p := condition(got.Status.Conditions, deltav1.ConditionProgressing); !strings.HasPrefix(p, "False/CaughtUp") ||
		got.Status.ObservedGeneration != got.Generation || got.Status.ActiveJob != "" || len(got.Status.RecentJobs) != 2 {
		t.Errorf("Progressing %s, status %+v", p, got.Status)
	}
	poke(t, si)
	noNewIngestJob(t, si, "no Job before the interval")
	clk.Step(time.Minute)
	poke(t, si)
	waitIngestJob(t, si, job.Name, second.Name)

	// The table names the stream writing to it, and folds only its own Jobs: its run history holds the
	// inspect run and none of the finished ingest Jobs.
	finishJob(t, clk, inspect, 0, encode(t, inspectResult(7, 12, 3)))
	tb := waitTable(t, table, "inspected, naming its stream", func(tb *deltav1.DeltaTable) (bool, string) {
		return tb.Status.LastInspectedTime != nil && slices.Equal(tb.Status.Streams, []string{"clicks-csv"}),
			fmt.Sprintf("streams %v, runs %d", tb.Status.Streams, len(tb.Status.RecentRuns))
	})
	if len(tb.Status.RecentRuns) != 1 || tb.Status.RecentRuns[0].JobName != inspect.Name {
		t.Errorf("the DeltaTable's runs = %+v, want only its inspect Job %s", tb.Status.RecentRuns, inspect.Name)
	}
}

func TestStreamIngest_FailuresBackOffAndBadInputStopsTheStream(t *testing.T) {
	_, ns, clk := controllerTest(t)
	newTable(t, ns, "orders", nil)
	si := newStream(t, ns, "orders-csv", "orders", nil)

	// A storage failure: retried after 10s, then 20s.
	job := waitIngestJob(t, si)
	failed := &result.Result{Command: "ingest", Outcome: result.Failed, Reason: result.ReasonUnreachable, Message: "list s3://landing/orders-csv/: 403 Forbidden",
		Ingest: &result.Ingest{LastBatch: -1}}
	finishJob(t, clk, job, 1, encode(t, failed))
	got := waitStream(t, si, "reports the unreachable source", func(s *deltav1.StreamIngest) (bool, string) {
		r := condition(s.Status.Conditions, deltav1.ConditionReady)
		return strings.HasPrefix(r, "False/SourceUnreachable"), r
	})
	if got.Status.ConsecutiveFailures != 1 || got.Status.NextJobTime == nil ||
		!strings.Contains(condition(got.Status.Conditions, deltav1.ConditionReady), "403 Forbidden") {
		t.Errorf("status = %+v", got.Status)
	}
	waitEvent(t, ns, "orders-csv", "SourceUnreachable", "403 Forbidden")
	poke(t, si)
	noNewIngestJob(t, si, "no Job during the backoff")
	clk.Step(11 * time.Second)
	poke(t, si)
	job2 := waitIngestJob(t, si, job.Name)
	finishJob(t, clk, job2, 1, "panic: something unexpected")
	got = waitStream(t, si, "counts the second failure", func(s *deltav1.StreamIngest) (bool, string) {
		return s.Status.ConsecutiveFailures == 2, fmt.Sprintf("%+v", s.Status)
	})
	if r := condition(got.Status.Conditions, deltav1.ConditionReady); !strings.HasPrefix(r, "False/JobFailed") || !strings.Contains(r, "2 failed in a row") {
		t.Errorf("Ready = %s", r)
	}
	waitEvent(t, ns, "orders-csv", "JobFailed", "panic: something unexpected")
	if d := got.Status.NextJobTime.Sub(clk.Now()); d < 19*time.Second || d > 21*time.Second {
		t.Errorf("second backoff = %v, want 20s", d)
	}
	clk.Step(21 * time.Second)
	poke(t, si)
	job3 := waitIngestJob(t, si, job.Name, job2.Name)

	// A bad file stops the stream for this spec, naming the file.
	finishJob(t, clk, job3, 2, encode(t, refusedIngest(result.ReasonBadFile, &result.Ingest{BadFile: &result.BadFile{File: "landing/orders-csv/07.csv", Row: 12, Column: "qty"}})))
	got = waitStream(t, si, "stalls on the bad file", func(s *deltav1.StreamIngest) (bool, string) {
		c := condition(s.Status.Conditions, deltav1.ConditionStalled)
		return strings.HasPrefix(c, "True/BadFile"), c
	})
	for _, c := range []string{deltav1.ConditionStalled, deltav1.ConditionReady} {
		if msg := condition(got.Status.Conditions, c); !strings.Contains(msg, "landing/orders-csv/07.csv (row 12, column qty)") || !strings.Contains(msg, "onBadFile: skip") {
			t.Errorf("%s = %s", c, msg)
		}
	}
	waitEvent(t, ns, "orders-csv", "Stalled", "07.csv")
	clk.Step(time.Hour)
	poke(t, si)
	noNewIngestJob(t, si, "a stalled stream starts no Job")

	// A spec change resumes it; new columns under failOnNewColumns stop it again, naming them.
	patch := []byte(`{"spec":{"onBadFile":"skip"}}`)
	if err := k8sClient.Patch(context.Background(), si, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	job4 := waitIngestJob(t, si, job.Name, job2.Name, job3.Name)
	if args := strings.Join(job4.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--on-bad-file skip") {
		t.Errorf("the spec change did not reach the Job: %s", args)
	}
	finishJob(t, clk, job4, 2, encode(t, refusedIngest(result.ReasonSchemaChange, &result.Ingest{NewColumns: []string{"coupon", "tip"}})))
	got = waitStream(t, si, "stalls on the new columns", func(s *deltav1.StreamIngest) (bool, string) {
		c := condition(s.Status.Conditions, deltav1.ConditionStalled)
		return strings.HasPrefix(c, "True/SchemaChangeNeeded") && strings.Contains(c, "coupon, tip"), c
	})
	if r := condition(got.Status.Conditions, deltav1.ConditionReady); !strings.HasPrefix(r, "False/SchemaChangeNeeded") {
		t.Errorf("Ready = %s", r)
	}
	waitEvent(t, ns, "orders-csv", "Stalled", "coupon, tip")
}

func TestStreamIngest_AvailableNowCompletesAndSuspendStopsNewJobs(t *testing.T) {
	_, ns, clk := controllerTest(t)
	newTable(t, ns, "events", nil)
	once := newStream(t, ns, "backfill", "events", func(s *deltav1.StreamIngestSpec) {
		s.Trigger = &deltav1.IngestTrigger{AvailableNow: true}
	})
	job := waitIngestJob(t, once)
	if args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--available-now") || strings.Contains(args, "--time-budget") {
		t.Errorf("availableNow args: %s", args)
	}
	finishJob(t, clk, job, 0, encode(t, ingestResult(result.Succeeded, 0, 4, 0)))
	waitStream(t, once, "completed", func(s *deltav1.StreamIngest) (bool, string) {
		r := condition(s.Status.Conditions, deltav1.ConditionReady)
		return strings.HasPrefix(r, "True/Completed") && strings.HasPrefix(condition(s.Status.Conditions, deltav1.ConditionProgressing), "False/Completed"), r
	})
	waitEvent(t, ns, "backfill", "Completed", "processed everything")
	clk.Step(time.Hour)
	poke(t, once)
	noNewIngestJob(t, once, "a completed stream starts no Job")

	// Suspended from the start: no Job, Ready=True/Suspended.
	si := newStream(t, ns, "live", "events", func(s *deltav1.StreamIngestSpec) { s.Suspend = true })
	waitStream(t, si, "suspended", func(s *deltav1.StreamIngest) (bool, string) {
		r := condition(s.Status.Conditions, deltav1.ConditionReady)
		return strings.HasPrefix(r, "True/Suspended"), r
	})
	noNewIngestJob(t, si, "a suspended stream starts no Job")
	setSuspend := func(v bool) {
		patch := []byte(fmt.Sprintf(`{"spec":{"suspend":%t}}`, v))
		if err := k8sClient.Patch(context.Background(), si, client.RawPatch("application/merge-patch+json", patch)); err != nil {
			t.Fatal(err)
		}
	}
	setSuspend(false)
	job = waitIngestJob(t, si)
	// Suspending lets the running Job finish: it is neither deleted nor followed by another.
	setSuspend(true)
	waitStream(t, si, "suspended with a running Job", func(s *deltav1.StreamIngest) (bool, string) {
		r := condition(s.Status.Conditions, deltav1.ConditionReady)
		return strings.HasPrefix(r, "True/Suspended") && strings.Contains(r, job.Name+" finishes"), r
	})
	finishJob(t, clk, job, 0, encode(t, ingestResult(result.Succeeded, 0, 1, 5)))
	got := waitStream(t, si, "folds the last Job", func(s *deltav1.StreamIngest) (bool, string) {
		return s.Status.LastBatchID != nil && *s.Status.LastBatchID == 1 && s.Status.ActiveJob == "", fmt.Sprintf("%+v", s.Status)
	})
	if r := condition(got.Status.Conditions, deltav1.ConditionReady); !strings.HasPrefix(r, "True/Suspended") {
		t.Errorf("Ready = %s", r)
	}
	noNewIngestJob(t, si, "no Job after the suspended stream's last one")
}

func TestStreamIngest_WaitsForItsTargetAndRefusesTableSources(t *testing.T) {
	_, ns, _ := controllerTest(t)
	si := newStream(t, ns, "early", "later", nil)
	waitStream(t, si, "reports the missing target", func(s *deltav1.StreamIngest) (bool, string) {
		r := condition(s.Status.Conditions, deltav1.ConditionReady)
		return strings.HasPrefix(r, "False/TargetNotFound") && strings.Contains(r, `"later"`), r
	})
	noNewIngestJob(t, si, "no Job without a target")
	newTable(t, ns, "later", nil)
	waitIngestJob(t, si)

	newTable(t, ns, "raw", nil)
	cdc := &deltav1.StreamIngest{
		ObjectMeta: metav1.ObjectMeta{Name: "cdc", Namespace: ns},
		Spec:       deltav1.StreamIngestSpec{Source: deltav1.IngestSource{DeltaTable: &deltav1.DeltaTableSource{Name: "raw"}}, Target: "later"},
	}
	if err := k8sClient.Create(context.Background(), cdc); err != nil {
		t.Fatal(err)
	}
	waitStream(t, cdc, "says table sources are not available", func(s *deltav1.StreamIngest) (bool, string) {
		c := condition(s.Status.Conditions, deltav1.ConditionStalled)
		return strings.HasPrefix(c, "True/IngestNotAvailable") && strings.HasPrefix(condition(s.Status.Conditions, deltav1.ConditionReady), "False/IngestNotAvailable"), c
	})
	noNewIngestJob(t, cdc, "no Job for a table source")
}

func TestStreamIngest_SpecErrorsRefusalsAndVanishedJobsAreReported(t *testing.T) {
	_, ns, clk := controllerTest(t)
	newTable(t, ns, "stock", nil)

	// A key the worker's column-list flag cannot carry: no Job, Stalled with InvalidSpec, until fixed.
	si := newStream(t, ns, "stock-changes", "stock", func(s *deltav1.StreamIngestSpec) {
		s.Mode, s.Keys = deltav1.IngestUpsert, []string{"sku,site"}
	})
	waitStream(t, si, "stalls on the spec", func(s *deltav1.StreamIngest) (bool, string) {
		c := condition(s.Status.Conditions, deltav1.ConditionStalled)
		return strings.HasPrefix(c, "True/InvalidSpec") && strings.Contains(c, `"sku,site" contains a comma`), c
	})
	waitEvent(t, ns, "stock-changes", "InvalidSpec", "comma")
	noNewIngestJob(t, si, "no Job for a spec that cannot become one")
	patch := []byte(`{"spec":{"keys":["sku"],"deleteConditionColumn":"gone","orderBy":"seq"}}`)
	if err := k8sClient.Patch(context.Background(), si, client.RawPatch("application/merge-patch+json", patch)); err != nil {
		t.Fatal(err)
	}
	job := waitIngestJob(t, si)
	if args := strings.Join(job.Spec.Template.Spec.Containers[0].Args, " "); !strings.Contains(args, "--mode upsert --keys sku --delete-column gone --order-by seq") {
		t.Errorf("upsert args: %s", args)
	}

	// A Job deleted before it reported counts as a failure; the next one resumes after the backoff.
	if err := k8sClient.Delete(context.Background(), job, client.PropagationPolicy(metav1.DeletePropagationBackground)); err != nil {
		t.Fatal(err)
	}
	waitStream(t, si, "notices the vanished Job", func(s *deltav1.StreamIngest) (bool, string) {
		c := condition(s.Status.Conditions, deltav1.ConditionStalled)
		return strings.HasPrefix(c, "False/JobFailed") && strings.Contains(c, "deleted before it reported") &&
			s.Status.ConsecutiveFailures == 1 && s.Status.ActiveJob == "", c
	})
	clk.Step(11 * time.Second)
	poke(t, si)
	job2 := waitIngestJob(t, si, job.Name)

	// A refusal (a corrupt table) stops the stream; retrying cannot help.
	corrupt := &result.Result{Command: "ingest", Outcome: result.Refused, Reason: result.ReasonCorruptTable,
		Message: "table s3://lake/stock: _delta_log/00000000000000000003.json is truncated", Ingest: &result.Ingest{LastBatch: 2}}
	finishJob(t, clk, job2, 2, encode(t, corrupt))
	got := waitStream(t, si, "stalls on the refusal", func(s *deltav1.StreamIngest) (bool, string) {
		c := condition(s.Status.Conditions, deltav1.ConditionStalled)
		return strings.HasPrefix(c, "True/RunRefused") && strings.Contains(c, "00000000000000000003.json is truncated"), c
	})
	if r := condition(got.Status.Conditions, deltav1.ConditionReady); !strings.HasPrefix(r, "False/RunRefused") {
		t.Errorf("Ready = %s", r)
	}
	waitEvent(t, ns, "stock-changes", "Stalled", "CorruptTable")
	clk.Step(time.Hour)
	poke(t, si)
	noNewIngestJob(t, si, "a refused stream starts no Job")
}
