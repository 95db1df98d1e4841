package controllers

import (
	"math"
	"slices"
	"strconv"
	"strings"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// A scale-out run (OptimizePolicy spec.parallelism > 1) is one Indexed Job: every index runs
// `worker maintain … --share $(JOB_COMPLETION_INDEX)/N --run-id <job> --at-version V`, rewriting its share of
// the plan made from version V, and index 0 then waits for the others' manifests, makes the run's one commit
// and runs the other steps (checkpoint); with vacuum, every index vacuums its part of the table once the
// commit is made, and index 0's result sums the parts. Index 0 commits rather than a second Job so that the run is
// one Job from start to end: the table lock (live Jobs on the table) and the Job-admission count cover it
// without a gap between a share Job and a commit Job, and no reconcile must notice the shares finishing.

// ShareRequest is the scale-out part of a JobRequest.
type ShareRequest struct {
	// Count is the number of shares (completions and parallelism of the Indexed Job).
	Count int32
	// AtVersion is the table version every share plans from: the table's last inspected version, pinned
	// by the reconciler so that all indexes (and their retries) plan the same work.
	AtVersion int64
}

// completionIndexAnnotation is the Job controller's annotation with a pod's completion index.
const completionIndexAnnotation = "batch.kubernetes.io/job-completion-index"

// shareRequest decides whether a maintenance run on table is spread over several pods: parallelism above
// 1, a compaction or clustering step that can be shared (Z-order cannot), and a known table version to pin.
// waitReason is set when the run should wait for the table's first inspection instead.
func shareRequest(pol *deltav1.OptimizePolicy, table *deltav1.DeltaTable, args []string, ops []deltav1.Operation, runNow bool) (req *ShareRequest, waitReason string) {
	n := pol.RunParallelism(runNow)
	if n <= 1 || slices.Contains(args, "--zorder-by") ||
		!slices.Contains(ops, deltav1.OperationOptimize) && !slices.Contains(ops, deltav1.OperationCluster) {
		return nil, ""
	}
	if table.Status.Version == nil {
		return nil, "table " + table.Name + " has no inspected version yet to pin the shares' plan to"
	}
	return &ShareRequest{Count: n, AtVersion: *table.Status.Version}, ""
}

// shareArgs are the worker flags of every index; the kubelet expands $(JOB_COMPLETION_INDEX), which the Job
// controller sets in each pod. Index 0 waits for the others for at most three quarters of the Job's
// deadline, so that it commits what is done before the deadline ends the Job.
func shareArgs(s *ShareRequest, runID string, activeDeadline int64) []string {
	wait := max(activeDeadline*3/4, 60)
	return []string{"--share", "$(JOB_COMPLETION_INDEX)/" + strconv.Itoa(int(s.Count)), "--run-id", runID,
		"--at-version", strconv.FormatInt(s.AtVersion, 10), "--share-wait", strconv.FormatInt(wait, 10) + "s"}
}

// makeIndexed turns a built worker Job into the run's Indexed Job: one completion per share, all running
// at once, retries counted per index (a retried index redoes exactly its share). The Job's pod failure
// policy still fails the whole Job on a refusal and ignores disruptions.
func makeIndexed(job *batchv1.Job, s *ShareRequest, backoff int32) {
	spec := &job.Spec
	spec.CompletionMode = ptr.To(batchv1.IndexedCompletion)
	spec.Completions = ptr.To(s.Count)
	spec.Parallelism = ptr.To(s.Count)
	spec.BackoffLimitPerIndex = ptr.To(backoff)
	// With backoffLimitPerIndex the Job-wide limit is not the bound (the API's default is MaxInt32).
	spec.BackoffLimit = ptr.To(int32(math.MaxInt32))
	if job.Annotations == nil {
		job.Annotations = map[string]string{}
	}
	job.Annotations[deltav1.AnnotationShares] = strconv.Itoa(int(s.Count)) + "@" + strconv.FormatInt(s.AtVersion, 10)
}

// isIndexed reports whether job is a scale-out run.
func isIndexed(job *batchv1.Job) bool {
	return job.Spec.CompletionMode != nil && *job.Spec.CompletionMode == batchv1.IndexedCompletion
}

// resultPods are the pods whose termination message is the run's result: index 0's for a scale-out run
// (it made the commit and ran the other steps), every pod otherwise.
func resultPods(job *batchv1.Job, pods []corev1.Pod) []corev1.Pod {
	if !isIndexed(job) {
		return pods
	}
	var out []corev1.Pod
	for _, p := range pods {
		if p.Annotations[completionIndexAnnotation] == "0" {
			out = append(out, p)
		}
	}
	return out
}

// shareProgress is the per-index progress of a scale-out Job, with the commit's outcome from index 0's
// result when there is one; nil for other Jobs.
func shareProgress(job *batchv1.Job, res *result.Result) *deltav1.ShareProgress {
	if !isIndexed(job) {
		return nil
	}
	sp := &deltav1.ShareProgress{Completed: truncate(job.Status.CompletedIndexes, 256), Retries: job.Status.Failed}
	if job.Spec.Completions != nil {
		sp.Parallelism = *job.Spec.Completions
	}
	if c, v, ok := strings.Cut(job.Annotations[deltav1.AnnotationShares], "@"); ok {
		if n, err := strconv.ParseInt(v, 10, 64); err == nil {
			sp.AtVersion = n
		}
		if n, err := strconv.ParseInt(c, 10, 32); err == nil && sp.Parallelism == 0 {
			sp.Parallelism = int32(n)
		}
	}
	if f := job.Status.FailedIndexes; f != nil {
		sp.Failed = truncate(*f, 256)
	}
	if res != nil && res.Share != nil {
		sh := res.Share
		sp.Committed, sp.Dropped, sp.Missing = joinInts(sh.Committed), joinInts(sh.Dropped), joinInts(sh.Missing)
		sp.SupersededFiles = int32(min(sh.SupersededFiles, math.MaxInt32))
		sp.Vacuumed, sp.VacuumedFiles = joinInts(sh.Vacuumed), sh.VacuumFilesDeleted
	}
	return sp
}

func joinInts(xs []int) string {
	s := make([]string, len(xs))
	for i, x := range xs {
		s[i] = strconv.Itoa(x)
	}
	return truncate(strings.Join(s, ","), 256)
}

// refreshShares copies the per-index progress of the policy's running scale-out Jobs into their tables'
// Running records, so that status shows which shares are done while the run goes on.
func (ps *policyStatus) refreshShares(jobs []batchv1.Job) {
	for i := range jobs {
		j := &jobs[i]
		if !isLive(j) || !isIndexed(j) {
			continue
		}
		if rec := ps.lastRun[j.Annotations[deltav1.AnnotationTable]]; rec != nil && rec.JobName == j.Name && rec.Result == deltav1.RunRunning {
			rec.Shares = shareProgress(j, nil)
		}
	}
}
