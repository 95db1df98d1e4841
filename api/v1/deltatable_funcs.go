package v1

import (
	"strings"
	"time"
)

// InspectEvery returns the inspect interval, defaulted.
func (t *DeltaTable) InspectEvery() time.Duration {
	if t.Spec.InspectInterval == nil || t.Spec.InspectInterval.Duration <= 0 {
		return DefaultInspectInterval
	}
	return t.Spec.InspectInterval.Duration
}

// IsLocal reports whether the table lives on a PersistentVolumeClaim (file:// location).
func (t *DeltaTable) IsLocal() bool { return strings.HasPrefix(t.Spec.Location, "file://") }

// S3 returns the table's S3 settings, or nil.
func (t *DeltaTable) S3() *S3Storage {
	if t.Spec.Storage == nil {
		return nil
	}
	return t.Spec.Storage.S3
}

// Azure returns the table's Azure settings, or nil.
func (t *DeltaTable) Azure() *AzureStorage {
	if t.Spec.Storage == nil {
		return nil
	}
	return t.Spec.Storage.Azure
}

// GCS returns the table's GCS settings, or nil.
func (t *DeltaTable) GCS() *GCSStorage {
	if t.Spec.Storage == nil {
		return nil
	}
	return t.Spec.Storage.GCS
}

// Local returns the table's PersistentVolumeClaim settings, or nil.
func (t *DeltaTable) Local() *LocalStorage {
	if t.Spec.Storage == nil {
		return nil
	}
	return t.Spec.Storage.Local
}

// IsInspected reports whether an inspect Job has ever reported the table's facts.
func (t *DeltaTable) IsInspected() bool { return t.Status.LastInspectedTime != nil }

// IsClustered reports whether the table has, or is declared to have, liquid-clustering columns.
func (t *DeltaTable) IsClustered() bool {
	return len(t.Status.ClusteringColumns) > 0 || len(t.Spec.ClusterBy) > 0
}
