package v1

import (
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// OptimizePolicySpec says when and how to maintain a set of DeltaTables in the policy's namespace.
//
// At every schedule slot (and on a run-now request) the policy looks at each target table's last inspected
// status, and starts one maintenance Job per table whose triggers are crossed. Whatever starts it, at most one
// maintenance Job runs per table at any time.
type OptimizePolicySpec struct {
	// Targets selects the tables to maintain.
	Targets PolicyTargets `json:"targets"`

	// Schedule in standard 5-field cron format (minute hour day-of-month month day-of-week), evaluated in
	// TimeZone. Without a schedule the policy runs only on a run-now request.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:XValidation:rule="self.split(' ').filter(f, f != '').size() == 5",message="schedule must have exactly five space-separated fields (minute hour day-of-month month day-of-week), e.g. '0 3 * * *'"
	// +kubebuilder:validation:XValidation:rule="!self.contains('TZ=')",message="schedule must not contain TZ= or CRON_TZ=: set spec.timeZone instead"
	// +kubebuilder:validation:XValidation:rule="self.split(' ').filter(f, f != '').size() != 5 || self.split(' ').filter(f, f != '')[0].matches('^([*?]|[0-5]?[0-9](-[0-5]?[0-9])?)(/[1-9][0-9]*)?(,([*?]|[0-5]?[0-9](-[0-5]?[0-9])?)(/[1-9][0-9]*)?)*$')",messageExpression=`'schedule "' + self + '": minute field "' + self.split(' ').filter(f, f != '')[0] + '" is not in 0-59; write a number, a range (1-5), a list (1,15), a step (*/15) or *'`
	// +kubebuilder:validation:XValidation:rule="self.split(' ').filter(f, f != '').size() != 5 || self.split(' ').filter(f, f != '')[1].matches('^([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]*)?(,([*?]|([01]?[0-9]|2[0-3])(-([01]?[0-9]|2[0-3]))?)(/[1-9][0-9]*)?)*$')",messageExpression=`'schedule "' + self + '": hour field "' + self.split(' ').filter(f, f != '')[1] + '" is not in 0-23; write a number, a range (1-5), a list (1,15), a step (*/15) or *'`
	// +kubebuilder:validation:XValidation:rule="self.split(' ').filter(f, f != '').size() != 5 || self.split(' ').filter(f, f != '')[2].matches('^([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]*)?(,([*?]|(0?[1-9]|[12][0-9]|3[01])(-(0?[1-9]|[12][0-9]|3[01]))?)(/[1-9][0-9]*)?)*$')",messageExpression=`'schedule "' + self + '": day-of-month field "' + self.split(' ').filter(f, f != '')[2] + '" is not in 1-31; write a number, a range (1-5), a list (1,15), a step (*/15) or *'`
	// +kubebuilder:validation:XValidation:rule="self.split(' ').filter(f, f != '').size() != 5 || self.split(' ').filter(f, f != '')[3].matches('^([*?]|(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/[1-9][0-9]*)?(,([*?]|(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec))(-(0?[1-9]|1[0-2]|(?i:jan|feb|mar|apr|may|jun|jul|aug|sep|oct|nov|dec)))?)(/[1-9][0-9]*)?)*$')",messageExpression=`'schedule "' + self + '": month field "' + self.split(' ').filter(f, f != '')[3] + '" is not in 1-12 or JAN-DEC; write a number, a range (1-5), a list (1,15), a step (*/15) or *'`
	// +kubebuilder:validation:XValidation:rule="self.split(' ').filter(f, f != '').size() != 5 || self.split(' ').filter(f, f != '')[4].matches('^([*?]|([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/[1-9][0-9]*)?(,([*?]|([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat))(-([0-6]|(?i:sun|mon|tue|wed|thu|fri|sat)))?)(/[1-9][0-9]*)?)*$')",messageExpression=`'schedule "' + self + '": day-of-week field "' + self.split(' ').filter(f, f != '')[4] + '" is not in 0-6 (Sunday is 0) or SUN-SAT; write a number, a range (1-5), a list (1,15), a step (*/15) or *'`
	// +kubebuilder:validation:XValidation:rule="!self.contains('?')",messageExpression=`'schedule "' + self + '" uses ?, which Kubernetes-style cron does not need: write * for any day'`
	Schedule string `json:"schedule,omitempty"`

	// TimeZone is the IANA time zone the schedule is evaluated in.
	// +optional
	// +kubebuilder:default=UTC
	// +kubebuilder:validation:MaxLength=64
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_+\-]*(/[A-Za-z0-9_+\-]+)*$`
	TimeZone string `json:"timeZone,omitempty"`

	// Triggers decide, per table, whether a slot does any work. A table is maintained when any trigger is
	// crossed; set minSmallFiles to 0 to maintain on every slot.
	// +optional
	// +kubebuilder:default={}
	Triggers *Triggers `json:"triggers,omitempty"`

	// Compaction bin-packs small files (for tables without liquid clustering).
	// +optional
	// +kubebuilder:default={}
	Compaction *CompactionSpec `json:"compaction,omitempty"`

	// Clustering reclusters liquid-clustered tables, incrementally by default, and Z-orders others on request.
	// +optional
	// +kubebuilder:default={}
	Clustering *ClusteringSpec `json:"clustering,omitempty"`

	// Vacuum deletes files that the table no longer references and that are older than the retention.
	// +optional
	Vacuum *VacuumSpec `json:"vacuum,omitempty"`

	// Checkpoint writes a checkpoint and cleans up expired log files after maintenance.
	// +optional
	// +kubebuilder:default={}
	Checkpoint *CheckpointSpec `json:"checkpoint,omitempty"`

	// Suspend stops new runs; running Jobs finish.
	// +optional
	// +kubebuilder:default=false
	Suspend bool `json:"suspend,omitempty"`

	// ConcurrencyPolicy applies when a slot comes while this policy's previous Job on the same table still
	// runs: Forbid skips the slot, Replace stops the old Job and starts a new one, Allow waits for it to end
	// (within startingDeadlineSeconds). Jobs never overlap on one table either way.
	// +optional
	// +kubebuilder:default=Forbid
	// +kubebuilder:validation:Enum=Allow;Forbid;Replace
	ConcurrencyPolicy ConcurrencyPolicy `json:"concurrencyPolicy,omitempty"`

	// StartingDeadlineSeconds is how late a missed slot may still start; older slots are skipped and
	// recorded. Without it, at most one missed slot is caught up.
	// +optional
	// +kubebuilder:validation:Minimum=0
	StartingDeadlineSeconds *int64 `json:"startingDeadlineSeconds,omitempty"`

	// SuccessfulRunsHistoryLimit is how many finished successful Jobs to keep per policy.
	// +optional
	// +kubebuilder:default=3
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	SuccessfulRunsHistoryLimit *int32 `json:"successfulRunsHistoryLimit,omitempty"`

	// FailedRunsHistoryLimit is how many failed Jobs to keep per policy.
	// +optional
	// +kubebuilder:default=1
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	FailedRunsHistoryLimit *int32 `json:"failedRunsHistoryLimit,omitempty"`

	// JobTemplate customises the worker pods.
	// +optional
	JobTemplate *JobTemplate `json:"jobTemplate,omitempty"`

	// Parallelism spreads the compaction or clustering step of each run over this many pods of one Indexed
	// Job, each with jobTemplate's resources: every pod rewrites its share of the plan made from one table
	// version, and the pod of index 0 then makes the run's one commit and runs the other steps. A share
	// whose pod fails is retried (backoffLimit per index) and redoes exactly its share. Unset or 1: one pod.
	// The run-now annotation deltakeeper.io/run-now-parallelism overrides it for that run.
	// +optional
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=32
	Parallelism *int32 `json:"parallelism,omitempty"`
}

// ConcurrencyPolicy says what happens when a slot comes while a previous Job still runs.
type ConcurrencyPolicy string

// Concurrency policies.
const (
	ConcurrencyAllow   ConcurrencyPolicy = "Allow"
	ConcurrencyForbid  ConcurrencyPolicy = "Forbid"
	ConcurrencyReplace ConcurrencyPolicy = "Replace"
)

// PolicyTargets selects DeltaTables in the policy's namespace by name and/or label.
// +kubebuilder:validation:XValidation:rule="(has(self.tableNames) && self.tableNames.size() > 0) || has(self.selector)",message="targets needs tableNames or a selector (an empty selector {} selects every table in the namespace)"
type PolicyTargets struct {
	// TableNames lists DeltaTables by name.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +kubebuilder:validation:items:MaxLength=253
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +listType=set
	TableNames []string `json:"tableNames,omitempty"`

	// Selector selects DeltaTables by label.
	// +optional
	Selector *metav1.LabelSelector `json:"selector,omitempty"`
}

// Triggers are thresholds on a table's inspected status.
type Triggers struct {
	// MinSmallFiles runs maintenance when the table has at least this many small files.
	// +optional
	// +kubebuilder:default=50
	// +kubebuilder:validation:Minimum=0
	MinSmallFiles *int32 `json:"minSmallFiles,omitempty"`

	// MaxAvgDepth runs clustering when any clustering column's average depth exceeds it.
	// +optional
	// +kubebuilder:validation:Minimum=1
	MaxAvgDepth *float64 `json:"maxAvgDepth,omitempty"`

	// MinSkippingEffectiveness runs clustering when any clustering column's skipping effectiveness falls
	// below it.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	MinSkippingEffectiveness *float64 `json:"minSkippingEffectiveness,omitempty"`

	// UnclusteredBytes runs clustering when at least this much data is not yet clustered.
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self))",messageExpression=`'triggers.unclusteredBytes "' + string(self) + '" is not a size: use 256Mi or 1Gi (Ki, Mi, Gi, Ti; no space, no B)'`
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).isGreaterThan(quantity('0')))",message="unclusteredBytes must be positive"
	UnclusteredBytes *resource.Quantity `json:"unclusteredBytes,omitempty"`
}

// CompactionSpec configures bin-packing compaction (OPTIMIZE).
// +kubebuilder:validation:XValidation:rule="!has(self.minFileSize) || !has(self.targetFileSize) || !isQuantity(string(self.minFileSize)) || !isQuantity(string(self.targetFileSize)) || quantity(string(self.minFileSize)).compareTo(quantity(string(self.targetFileSize))) <= 0",messageExpression=`'compaction.minFileSize ' + string(self.minFileSize) + ' is above compaction.targetFileSize ' + string(self.targetFileSize) + ': files below minFileSize are compacted into files of targetFileSize, so set minFileSize at most targetFileSize (or leave it out: it defaults to targetFileSize)'`
type CompactionSpec struct {
	// Enabled turns compaction on.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// TargetFileSize of compacted files (default: the table's delta.targetFileSize, else 1Gi).
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self))",messageExpression=`'compaction.targetFileSize "' + string(self) + '" is not a size: use 256Mi or 1Gi (Ki, Mi, Gi, Ti; no space, no B)'`
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).compareTo(quantity('1Mi')) >= 0 && quantity(string(self)).compareTo(quantity('16Gi')) <= 0)",message="targetFileSize must be between 1Mi and 16Gi"
	TargetFileSize *resource.Quantity `json:"targetFileSize,omitempty"`

	// MinFileSize makes files smaller than this candidates (default: the target file size).
	// +optional
	// +kubebuilder:validation:XValidation:rule="isQuantity(string(self))",messageExpression=`'compaction.minFileSize "' + string(self) + '" is not a size: use 256Mi or 1Gi (Ki, Mi, Gi, Ti; no space, no B)'`
	// +kubebuilder:validation:XValidation:rule="!isQuantity(string(self)) || (quantity(string(self)).isGreaterThan(quantity('0')))",message="minFileSize must be positive"
	MinFileSize *resource.Quantity `json:"minFileSize,omitempty"`

	// MaxDeletedRowsRatio makes files whose deletion vectors delete more than this share of rows candidates.
	// +optional
	// +kubebuilder:default=0.05
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=1
	MaxDeletedRowsRatio *float64 `json:"maxDeletedRowsRatio,omitempty"`

	// Where restricts compaction to matching partitions, e.g. "date >= '2024-01-01'" (partition columns only).
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Where string `json:"where,omitempty"`
}

// ClusteringMode is how much of a clustered table a run reclusters.
// +kubebuilder:validation:Enum=Incremental;Full
type ClusteringMode string

// Clustering modes.
const (
	// ClusteringIncremental reclusters only unclustered, small, deletion-heavy and overlapping files.
	ClusteringIncremental ClusteringMode = "Incremental"
	// ClusteringFull reclusters every file under the current clustering columns (OPTIMIZE FULL).
	ClusteringFull ClusteringMode = "Full"
)

// ClusteringSpec configures liquid clustering and Z-ordering.
type ClusteringSpec struct {
	// Enabled turns clustering on for tables with clustering columns (and Z-ordering when zOrderBy is set).
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// Mode is Incremental (default) or Full.
	// +optional
	// +kubebuilder:default=Incremental
	Mode ClusteringMode `json:"mode,omitempty"`

	// ZOrderBy Z-orders tables without liquid clustering by these columns (whole partitions, as Delta does).
	// +optional
	// +kubebuilder:validation:MaxItems=4
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=255
	// +kubebuilder:validation:XValidation:rule="self.all(c, self.exists_one(d, d.lowerAscii() == c.lowerAscii()))",message="zOrderBy columns must be distinct ignoring case (Delta column names are case-insensitive)"
	// +listType=atomic
	ZOrderBy []string `json:"zOrderBy,omitempty"`

	// AutoRecluster merges clustered files stacked over the same region.
	// +optional
	// +kubebuilder:default={}
	AutoRecluster *AutoReclusterSpec `json:"autoRecluster,omitempty"`

	// MaxQualityGap bounds how far Incremental clustering may drift below what Full clustering reaches on
	// the same data (skipping effectiveness on any clustering column, docs/clustering-quality.md): a run
	// that would leave the layout further below also reclusters the drifted ZCubes, smallest first (a
	// partial Full), and its result says which and why. In (0, 1]; 1 never escalates.
	// +optional
	// +kubebuilder:default=0.05
	// +kubebuilder:validation:XValidation:rule="self > 0.0 && self <= 1.0",message="maxQualityGap must be in (0, 1.0]"
	MaxQualityGap *float64 `json:"maxQualityGap,omitempty"`
}

// AutoReclusterSpec configures the detection of overlapping clustered files.
type AutoReclusterSpec struct {
	// Enabled turns auto-reclustering on.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// MinOffendingFiles is the smallest group of mutually overlapping files worth reclustering.
	// +optional
	// +kubebuilder:default=4
	// +kubebuilder:validation:Minimum=2
	// +kubebuilder:validation:Maximum=10000
	MinOffendingFiles *int32 `json:"minOffendingFiles,omitempty"`

	// MinOverlapThreshold is the overlap score above which two files count as overlapping, in (0.25, 1.0].
	// +optional
	// +kubebuilder:default=0.75
	// +kubebuilder:validation:XValidation:rule="self > 0.25 && self <= 1.0",message="minOverlapThreshold must be in (0.25, 1.0]"
	MinOverlapThreshold *float64 `json:"minOverlapThreshold,omitempty"`
}

// VacuumMode is how VACUUM finds unreferenced files.
// +kubebuilder:validation:Enum=Full;Lite
type VacuumMode string

// Vacuum modes.
const (
	// VacuumFull lists storage and deletes every unreferenced file past the retention.
	VacuumFull VacuumMode = "Full"
	// VacuumLite deletes only the files named by the log's remove actions.
	VacuumLite VacuumMode = "Lite"
)

// VacuumSpec configures VACUUM.
// +kubebuilder:validation:XValidation:rule="!has(self.retention) || !self.retention.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') || duration(self.retention) != duration('0s') || (has(self.allowShortRetention) && self.allowShortRetention)",messageExpression=`'vacuum.retention ' + self.retention + ' deletes every unreferenced file at once, also files that running readers and time travel still need: set vacuum.allowShortRetention: true to confirm, or keep at least the table retention (default 168h)'`
type VacuumSpec struct {
	// Enabled turns vacuum on.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// Retention keeps removed files at least this long (default: the table's delta.deletedFileRetentionDuration,
	// else 168h). A retention shorter than the table's requires allowShortRetention.
	// +optional
	// +kubebuilder:validation:XValidation:rule="self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$')",messageExpression=`'vacuum.retention "' + self + '" is not a duration: use 24h, 168h, 720h (units h, m, s; there is no d)'`
	// +kubebuilder:validation:XValidation:rule="!self.matches('^[-+]?(0|(([0-9]+([.][0-9]*)?|[.][0-9]+)(ns|us|ms|s|m|h))+)$') || duration(self) >= duration('0s')",message="retention must not be negative"
	Retention *metav1.Duration `json:"retention,omitempty"`

	// AllowShortRetention permits a retention below the table's delta.deletedFileRetentionDuration; this can
	// break time travel and readers of older snapshots.
	// +optional
	AllowShortRetention bool `json:"allowShortRetention,omitempty"`

	// Mode is Full (list storage) or Lite (log's remove actions only).
	// +optional
	// +kubebuilder:default=Full
	Mode VacuumMode `json:"mode,omitempty"`

	// DryRun only reports what would be deleted.
	// +optional
	DryRun bool `json:"dryRun,omitempty"`
}

// CheckpointSpec configures checkpoints and log cleanup.
type CheckpointSpec struct {
	// Enabled writes a checkpoint at the end of each maintenance run.
	// +optional
	// +kubebuilder:default=true
	Enabled *bool `json:"enabled,omitempty"`

	// LogCleanup deletes log files older than the table's delta.logRetentionDuration, the protocol's safe way.
	// +optional
	// +kubebuilder:default=true
	LogCleanup *bool `json:"logCleanup,omitempty"`
}

// OptimizePolicyStatus reports the schedule and the runs of the policy.
type OptimizePolicyStatus struct {
	// ObservedGeneration is the spec generation the status describes.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`

	// Conditions: Ready, LastRunSucceeded.
	// +optional
	// +listType=map
	// +listMapKey=type
	// +kubebuilder:validation:MaxItems=16
	Conditions []metav1.Condition `json:"conditions,omitempty"`

	// LastScheduleTime is the last slot the policy handled.
	// +optional
	LastScheduleTime *metav1.Time `json:"lastScheduleTime,omitempty"`

	// NextScheduleTime is the next slot.
	// +optional
	NextScheduleTime *metav1.Time `json:"nextScheduleTime,omitempty"`

	// LastSkippedTime is the last slot skipped because it was missed by more than startingDeadlineSeconds.
	// +optional
	LastSkippedTime *metav1.Time `json:"lastSkippedTime,omitempty"`

	// LastRunNow is the value of the run-now annotation last acted on.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	LastRunNow string `json:"lastRunNow,omitempty"`

	// NumTargets is the number of tables the targets resolve to.
	// +optional
	NumTargets int32 `json:"numTargets,omitempty"`

	// Targets holds the last run per target table.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=map
	// +listMapKey=table
	Targets []TargetStatus `json:"targets,omitempty"`

	// Queue is where the policy's first waiting run stands for admission, while it waits.
	// +optional
	Queue *QueueStatus `json:"queue,omitempty"`

	// Active lists the policy's running Jobs.
	// +optional
	// +kubebuilder:validation:MaxItems=256
	// +listType=atomic
	Active []string `json:"active,omitempty"`

	// RecentRuns are the policy's latest finished runs, newest first.
	// +optional
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	RecentRuns []RunRecord `json:"recentRuns,omitempty"`
}

// TargetStatus is the policy's view of one target table.
type TargetStatus struct {
	// Table is the DeltaTable name.
	// +kubebuilder:validation:MaxLength=253
	Table string `json:"table"`

	// LastRun is the policy's latest run on the table.
	// +optional
	LastRun *RunRecord `json:"lastRun,omitempty"`

	// PendingSince is set while a due run waits for the table's lock (concurrencyPolicy Allow).
	// +optional
	PendingSince *metav1.Time `json:"pendingSince,omitempty"`
}

// The Next column is a string: kubectl renders future times in date columns as <invalid>.

// OptimizePolicy schedules compaction, clustering, vacuum and checkpoints for DeltaTables.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:shortName=op;optpol,categories=deltakeeper
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Schedule",type=string,JSONPath=`.spec.schedule`
// +kubebuilder:printcolumn:name="Suspend",type=boolean,JSONPath=`.spec.suspend`
// +kubebuilder:printcolumn:name="Tables",type=integer,JSONPath=`.status.numTargets`
// +kubebuilder:printcolumn:name="Last Run",type=string,JSONPath=`.status.recentRuns[0].result`
// +kubebuilder:printcolumn:name="Last Schedule",type=date,JSONPath=`.status.lastScheduleTime`
// +kubebuilder:printcolumn:name="Next",type=string,JSONPath=`.status.nextScheduleTime`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type OptimizePolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec OptimizePolicySpec `json:"spec"`

	// Status is written by the controller. A new object starts with observedGeneration 0, so that GitOps
	// tools (kstatus) read it as in progress until the first reconcile.
	// +kubebuilder:default={observedGeneration: 0}
	Status OptimizePolicyStatus `json:"status,omitempty"`
}

// OptimizePolicyList is a list of OptimizePolicies.
// +kubebuilder:object:root=true
type OptimizePolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []OptimizePolicy `json:"items"`
}

func init() {
	register(&OptimizePolicy{}, &OptimizePolicyList{})
}
