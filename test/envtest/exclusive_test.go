package envtest

import (
	"context"
	"fmt"
	"strings"
	"testing"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// conflictedMaintenance is a maintenance report whose compaction lost every input to concurrent commits.
func conflictedMaintenance(version int64) *result.Result {
	return &result.Result{Command: "maintain", Outcome: result.Failed, Reason: result.ReasonConflict, Version: &version,
		Message: "giving up after 10 conflicting commits",
		Ops: []result.Op{{Name: "optimize", Outcome: result.Failed, Reason: result.ReasonConflict, ConflictFiles: 40,
			Message: "40 bins (40 files) dropped: input was removed by version 12 (MERGE)"}}}
}

// A random-key upsert stream touches nearly every file in every batch, so a compaction next to it can lose
// all of its work on every run. Once it has, the manager makes them take turns: the next maintenance run
// waits for the stream's live Job and then runs alone, and the stream starts no Job until it ends. Appends
// are not involved: they never conflict.
func TestKeyedStreamAndMaintenanceThatLostItsWork_TakeTurns(t *testing.T) {
	_, ns, clk := controllerTest(t)
	orders := inspectTable(t, clk, ns, "orders", nil, 60)
	p := newPolicy(t, ns, "compact", deltav1.OptimizePolicySpec{Targets: deltav1.PolicyTargets{TableNames: []string{"orders"}}})

	// A first run, with no stream yet, is not exclusive; it loses its work to conflicts.
	annotate(t, p, deltav1.AnnotationRunNow, "1")
	first := waitLiveJob(t, ns, "orders", "maintain")
	if first.Annotations[deltav1.AnnotationExclusive] != "" {
		t.Fatalf("the first run is exclusive: %v", first.Annotations)
	}
	finishJob(t, clk, first, 1, encode(t, conflictedMaintenance(12)))
	waitTable(t, orders, "records the lost files", func(tb *deltav1.DeltaTable) (bool, string) {
		for _, r := range tb.Status.RecentRuns {
			if r.JobName == first.Name {
				return r.ConflictFiles == 40 && r.Result == deltav1.RunFailed, fmt.Sprintf("%+v", r)
			}
		}
		return false, fmt.Sprintf("%+v", tb.Status.RecentRuns)
	})

	// An upsert stream writes the table; its Job says it is keyed.
	si := newStream(t, ns, "orders-cdc", "orders", func(s *deltav1.StreamIngestSpec) {
		s.Mode, s.Keys = deltav1.IngestUpsert, []string{"id"}
	})
	ingest := waitIngestJob(t, si)
	if ingest.Annotations[deltav1.AnnotationKeyedWrite] != "upsert" {
		t.Fatalf("the upsert stream's Job does not say it is keyed: %v", ingest.Annotations)
	}

	// The next run is created suspended: it holds the table, so the stream starts nothing new, and it
	// waits for the stream's Job and says why.
	annotate(t, p, deltav1.AnnotationRunNow, "2")
	alone := waitLiveJob(t, ns, "orders", "maintain")
	if alone.Annotations[deltav1.AnnotationExclusive] != "true" || alone.Spec.Suspend == nil || !*alone.Spec.Suspend {
		t.Fatalf("the run after a lost one is not exclusive and suspended: %v, suspend %v", alone.Annotations, alone.Spec.Suspend)
	}
	waitPolicy(t, p, "waits for the keyed ingest Job", func(p *deltav1.OptimizePolicy) (bool, string) {
		msg := condition(p.Status.Conditions, deltav1.ConditionReady)
		return strings.Contains(msg, "waits for ingest Job "+ingest.Name+" to end, then runs alone"), msg
	})

	// The stream's Job ends with a backlog: its next Job is due at once, but yields to the waiting run,
	// which resumes now that no keyed ingest Job runs.
	finishJob(t, clk, ingest, 0, encode(t, ingestResult(result.Succeeded, 0, 0, 5)))
	waitStream(t, si, "yields to the exclusive run", func(s *deltav1.StreamIngest) (bool, string) {
		msg := condition(s.Status.Conditions, deltav1.ConditionReady)
		return strings.Contains(msg, "waits for maintenance Job "+alone.Name+", which runs alone"), msg
	})
	poke(t, p)
	eventually(t, "the exclusive run resumed", func() (bool, string) {
		var j batchv1.Job
		if err := k8sClient.Get(context.Background(), client.ObjectKeyFromObject(alone), &j); err != nil {
			return false, err.Error()
		}
		return j.Spec.Suspend != nil && !*j.Spec.Suspend && j.Annotations[deltav1.AnnotationResumedTime] != "",
			fmt.Sprintf("suspend %v, annotations %v", j.Spec.Suspend, j.Annotations)
	})
	clk.Step(2 * time.Minute)
	poke(t, si)
	noNewIngestJob(t, si, "a keyed stream starts no Job while maintenance runs alone")

	// When the run ends, the stream goes on.
	finishJob(t, clk, alone, 0, encode(t, maintainResult(14)))
	poke(t, si)
	next := waitIngestJob(t, si, ingest.Name)
	if next.Annotations[deltav1.AnnotationKeyedWrite] != "upsert" {
		t.Fatalf("annotations of the next ingest Job: %v", next.Annotations)
	}
}
