package v1

import (
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// JobTemplate is the curated part of the worker Jobs' pod spec that users may change. It is deliberately not a
// full PodTemplateSpec: the security context, command, volumes and credentials are the operator's to set, and a
// full pod template would push the CRDs past the size that client-side apply and Argo CD can handle.
type JobTemplate struct {
	// Image overrides the worker image (default: the image the manager was started with). The manager runs
	// only its worker image and the images its --allowed-worker-images flag lists (default: none); a template
	// naming another makes the object InvalidSpec and runs nothing.
	// +optional
	// +kubebuilder:validation:MaxLength=512
	Image string `json:"image,omitempty"`

	// ImagePullPolicy of the worker container.
	// +optional
	// +kubebuilder:validation:Enum=Always;IfNotPresent;Never
	ImagePullPolicy corev1.PullPolicy `json:"imagePullPolicy,omitempty"`

	// ImagePullSecrets for the worker image.
	// +optional
	// +kubebuilder:validation:MaxItems=8
	// +listType=atomic
	ImagePullSecrets []corev1.LocalObjectReference `json:"imagePullSecrets,omitempty"`

	// Resources of the worker container. Compaction streams row groups, so memory needs are modest; clustering
	// spills to the pod's scratch volume beyond the memory limit.
	// +optional
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || !('memory' in self.limits) || !('memory' in self.requests) || !isQuantity(string(self.limits['memory'])) || !isQuantity(string(self.requests['memory'])) || quantity(string(self.limits['memory'])).compareTo(quantity(string(self.requests['memory']))) >= 0",messageExpression=`'resources.limits.memory ' + string(self.limits['memory']) + ' is below resources.requests.memory ' + string(self.requests['memory']) + ': the limit must be at least the request, e.g. requests 512Mi and limits 2Gi'`
	// +kubebuilder:validation:XValidation:rule="!has(self.limits) || !has(self.requests) || !('cpu' in self.limits) || !('cpu' in self.requests) || !isQuantity(string(self.limits['cpu'])) || !isQuantity(string(self.requests['cpu'])) || quantity(string(self.limits['cpu'])).compareTo(quantity(string(self.requests['cpu']))) >= 0",messageExpression=`'resources.limits.cpu ' + string(self.limits['cpu']) + ' is below resources.requests.cpu ' + string(self.requests['cpu']) + ': the limit must be at least the request'`
	Resources corev1.ResourceRequirements `json:"resources,omitempty"`

	// NodeSelector of the worker pod.
	// +optional
	// +kubebuilder:validation:MaxProperties=32
	NodeSelector map[string]string `json:"nodeSelector,omitempty"`

	// Tolerations of the worker pod.
	// +optional
	// +kubebuilder:validation:MaxItems=32
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.operator) || t.operator in ['', 'Exists', 'Equal'])",message="tolerations operator must be Exists or Equal (spelt so: case matters)"
	// +kubebuilder:validation:XValidation:rule="self.all(t, !has(t.effect) || t.effect in ['', 'NoSchedule', 'PreferNoSchedule', 'NoExecute'])",message="tolerations effect must be NoSchedule, PreferNoSchedule or NoExecute (or empty: all effects)"
	// +listType=atomic
	Tolerations []corev1.Toleration `json:"tolerations,omitempty"`

	// Affinity of the worker pod.
	// +optional
	Affinity *corev1.Affinity `json:"affinity,omitempty"`

	// PriorityClassName of the worker pod.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	PriorityClassName string `json:"priorityClassName,omitempty"`

	// ServiceAccountName overrides the ServiceAccount of the worker pod. By default the table's
	// storage.credentials.serviceAccountName is used, else the namespace's default ServiceAccount. Whoever may
	// edit a DeltaTable, OptimizePolicy or StreamIngest may so run pods as any ServiceAccount of its namespace
	// (see docs/security.md).
	// +optional
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// PodLabels are added to the worker pods (for cost attribution or network policies). The manager checks
	// the values (CEL cannot afford a regular expression over unbounded map values): a value that is not a
	// label value makes the object InvalidSpec and runs nothing.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	// +kubebuilder:validation:XValidation:rule="self.all(k, k.matches('^([a-z0-9]([-a-z0-9]*[a-z0-9])?([.][a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?[A-Za-z0-9]([-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$'))",message="podLabels keys must be label keys: an optional DNS prefix and /, then at most 63 letters, digits, -, _ or ., starting and ending with a letter or digit, e.g. team or example.com/cost-center"
	PodLabels map[string]string `json:"podLabels,omitempty"`

	// PodAnnotations are added to the worker pods.
	// +optional
	// +kubebuilder:validation:MaxProperties=16
	PodAnnotations map[string]string `json:"podAnnotations,omitempty"`

	// ActiveDeadlineSeconds bounds how long one run may take before Kubernetes stops it.
	// +optional
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:default=21600
	ActiveDeadlineSeconds *int64 `json:"activeDeadlineSeconds,omitempty"`

	// BackoffLimit is how many times a failed worker pod is retried. Runs are idempotent, so a retry is safe.
	// +optional
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=10
	// +kubebuilder:default=1
	BackoffLimit *int32 `json:"backoffLimit,omitempty"`

	// TTLSecondsAfterFinished keeps finished Jobs this long so their results can be read; history limits
	// usually delete them earlier.
	// +optional
	// +kubebuilder:validation:Minimum=60
	// +kubebuilder:default=86400
	TTLSecondsAfterFinished *int32 `json:"ttlSecondsAfterFinished,omitempty"`

	// StartTimeout bounds how long a worker Job may wait for its pod to start (a missing ServiceAccount or
	// PersistentVolumeClaim, requests no node can satisfy, an image that cannot be pulled). After it the
	// Job is deleted, the table's lock released and the run recorded as failed with reason StartFailed.
	// +optional
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:XValidation:rule="duration(self) >= duration('1m')",message="startTimeout must be at least 1m (e.g. 10m)"
	StartTimeout *metav1.Duration `json:"startTimeout,omitempty"`
}

// Operation is a maintenance operation that a worker Job performs.
// +kubebuilder:validation:Enum=Inspect;Optimize;Cluster;Vacuum;Checkpoint;Ingest
type Operation string

// Operations run by worker Jobs.
const (
	OperationInspect    Operation = "Inspect"
	OperationOptimize   Operation = "Optimize"
	OperationCluster    Operation = "Cluster"
	OperationVacuum     Operation = "Vacuum"
	OperationCheckpoint Operation = "Checkpoint"
	OperationIngest     Operation = "Ingest"
)

// RunResult is how a worker run ended.
// +kubebuilder:validation:Enum=Running;Succeeded;NothingToDo;Failed;Refused;Skipped
type RunResult string

// Run results. Refused means the worker declined to touch the table (an unsupported table feature or a bad
// argument) and retrying will not help until someone changes the table or the spec.
const (
	RunRunning     RunResult = "Running"
	RunSucceeded   RunResult = "Succeeded"
	RunNothingToDo RunResult = "NothingToDo"
	RunFailed      RunResult = "Failed"
	RunRefused     RunResult = "Refused"
	RunSkipped     RunResult = "Skipped"
)

// RunRecord summarises one worker run. It is deliberately small: status lives in etcd, and histories are
// capped so an object never grows past what the API server accepts.
type RunRecord struct {
	// JobName of the run's Job (empty for skipped slots).
	// +optional
	// +kubebuilder:validation:MaxLength=63
	JobName string `json:"jobName,omitempty"`

	// Table is the DeltaTable the run worked on.
	// +optional
	// +kubebuilder:validation:MaxLength=253
	Table string `json:"table,omitempty"`

	// Operations the run performed, in order.
	// +optional
	// +kubebuilder:validation:MaxItems=6
	// +listType=atomic
	Operations []Operation `json:"operations,omitempty"`

	// Result of the run.
	Result RunResult `json:"result"`

	// Reason is a machine-readable cause: the trigger that started the run, or why it failed or was skipped.
	// +optional
	// +kubebuilder:validation:MaxLength=128
	Reason string `json:"reason,omitempty"`

	// Message is a short human-readable summary.
	// +optional
	// +kubebuilder:validation:MaxLength=1024
	Message string `json:"message,omitempty"`

	// ScheduledTime is the schedule slot (or run-now request) the run belongs to.
	// +optional
	ScheduledTime *metav1.Time `json:"scheduledTime,omitempty"`

	// StartTime is when the Job was created.
	// +optional
	StartTime *metav1.Time `json:"startTime,omitempty"`

	// CompletionTime is when the run ended.
	// +optional
	CompletionTime *metav1.Time `json:"completionTime,omitempty"`

	// TableVersion is the table version the run committed (or read, if it committed nothing).
	// +optional
	TableVersion *int64 `json:"tableVersion,omitempty"`

	// FilesRemoved counts data files the run rewrote or deleted.
	// +optional
	FilesRemoved int64 `json:"filesRemoved,omitempty"`

	// FilesAdded counts data files the run wrote.
	// +optional
	FilesAdded int64 `json:"filesAdded,omitempty"`

	// BytesRemoved counts bytes of the files removed.
	// +optional
	BytesRemoved int64 `json:"bytesRemoved,omitempty"`

	// BytesAdded counts bytes of the files added.
	// +optional
	BytesAdded int64 `json:"bytesAdded,omitempty"`

	// ConflictFiles counts input files whose rewrite the run abandoned because a concurrent commit
	// removed or changed them (typically an upsert stream's deletion vectors). A table whose runs keep
	// losing work this way gets its next maintenance run alone: keyed streams wait for it.
	// +optional
	ConflictFiles int64 `json:"conflictFiles,omitempty"`

	// Shares is the progress of a run spread over several pods (OptimizePolicy spec.parallelism).
	// +optional
	Shares *ShareProgress `json:"shares,omitempty"`
}

// ProtocolStatus is a table's Delta protocol.
type ProtocolStatus struct {
	// MinReaderVersion of the table.
	MinReaderVersion int32 `json:"minReaderVersion"`
	// MinWriterVersion of the table.
	MinWriterVersion int32 `json:"minWriterVersion"`
	// ReaderFeatures of the table (reader version 3).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	ReaderFeatures []string `json:"readerFeatures,omitempty"`
	// WriterFeatures of the table (writer version 7).
	// +optional
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	WriterFeatures []string `json:"writerFeatures,omitempty"`
}

// ColumnQuality describes how well the files' value ranges on one column support data skipping. It is
// computed from the per-file statistics of the live files (see docs/clustering-quality.md).
type ColumnQuality struct {
	// Column is the logical column name.
	// +kubebuilder:validation:MaxLength=255
	Column string `json:"column"`
	// Status is ok, or no_stats when no live file has min and max for the column.
	// +kubebuilder:validation:Enum=ok;no_stats
	Status string `json:"status"`
	// NumFiles is the number of live files.
	NumFiles int64 `json:"numFiles"`
	// NumFilesWithStats counts files that have both min and max for the column.
	NumFilesWithStats int64 `json:"numFilesWithStats"`
	// AvgCoveragePct is the mean share of the table's value range that one file spans, in percent.
	AvgCoveragePct float64 `json:"avgCoveragePct"`
	// AvgDepth is the mean number of files a point value falls into (1 is perfect).
	AvgDepth float64 `json:"avgDepth"`
	// MaxDepth is the largest number of files any point value falls into.
	MaxDepth int64 `json:"maxDepth"`
	// OverlapRatio is (avgDepth-1)/(numFilesWithStats-1): 0 means no overlap, 1 means every file overlaps every other.
	OverlapRatio float64 `json:"overlapRatio"`
	// SkippingEffectiveness is 1-overlapRatio: the share of non-matching files a point query can skip.
	SkippingEffectiveness float64 `json:"skippingEffectiveness"`
}

// ShareProgress is the progress of a maintenance run spread over the pods of an Indexed Job: each index
// rewrites its share of a plan made from one table version, and index 0 makes the one commit.
type ShareProgress struct {
	// Parallelism is the number of shares (the Job's completions).
	Parallelism int32 `json:"parallelism"`

	// AtVersion is the table version every share planned from.
	AtVersion int64 `json:"atVersion"`

	// Completed lists the indexes whose share is done, as the Job reports them ("0,2" or "0-2").
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Completed string `json:"completed,omitempty"`

	// Failed lists the indexes that failed after their retries.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Failed string `json:"failed,omitempty"`

	// Retries counts the failed pods the Job replaced so far.
	// +optional
	Retries int32 `json:"retries,omitempty"`

	// Committed lists the shares whose work the commit holds (from index 0's result).
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Committed string `json:"committed,omitempty"`

	// Dropped lists the shares with work left out because a concurrent commit removed its inputs, and
	// Missing the shares that did not finish in time; their files are superseded and vacuum removes them.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Dropped string `json:"dropped,omitempty"`

	// +optional
	// +kubebuilder:validation:MaxLength=256
	Missing string `json:"missing,omitempty"`

	// SupersededFiles counts the files the shares wrote that the commit did not take.
	// +optional
	SupersededFiles int32 `json:"supersededFiles,omitempty"`

	// Vacuumed lists the shares that vacuumed their part of the table after the commit (from index 0's
	// result), and VacuumedFiles counts the files they deleted together.
	// +optional
	// +kubebuilder:validation:MaxLength=256
	Vacuumed string `json:"vacuumed,omitempty"`

	// +optional
	VacuumedFiles int64 `json:"vacuumedFiles,omitempty"`
}

// QueueStatus says where an object's waiting worker Job stands in the manager's admission queue (the
// manager caps running worker Jobs: --max-running-jobs). Absent when nothing of the object waits.
type QueueStatus struct {
	// Position is the place of the object's first waiting run, 1 being next.
	// +kubebuilder:validation:Minimum=1
	Position int32 `json:"position"`
	// Length is how many runs wait in all.
	// +kubebuilder:validation:Minimum=1
	Length int32 `json:"length"`
	// Runs is how many of this object's runs wait (a policy slot waits once per table).
	// +optional
	Runs int32 `json:"runs,omitempty"`
	// Since is when the object's first waiting run began to wait.
	// +optional
	Since *metav1.Time `json:"since,omitempty"`
}
