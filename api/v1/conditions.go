package v1

// Condition types. Every kind has Ready, so `kubectl wait --for=condition=Ready` and GitOps health checks
// (Argo CD, Flux kstatus) work the same way for all of them.
const (
	// ConditionReady summarises the object: True when it is doing what its spec asks.
	ConditionReady = "Ready"

	// ConditionReachable (DeltaTable) is True when the last inspect Job could read the table.
	ConditionReachable = "Reachable"
	// ConditionPropertiesApplied (DeltaTable) is True when the table carries the declared properties and
	// clustering columns.
	ConditionPropertiesApplied = "PropertiesApplied"
	// ConditionMaintenanceSucceeded (DeltaTable) reflects the last maintenance run on the table, from any policy.
	ConditionMaintenanceSucceeded = "MaintenanceSucceeded"

	// ConditionLastRunSucceeded (OptimizePolicy) reflects the policy's last finished run.
	ConditionLastRunSucceeded = "LastRunSucceeded"

	// ConditionProgressing (StreamIngest) is True while the stream has work and its Jobs commit batches.
	ConditionProgressing = "Progressing"
	// ConditionStalled (every kind) is True when the object cannot progress until someone acts: an invalid
	// spec, a refusal, a bad file or new columns under failOnNewColumns for a stream. kstatus (Flux, `kubectl
	// wait`) and Argo CD read it as failed. A StreamIngest's reconciler keeps it as the stream's last outcome.
	ConditionStalled = "Stalled"
	// ConditionReconciling (every kind) is True while the status has not caught up with the spec: the spec's
	// generation is not applied yet, or the Job that establishes the status (a table's inspect Job) runs.
	// kstatus reads it as in progress.
	ConditionReconciling = "Reconciling"
)

// Condition and RunRecord reasons, all of them: the reconcilers define none of their own. They are CamelCase, stable, and meant for alerting rules and automation; messages carry
// the details for people.
const (
	// ReasonPending: no Job has reported yet.
	ReasonPending = "Pending"
	// ReasonInspecting: an inspect Job is running.
	ReasonInspecting = "Inspecting"
	// ReasonInspected: the last inspect Job read the table.
	ReasonInspected = "Inspected"
	// ReasonUnreachable: the worker could not read the table (storage error, missing table, credentials).
	ReasonUnreachable = "Unreachable"
	// ReasonTableNotFound: there is no Delta table (no _delta_log) at the location.
	ReasonTableNotFound = "TableNotFound"
	// ReasonDuplicateLocation: another DeltaTable, older, manages the same physical table; this one runs
	// nothing until that one is deleted.
	ReasonDuplicateLocation = "DuplicateLocation"
	// ReasonStartFailed: a worker Job's pod did not start within jobTemplate.startTimeout (pod creation
	// refused, unschedulable, image not pulled); the Job was deleted.
	ReasonStartFailed = "StartFailed"
	// ReasonUnsupportedTable: the table uses a feature the worker does not implement; it refused to write.
	ReasonUnsupportedTable = "UnsupportedTable"
	// ReasonPropertiesApplied: the table carries the declared properties.
	ReasonPropertiesApplied = "PropertiesApplied"
	// ReasonPropertiesPending: the declared properties differ and will be committed by the next inspect Job.
	ReasonPropertiesPending = "PropertiesPending"
	// ReasonJobFailed: a worker Job failed without a result.
	ReasonJobFailed = "JobFailed"
	// ReasonInvalidResult: a worker Job's result could not be parsed.
	ReasonInvalidResult = "InvalidResult"
	// ReasonRunSucceeded: the last run succeeded (or found nothing to do).
	ReasonRunSucceeded = "RunSucceeded"
	// ReasonRunFailed: the last run failed.
	ReasonRunFailed = "RunFailed"
	// ReasonRunRefused: the worker refused to run (unsupported table or bad argument).
	ReasonRunRefused = "RunRefused"

	// ReasonScheduled: the policy is waiting for its next slot.
	ReasonScheduled = "Scheduled"
	// ReasonSuspended: the policy or stream is suspended.
	ReasonSuspended = "Suspended"
	// ReasonInvalidSchedule: the schedule or time zone cannot be parsed.
	ReasonInvalidSchedule = "InvalidSchedule"
	// ReasonInvalidSpec: the spec cannot work until someone changes it (a column list the worker's flags
	// cannot carry, a Job the API server rejects, a bad label selector).
	ReasonInvalidSpec = "InvalidSpec"
	// ReasonNoStepsEnabled: an OptimizePolicy enables no maintenance step.
	ReasonNoStepsEnabled = "NoStepsEnabled"
	// ReasonNoTargets: the targets resolve to no DeltaTable.
	ReasonNoTargets = "NoTargets"
	// ReasonTargetNotFound: a named target table does not exist.
	ReasonTargetNotFound = "TargetNotFound"
	// ReasonMissedSchedule: a slot was missed by more than startingDeadlineSeconds and skipped.
	ReasonMissedSchedule = "MissedSchedule"
	// ReasonConcurrencyForbid (a skipped RunRecord): the policy's previous Job on the table still ran and
	// concurrencyPolicy is Forbid.
	ReasonConcurrencyForbid = "ConcurrencyForbid"
	// ReasonReplaced (a failed RunRecord): the Job was stopped for a new slot by concurrencyPolicy Replace.
	ReasonReplaced = "Replaced"

	// ReasonIngestNotAvailable: this build's worker cannot run the requested ingest.
	ReasonIngestNotAvailable = "IngestNotAvailable"
	// ReasonBatchCommitted: the last batch committed.
	ReasonBatchCommitted = "BatchCommitted"
	// ReasonCompleted: an availableNow stream processed everything.
	ReasonCompleted = "Completed"
	// ReasonCaughtUp: the stream's last Job left no backlog; it waits for new files.
	ReasonCaughtUp = "CaughtUp"
	// ReasonSourceUnreachable: the stream's last Job could not read the source or write the table (network,
	// credentials, permissions); the next Job retries after a backoff.
	ReasonSourceUnreachable = "SourceUnreachable"
	// ReasonBadFile: a bad source file stopped the stream (onBadFile: fail); nothing of its batch committed.
	ReasonBadFile = "BadFile"
	// ReasonSchemaChangeNeeded: the source has columns the table lacks and schemaEvolution is
	// failOnNewColumns.
	ReasonSchemaChangeNeeded = "SchemaChangeNeeded"
)
