package v1

import "time"

// Defaults shared by the API markers, the reconcilers and the worker. The markers repeat some of them
// because controller-gen needs literals; a test keeps the two in step.
const (
	// DefaultTargetFileSize is Delta's OPTIMIZE target (spark.databricks.delta.optimize.maxFileSize).
	DefaultTargetFileSize int64 = 1 << 30
	// DefaultMinSmallFiles is the minSmallFiles trigger.
	DefaultMinSmallFiles int32 = 50
	// DefaultMaxDeletedRowsRatio is Delta's optimize.maxDeletedRowsRatio.
	DefaultMaxDeletedRowsRatio = 0.05
	// DefaultMinOffendingFiles and DefaultMinOverlapThreshold are the auto-recluster defaults (as in Fabric).
	DefaultMinOffendingFiles int32 = 4
	// DefaultMinOverlapThreshold: see DefaultMinOffendingFiles.
	DefaultMinOverlapThreshold = 0.75
	// DefaultMaxQualityGap bounds incremental clustering's drift below FULL (worker/cluster's default).
	DefaultMaxQualityGap = 0.05
	// DefaultVacuumRetention is Delta's delta.deletedFileRetentionDuration.
	DefaultVacuumRetention = 7 * 24 * time.Hour
	// DefaultInspectInterval is how often tables are re-inspected.
	DefaultInspectInterval = time.Hour
	// DefaultIngestInterval is the default StreamIngest trigger interval.
	DefaultIngestInterval = time.Minute
	// DefaultMaxFilesPerTrigger is Delta streaming's maxFilesPerTrigger.
	DefaultMaxFilesPerTrigger int32 = 1000
	// DefaultSuccessfulRunsHistoryLimit and DefaultFailedRunsHistoryLimit match CronJob's.
	DefaultSuccessfulRunsHistoryLimit int32 = 3
	DefaultFailedRunsHistoryLimit     int32 = 1
)
