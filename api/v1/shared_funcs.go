package v1

import "time"

// Labels and annotations that deltakeeper puts on the objects it creates. They are part of the API: users
// select worker Jobs with them (`kubectl get jobs -l deltakeeper.io/table=orders`) and network policies or
// cost reports key on them. Nothing else is copied from a DeltaTable or OptimizePolicy onto its Jobs: copying a
// parent's labels would copy GitOps tracking labels (Argo CD's app.kubernetes.io/instance) and make the
// GitOps tool adopt or prune the Jobs.
const (
	// LabelTable is the DeltaTable a worker Job works on. Names longer than a label value allows are
	// shortened with a hash (see controllers.LabelValue); AnnotationTable always holds the full name.
	LabelTable = "deltakeeper.io/table"
	// LabelOperation is the kind of worker Job: inspect, maintain or ingest.
	LabelOperation = "deltakeeper.io/operation"
	// LabelPolicy is the OptimizePolicy that started a maintenance Job.
	LabelPolicy = "deltakeeper.io/policy"
	// LabelStream is the StreamIngest that started an ingest Job.
	LabelStream = "deltakeeper.io/stream"

	// AnnotationTable is the full DeltaTable name of a worker Job and its pods.
	AnnotationTable = "deltakeeper.io/table-name"
	// AnnotationPolicy is the full OptimizePolicy name of a maintenance Job.
	AnnotationPolicy = "deltakeeper.io/policy-name"
	// AnnotationStream is the full StreamIngest name of an ingest Job.
	AnnotationStream = "deltakeeper.io/stream-name"
	// AnnotationScheduledTime is the schedule slot (or request time) a Job belongs to, RFC 3339.
	AnnotationScheduledTime = "deltakeeper.io/scheduled-time"
	// AnnotationTrigger is why the Job was started: Schedule, RunNow, a crossed trigger, SpecChanged, ….
	AnnotationTrigger = "deltakeeper.io/trigger"
	// AnnotationOperations lists the Operations a Job performs, comma-separated, in order.
	AnnotationOperations = "deltakeeper.io/operations"
	// AnnotationShares on a scale-out maintenance Job is "<shares>@<pinned table version>".
	AnnotationShares = "deltakeeper.io/shares"
	// AnnotationGeneration is the DeltaTable generation an inspect Job applies.
	AnnotationGeneration = "deltakeeper.io/generation"
	// AnnotationStartFailed on a worker Job says why its pod never started; the manager sets it when
	// jobTemplate.startTimeout passes, records the run as failed and deletes the Job.
	AnnotationStartFailed = "deltakeeper.io/start-failed"
	// AnnotationExclusive on a maintenance Job says it runs alone on its table: the table's recent runs lost
	// their work to concurrent keyed writes, so keyed streams start no ingest Job until it ends.
	AnnotationExclusive = "deltakeeper.io/exclusive"
	// AnnotationResumedTime on a Job created suspended (an exclusive run waiting for keyed ingest Jobs to
	// end) is when the manager resumed it, RFC 3339; its start timeout counts from then.
	AnnotationResumedTime = "deltakeeper.io/resumed-time"
	// AnnotationKeyedWrite on an ingest Job names its keyed update method (upsert, update, delete): its
	// batches rewrite or mark existing rows, so they conflict with maintenance rewrites of the same files.
	AnnotationKeyedWrite = "deltakeeper.io/keyed-write"

	// AnnotationRunNow on an OptimizePolicy requests one run on every target now, regardless of schedule and
	// triggers. Any new value (a timestamp is customary) is a new request; status.lastRunNow records the
	// value acted on.
	AnnotationRunNow = "deltakeeper.io/run-now"
	// AnnotationRunNowParallelism on an OptimizePolicy sets spec.parallelism for the run-now request only
	// (1 to MaxParallelism).
	AnnotationRunNowParallelism = "deltakeeper.io/run-now-parallelism"
)

// MaxParallelism is the most pods one maintenance run may be spread over (spec.parallelism).
const MaxParallelism = 32

// Defaults of JobTemplate fields. The CRD markers repeat them for objects that carry a jobTemplate; these
// apply when the template is absent altogether.
const (
	DefaultActiveDeadlineSeconds   int64 = 21600
	DefaultBackoffLimit            int32 = 1
	DefaultTTLSecondsAfterFinished int32 = 86400
	// DefaultStartTimeout is how long a worker pod may take to start.
	DefaultStartTimeout = 10 * time.Minute
)

// StartTimeoutDuration returns the template's startTimeout or its default; t may be nil.
func (t *JobTemplate) StartTimeoutDuration() time.Duration {
	if t == nil || t.StartTimeout == nil || t.StartTimeout.Duration <= 0 {
		return DefaultStartTimeout
	}
	return t.StartTimeout.Duration
}

// ActiveDeadline returns the template's activeDeadlineSeconds or its default; t may be nil.
func (t *JobTemplate) ActiveDeadline() int64 {
	if t == nil || t.ActiveDeadlineSeconds == nil {
		return DefaultActiveDeadlineSeconds
	}
	return *t.ActiveDeadlineSeconds
}

// Backoff returns the template's backoffLimit or its default; t may be nil.
func (t *JobTemplate) Backoff() int32 {
	if t == nil || t.BackoffLimit == nil {
		return DefaultBackoffLimit
	}
	return *t.BackoffLimit
}

// TTLAfterFinished returns the template's ttlSecondsAfterFinished or its default; t may be nil.
func (t *JobTemplate) TTLAfterFinished() int32 {
	if t == nil || t.TTLSecondsAfterFinished == nil {
		return DefaultTTLSecondsAfterFinished
	}
	return *t.TTLSecondsAfterFinished
}

// IsFinished reports whether a run record describes a run that ended (not Running).
func (r RunRecord) IsFinished() bool { return r.Result != RunRunning }

// When is the record's most precise time: completion, else start, else the scheduled slot.
func (r RunRecord) When() time.Time {
	switch {
	case r.CompletionTime != nil:
		return r.CompletionTime.Time
	case r.StartTime != nil:
		return r.StartTime.Time
	case r.ScheduledTime != nil:
		return r.ScheduledTime.Time
	}
	return time.Time{}
}

// HasOperation reports whether the run performed op.
func (r RunRecord) HasOperation(op Operation) bool {
	for _, o := range r.Operations {
		if o == op {
			return true
		}
	}
	return false
}
