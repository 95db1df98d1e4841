package v1

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
