// Package controllers holds one reconciler per kind (DeltaTable, OptimizePolicy, StreamIngest) and the pure
// logic they share: job building, scheduling, trigger evaluation, result parsing and the per-table lock.
// Reconcilers never read table data or credentials; they create worker Jobs and record what the Jobs report.
package controllers

// The manager's permissions, least privilege:
//   - its own kinds: read, and write only their status (finalizers/update lets the owner references of
//     worker Jobs set blockOwnerDeletion);
//   - Jobs: create and delete (history, concurrencyPolicy Replace, a Job past its startTimeout), and patch
//     one annotation (deltakeeper.io/start-failed) on a Job that never started, never its spec;
//   - Pods: read, for the termination messages that carry the results and for the manager's own image;
//   - Events: both APIs, because leader election still reports through the core one; list on the core
//     API, for the FailedCreate events of a Job whose pod cannot be created (read uncached, by the Job's UID);
//   - Leases: leader election and the per-table lock (read uncached, so no list or watch; deleted on release).
//
// It has no access to Secrets or ConfigMaps: credentials and CA bundles are referenced by the Jobs, never read.
//
// +kubebuilder:rbac:groups=deltakeeper.io,resources=deltatables;optimizepolicies;streamingests,verbs=get;list;watch
// +kubebuilder:rbac:groups=deltakeeper.io,resources=deltatables/status;optimizepolicies/status;streamingests/status,verbs=get;update
// +kubebuilder:rbac:groups=deltakeeper.io,resources=deltatables/finalizers;optimizepolicies/finalizers;streamingests/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete;patch
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch;list
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;delete
