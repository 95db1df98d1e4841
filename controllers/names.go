package controllers

import (
	"crypto/sha256"
	"encoding/base32"
	"strings"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// JobKind is what a worker Job does; it is the deltakeeper.io/operation label and the middle of Job names.
type JobKind string

// Job kinds.
const (
	JobInspect  JobKind = "inspect"
	JobMaintain JobKind = "maintain"
	// JobIngest Jobs run a StreamIngest's batches. They carry the table label (people select a table's
	// Jobs with it) but stay outside the table's lock and the DeltaTable's run history: see tableJobs.
	JobIngest JobKind = "ingest"
)

// Values of the app.kubernetes.io labels on everything deltakeeper creates. app.kubernetes.io/instance is
// deliberately absent: Argo CD tracks its resources with it.
const (
	appName      = "deltakeeper"
	appManagedBy = "deltakeeper"
	appComponent = "worker"

	labelAppName      = "app.kubernetes.io/name"
	labelAppManagedBy = "app.kubernetes.io/managed-by"
	labelAppComponent = "app.kubernetes.io/component"
)

// maxLabelValue and maxDNSLabel are Kubernetes' limits for label values and DNS labels; a Job's name becomes
// the batch.kubernetes.io/job-name label of its pods, so it must fit both.
const (
	maxLabelValue = 63
	maxDNSLabel   = 63
	maxObjectName = 253
	hashLen       = 10
)

// shortHash is a stable, DNS-safe digest of the parts.
func shortHash(parts ...string) string {
	h := sha256.Sum256([]byte(strings.Join(parts, "\x00")))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:]))[:hashLen]
}

// longHash is a stable, DNS-safe digest with 160 bits of the SHA-256: enough that distinct inputs never
// meet, where a collision would put two tables under one lock.
func longHash(s string) string {
	h := sha256.Sum256([]byte(s))
	return strings.ToLower(base32.StdEncoding.WithPadding(base32.NoPadding).EncodeToString(h[:20]))
}

// LabelValue returns name as a label value: unchanged when it fits in 63 characters, else a prefix plus a
// hash of the whole name, so distinct names keep distinct values.
func LabelValue(name string) string {
	if len(name) <= maxLabelValue {
		return name
	}
	prefix := strings.TrimRight(name[:maxLabelValue-hashLen-1], "-.")
	return prefix + "-" + shortHash(name)
}

// JobName is the deterministic name of the Job that owner starts on table for one slot:
// <table>-<kind>-<hash of owner, table and slot>. Retrying a reconcile yields the same name, so a Job is never
// created twice for a slot; the name is at most 63 characters and a valid DNS label (dots in the table name
// become dashes; the hash keeps such names apart).
func JobName(table string, kind JobKind, owner, slotKey string) string {
	suffix := "-" + string(kind) + "-" + shortHash(owner, table, string(kind), slotKey)
	prefix := strings.ReplaceAll(table, ".", "-")
	if max := maxDNSLabel - len(suffix); len(prefix) > max {
		prefix = prefix[:max]
	}
	return strings.TrimRight(prefix, "-") + suffix
}

// LeaseName is the name of the lock Lease that managers before the per-location lock kept in the table's
// namespace: deltakeeper-table-<table>, hashed when too long. TableLock still honours such a Lease while an
// older manager's Job holds it (an upgrade), and deletes it once free.
func LeaseName(table string) string {
	name := "deltakeeper-table-" + table
	if len(name) <= maxObjectName {
		return name
	}
	return strings.TrimRight(name[:maxObjectName-hashLen-1], "-.") + "-" + shortHash(table)
}

// ownerKey identifies a Job's owner inside Job-name hashes. The UID keeps a re-created object (same name)
// from meeting the Jobs of its predecessor, which the garbage collector may not have deleted yet.
func ownerKey(kind string, owner metav1.Object) string {
	return kind + "/" + owner.GetName() + "/" + string(owner.GetUID())
}

// workerLabels are the labels of a worker Job and its pods: the app.kubernetes.io set and the table,
// operation and (for maintenance) policy. Nothing of the parent object's own labels is copied.
func workerLabels(table string, kind JobKind, policy string) map[string]string {
	l := map[string]string{
		labelAppName:           appName,
		labelAppManagedBy:      appManagedBy,
		labelAppComponent:      appComponent,
		deltav1.LabelTable:     LabelValue(table),
		deltav1.LabelOperation: string(kind),
	}
	if policy != "" {
		l[deltav1.LabelPolicy] = LabelValue(policy)
	}
	return l
}
