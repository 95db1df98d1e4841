package controllers

import (
	"context"
	"fmt"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	"k8s.io/utils/ptr"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// Maintenance next to keyed streams. An upsert, update or delete stream rewrites or marks rows in the files
// its keys hit; a compaction or clustering run that rewrites one of those files conflicts with the batch and
// loses the file (Delta's rule: a rewrite is valid only while every file it read is live). With clustered keys
// the run re-plans around the few files it lost and makes progress; with random keys every batch touches
// nearly every file, and a run can lose all of its work, every time. Retrying cannot fix that, so the
// manager takes turns: once the table's recent runs have lost their work this way, its next maintenance Job
// runs alone — it starts only when no keyed ingest Job writes the table, and keyed streams start no ingest Job
// until it ends (ingest Jobs are bounded to half their interval, so the wait is short). Appends never
// conflict and never wait. The turn lasts while any of the last exclusiveLookback runs lost its work.

// exclusiveLookback is how many of the table's latest maintenance runs are looked at.
const exclusiveLookback = 3

// losesToKeyedWrites reports whether one of the table's latest maintenance runs lost at least as many
// input files to concurrent commits as it rewrote, and names it.
func losesToKeyedWrites(t *deltav1.DeltaTable) (string, bool) {
	seen := 0
	for i := range t.Status.RecentRuns {
		r := &t.Status.RecentRuns[i]
		if r.HasOperation(deltav1.OperationInspect) || r.Result == deltav1.RunRunning {
			continue
		}
		if r.ConflictFiles > 0 && r.ConflictFiles >= r.FilesRemoved {
			return fmt.Sprintf("run %s lost %d input files to concurrent commits and rewrote %d", r.JobName, r.ConflictFiles, r.FilesRemoved), true
		}
		if seen++; seen >= exclusiveLookback {
			break
		}
	}
	return "", false
}

// liveKeyedIngest names the live ingest Jobs of keyed streams writing the table.
func (r *reconcilerBase) liveKeyedIngest(ctx context.Context, namespace, table string) ([]string, error) {
	var list batchv1.JobList
	if err := r.List(ctx, &list, client.InNamespace(namespace),
		client.MatchingLabels{deltav1.LabelTable: LabelValue(table), deltav1.LabelOperation: string(JobIngest)}); err != nil {
		return nil, fmt.Errorf("list ingest Jobs of table %s/%s: %w", namespace, table, err)
	}
	var names []string
	for i := range list.Items {
		j := &list.Items[i]
		if j.Annotations[deltav1.AnnotationTable] == table && j.Annotations[deltav1.AnnotationKeyedWrite] != "" && isLive(j) {
			names = append(names, j.Name)
		}
	}
	return names, nil
}

// liveExclusiveMaintenance returns the name of the live maintenance Job that runs alone on the table, or "".
func (r *reconcilerBase) liveExclusiveMaintenance(ctx context.Context, namespace, table string) (string, error) {
	jobs, err := r.tableJobs(ctx, namespace, table)
	if err != nil {
		return "", err
	}
	for i := range jobs {
		if j := &jobs[i]; j.Annotations[deltav1.AnnotationExclusive] == "true" && isLive(j) {
			return j.Name, nil
		}
	}
	return "", nil
}

// exclusiveWait explains a maintenance run that waits for keyed ingest Jobs to end.
func exclusiveWait(table string, writers []string, why string) string {
	return fmt.Sprintf("table %s: waits for ingest Job %s to end, then runs alone (%s)", table, strings.Join(writers, ", "), why)
}

// resumeAlone resumes the policy's exclusive Jobs that were created suspended once no keyed ingest Job
// writes their table any more, and says which still wait. Ingest Jobs are not the policy's, so their end
// wakes nothing: a waiting Job makes the pass look again within requeueYield.
func (p *policyPass) resumeAlone(ctx context.Context, w *wakeup) error {
	for i := range p.jobs {
		j := &p.jobs[i]
		if j.Annotations[deltav1.AnnotationExclusive] != "true" || !ptr.Deref(j.Spec.Suspend, false) || !isLive(j) || j.DeletionTimestamp != nil {
			continue
		}
		table := j.Annotations[deltav1.AnnotationTable]
		writers, err := p.r.liveKeyedIngest(ctx, j.Namespace, table)
		if err != nil {
			return err
		}
		if len(writers) > 0 {
			p.ps.waiting = append(p.ps.waiting, exclusiveWait(table, writers, "Job "+j.Name+" is suspended until then"))
			w.in(requeueYield)
			continue
		}
		patch := client.MergeFrom(j.DeepCopy())
		j.Spec.Suspend = ptr.To(false)
		j.Annotations[deltav1.AnnotationResumedTime] = p.now.UTC().Format(time.RFC3339)
		err = p.r.Patch(ctx, j, patch)
		if client.IgnoreNotFound(err) != nil {
			return fmt.Errorf("resume Job %s/%s: %w", j.Namespace, j.Name, err)
		}
		ctrl.LoggerFrom(ctx).Info("Resumed maintenance Job to run alone on the table", "job", j.Name, "table", table)
	}
	return nil
}
