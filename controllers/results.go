package controllers

import (
	"fmt"
	"slices"
	"strconv"
	"strings"
	"time"

	batchv1 "k8s.io/api/batch/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/worker/result"
)

// resultGrace is how long after a Job finished its pod may still be missing from the cache (the Job and Pod
// informers are independent). After it, a finished Job without a readable pod is recorded without a result.
const resultGrace = 30 * time.Second

// maxRecordMessage is RunRecord.Message's limit in the CRD.
const maxRecordMessage = 1024

// jobFinished reports whether a Job ended and whether it succeeded, with the terminal condition.
func jobFinished(job *batchv1.Job) (finished, succeeded bool, cond *batchv1.JobCondition) {
	for i := range job.Status.Conditions {
		c := &job.Status.Conditions[i]
		if c.Status != corev1.ConditionTrue {
			continue
		}
		switch c.Type {
		case batchv1.JobComplete:
			return true, true, c
		case batchv1.JobFailed:
			return true, false, c
		}
	}
	return false, false, nil
}

// isLive reports whether a Job may still have a running pod: not finished (a Job being deleted in the
// foreground counts as live until its pods are gone) and not marked as never having started (its pod never
// ran, and the Job is being deleted: see jobstart.go).
func isLive(job *batchv1.Job) bool {
	if _, marked := startFailed(job); marked {
		return false
	}
	finished, _, _ := jobFinished(job)
	return !finished
}

// finishedRun is one finished worker Job and what it reported.
type finishedRun struct {
	Job    *batchv1.Job
	Kind   JobKind
	Record deltav1.RunRecord
	// Result is the worker's report; nil when the Job left none that could be read.
	Result *result.Result
	// Problem is ReasonJobFailed or ReasonInvalidResult when Result is nil.
	Problem string
	// Generation is the DeltaTable generation an inspect Job applied.
	Generation int64
}

// readRun builds the run of a finished Job from its pods' termination messages. ready is false while the
// final pod is not yet visible (within resultGrace of the Job finishing): the caller looks again shortly.
func readRun(job *batchv1.Job, pods []corev1.Pod, now time.Time) (run finishedRun, ready bool) {
	_, succeeded, cond := jobFinished(job)
	run = finishedRun{Job: job, Kind: JobKind(job.Labels[deltav1.LabelOperation]), Record: baseRecord(job, cond)}
	if g, err := strconv.ParseInt(job.Annotations[deltav1.AnnotationGeneration], 10, 64); err == nil {
		run.Generation = g
	}
	defer func() { run.Record.Shares = shareProgress(job, run.Result) }()
	if why, marked := startFailed(job); marked && cond == nil {
		run.Record.CompletionTime = &metav1.Time{Time: now}
		run.setProblem(deltav1.ReasonStartFailed, why)
		return run, true
	}
	state := lastTerminated(job, resultPods(job, pods), succeeded)
	if state == nil {
		if now.Sub(run.Record.When()) < resultGrace {
			return run, false
		}
		if succeeded {
			run.setProblem(deltav1.ReasonInvalidResult, "the Job completed but its pod, and with it the result, is gone")
		} else {
			run.setProblem(deltav1.ReasonJobFailed, "the Job failed: "+jobConditionText(cond))
		}
		return run, true
	}
	res, err := result.Decode([]byte(strings.TrimSpace(state.Message)))
	switch {
	case err == nil:
		run.setResult(res)
	case state.ExitCode == 0:
		run.setProblem(deltav1.ReasonInvalidResult, fmt.Sprintf("the worker exited 0 but its result could not be read (%v); is the worker image older or newer than the manager?", err))
	default:
		msg := fmt.Sprintf("the worker exited with code %d (%s)", state.ExitCode, state.Reason)
		if out := lastLines(state.Message, 3); out != "" {
			msg += ": " + out
		}
		if !succeeded && cond != nil && cond.Reason != "" && cond.Reason != "BackoffLimitExceeded" {
			msg += "; Job: " + jobConditionText(cond)
		}
		run.setProblem(deltav1.ReasonJobFailed, msg)
	}
	return run, true
}

// baseRecord fills what the Job itself says about the run.
func baseRecord(job *batchv1.Job, cond *batchv1.JobCondition) deltav1.RunRecord {
	rec := deltav1.RunRecord{
		JobName:    job.Name,
		Table:      job.Annotations[deltav1.AnnotationTable],
		Operations: splitOperations(job.Annotations[deltav1.AnnotationOperations]),
		Reason:     job.Annotations[deltav1.AnnotationTrigger],
		StartTime:  job.Status.StartTime,
	}
	if rec.StartTime == nil {
		rec.StartTime = ptrTime(job.CreationTimestamp)
	}
	if t, err := time.Parse(time.RFC3339, job.Annotations[deltav1.AnnotationScheduledTime]); err == nil {
		rec.ScheduledTime = &metav1.Time{Time: t}
	}
	switch {
	case job.Status.CompletionTime != nil:
		rec.CompletionTime = job.Status.CompletionTime
	case cond != nil:
		rec.CompletionTime = ptrTime(cond.LastTransitionTime)
	}
	return rec
}

func ptrTime(t metav1.Time) *metav1.Time {
	if t.IsZero() {
		return nil
	}
	return &t
}

func (r *finishedRun) setProblem(reason, msg string) {
	r.Problem = reason
	r.Record.Result = deltav1.RunFailed
	r.Record.Reason = reason
	r.Record.Message = sanitize(msg, maxRecordMessage)
}

// setResult fills the record from the worker's report.
func (r *finishedRun) setResult(res *result.Result) {
	r.Result = res
	rec := &r.Record
	switch res.Outcome {
	case result.Succeeded:
		rec.Result = deltav1.RunSucceeded
	case result.NothingToDo:
		rec.Result = deltav1.RunNothingToDo
	case result.Refused:
		rec.Result = deltav1.RunRefused
	default:
		rec.Result = deltav1.RunFailed
	}
	if res.Outcome == result.Failed || res.Outcome == result.Refused {
		rec.Reason = res.Reason
	}
	rec.TableVersion = res.Version
	if rec.TableVersion == nil && res.Table != nil {
		rec.TableVersion = &res.Table.Version
	}
	for _, op := range res.Ops {
		rec.FilesAdded += op.FilesAdded
		rec.FilesRemoved += op.FilesRemoved
		rec.BytesAdded += op.BytesAdded
		rec.BytesRemoved += op.BytesRemoved
		rec.ConflictFiles += op.ConflictFiles
	}
	rec.Message = sanitize(summarize(res), maxRecordMessage)
}

// summarize is a one-line account of a result for people, in the terms of the spec that started the Job.
func summarize(res *result.Result) string {
	var parts []string
	if res.Message != "" {
		parts = append(parts, res.Message)
	}
	for _, op := range res.Ops {
		s := op.Name + " " + string(op.Outcome)
		if op.FilesAdded != 0 || op.FilesRemoved != 0 {
			s += fmt.Sprintf(" (-%d/+%d files, -%s/+%s)", op.FilesRemoved, op.FilesAdded, humanBytes(op.BytesRemoved), humanBytes(op.BytesAdded))
		}
		// A failed step's error is also the run's message (the worker joins them): say it once.
		if op.Message != "" && op.Outcome != result.Succeeded && !strings.Contains(res.Message, op.Message) {
			s += ": " + op.Message
		}
		parts = append(parts, s)
	}
	if s, ok := committedDeclaration(res); ok {
		parts = append(parts, s)
	}
	if t := res.Table; t != nil {
		parts = append(parts, fmt.Sprintf("version %d: %d files (%d small), %s", t.Version, t.NumFiles, t.NumSmallFiles, humanBytes(t.SizeBytes)))
	}
	if len(parts) == 0 {
		return string(res.Outcome)
	}
	return specTerms.Replace(strings.Join(parts, "; "))
}

// specTerms rewrites the worker's advice about its command-line flags into the spec fields that set them:
// someone reading a Job's result in a status changes the object, not a command line.
var specTerms = strings.NewReplacer(
	"pass --allow-short-retention", "set the OptimizePolicy's spec.vacuum.allowShortRetention: true",
	"pass --retention", "set the OptimizePolicy's spec.vacuum.retention",
	"pass --target-file-size", "set the OptimizePolicy's spec.compaction.targetFileSize",
	"declare them with inspect --cluster-by", "declare them in the DeltaTable's spec.clusterBy",
)

// lastTerminated returns the worker container's final state in the Job's newest terminated pod, preferring
// a pod that exited 0 when the Job succeeded.
func lastTerminated(job *batchv1.Job, pods []corev1.Pod, succeeded bool) *corev1.ContainerStateTerminated {
	better := func(a, b *corev1.ContainerStateTerminated) bool {
		if succeeded && (a.ExitCode == 0) != (b.ExitCode == 0) {
			return a.ExitCode == 0
		}
		return a.FinishedAt.After(b.FinishedAt.Time)
	}
	var best *corev1.ContainerStateTerminated
	for i := range pods {
		p := &pods[i]
		if ref := metav1.GetControllerOf(p); ref != nil && ref.UID != job.UID {
			continue
		}
		for j := range p.Status.ContainerStatuses {
			cs := &p.Status.ContainerStatuses[j]
			if cs.Name == workerContainer && cs.State.Terminated != nil && (best == nil || better(cs.State.Terminated, best)) {
				best = cs.State.Terminated
			}
		}
	}
	return best
}

// stuckPod explains why a live Job's pod cannot start (missing Secret, image pull failure), or "".
func stuckPod(pods []corev1.Pod) string {
	for i := range pods {
		for _, cs := range pods[i].Status.ContainerStatuses {
			if w := cs.State.Waiting; w != nil && slices.Contains(stuckReasons, w.Reason) {
				return sanitize(fmt.Sprintf("worker pod %s cannot start: %s: %s", pods[i].Name, w.Reason, w.Message), 512)
			}
		}
	}
	return ""
}

var stuckReasons = []string{"CreateContainerConfigError", "CreateContainerError", "ErrImagePull", "ImagePullBackOff", "InvalidImageName"}

func jobConditionText(cond *batchv1.JobCondition) string {
	if cond == nil {
		return "no reason given"
	}
	if cond.Message == "" {
		return cond.Reason
	}
	return cond.Reason + ": " + cond.Message
}

// humanBytes renders a size with binary units, e.g. 12.3GiB.
func humanBytes(n int64) string {
	const unit = 1024
	if n < unit {
		return strconv.FormatInt(n, 10) + "B"
	}
	div, exp := int64(unit), 0
	for m := n / unit; m >= unit && exp < 5; m /= unit {
		div *= unit
		exp++
	}
	return strconv.FormatFloat(float64(n)/float64(div), 'f', 1, 64) + string("KMGTPE"[exp]) + "iB"
}
