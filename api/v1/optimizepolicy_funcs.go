package v1

import "strconv"

// IsSuspended reports whether the policy's schedule is suspended.
func (p *OptimizePolicy) IsSuspended() bool { return p.Spec.Suspend }

// RunNowRequest returns the run-now annotation's value when it asks for a run not yet acted on, else "".
func (p *OptimizePolicy) RunNowRequest() string {
	v := p.Annotations[AnnotationRunNow]
	if v == "" || v == p.Status.LastRunNow {
		return ""
	}
	return v
}

// HistoryLimits returns how many successful and failed finished Jobs the policy keeps.
func (p *OptimizePolicy) HistoryLimits() (succeeded, failed int) {
	succeeded, failed = int(DefaultSuccessfulRunsHistoryLimit), int(DefaultFailedRunsHistoryLimit)
	if p.Spec.SuccessfulRunsHistoryLimit != nil {
		succeeded = int(*p.Spec.SuccessfulRunsHistoryLimit)
	}
	if p.Spec.FailedRunsHistoryLimit != nil {
		failed = int(*p.Spec.FailedRunsHistoryLimit)
	}
	return succeeded, failed
}

// Concurrency returns the concurrency policy, defaulted to Forbid.
func (p *OptimizePolicy) Concurrency() ConcurrencyPolicy {
	if p.Spec.ConcurrencyPolicy == "" {
		return ConcurrencyForbid
	}
	return p.Spec.ConcurrencyPolicy
}

// enabled reads an optional Enabled flag whose default is true.
func enabled(b *bool) bool { return b == nil || *b }

// CompactionEnabled reports whether compaction runs (default on).
func (p *OptimizePolicy) CompactionEnabled() bool {
	return p.Spec.Compaction == nil || enabled(p.Spec.Compaction.Enabled)
}

// ClusteringEnabled reports whether clustering runs on clustered tables (default on).
func (p *OptimizePolicy) ClusteringEnabled() bool {
	return p.Spec.Clustering == nil || enabled(p.Spec.Clustering.Enabled)
}

// VacuumEnabled reports whether vacuum runs (off unless spec.vacuum is set).
func (p *OptimizePolicy) VacuumEnabled() bool {
	return p.Spec.Vacuum != nil && enabled(p.Spec.Vacuum.Enabled)
}

// CheckpointEnabled reports whether a checkpoint is written after maintenance (default on).
func (p *OptimizePolicy) CheckpointEnabled() bool {
	return p.Spec.Checkpoint == nil || enabled(p.Spec.Checkpoint.Enabled)
}

// RunParallelism is the number of pods a run's compaction or clustering step is spread over: the run-now
// annotation's override for a run-now request, else spec.parallelism, else 1. An override that is not a
// number in 1..MaxParallelism is ignored (the spec's value applies).
func (p *OptimizePolicy) RunParallelism(runNow bool) int32 {
	n := int32(1)
	if p.Spec.Parallelism != nil && *p.Spec.Parallelism > 1 {
		n = *p.Spec.Parallelism
	}
	if runNow {
		if v, err := strconv.ParseInt(p.Annotations[AnnotationRunNowParallelism], 10, 32); err == nil && v >= 1 && v <= MaxParallelism {
			n = int32(v)
		}
	}
	return min(n, MaxParallelism)
}
