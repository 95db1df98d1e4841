package v1

import (
	"strings"
	"time"
)

// Interval is the stream's trigger interval.
func (s *StreamIngest) Interval() time.Duration {
	if t := s.Spec.Trigger; t != nil && t.Interval != nil && t.Interval.Duration > 0 {
		return t.Interval.Duration
	}
	return DefaultIngestInterval
}

// IsAvailableNow reports whether the stream drains what is there and then completes.
func (s *StreamIngest) IsAvailableNow() bool {
	return s.Spec.Trigger != nil && s.Spec.Trigger.AvailableNow
}

// EffectiveMode is the stream's mode, Append when unset.
func (s *StreamIngest) EffectiveMode() IngestMode {
	if s.Spec.Mode == "" {
		return IngestAppend
	}
	return s.Spec.Mode
}

// CheckpointURI is where the stream keeps its progress: spec.checkpointLocation, else
// <table location>/_deltakeeper/streams/<namespace>.<name>. The name ties the progress to this object,
// so two streams from one source into one table never share it.
func (s *StreamIngest) CheckpointURI(table *DeltaTable) string {
	if s.Spec.CheckpointLocation != "" {
		return s.Spec.CheckpointLocation
	}
	return strings.TrimSuffix(table.Spec.Location, "/") + "/_deltakeeper/streams/" + s.Namespace + "." + s.Name
}
