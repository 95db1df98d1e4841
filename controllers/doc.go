// Package controllers holds one reconciler per kind (DeltaTable, OptimizePolicy, StreamIngest) and the pure
// logic they share: job building, scheduling, trigger evaluation, result parsing and the per-table lock.
// Reconcilers never read table data or credentials; they create worker Jobs and record what the Jobs report.
package controllers

// The manager's permissions, least privilege: its own kinds, the Jobs it runs, the Pods whose termination
// messages carry the results, Events, and Leases for leader election and the per-table maintenance lock.
// It has no access to Secrets: credentials are referenced by the Jobs, never read.
//
// +kubebuilder:rbac:groups=deltakeeper.io,resources=deltatables;optimizepolicies;streamingests,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=deltakeeper.io,resources=deltatables/status;optimizepolicies/status;streamingests/status,verbs=get;update;patch
// +kubebuilder:rbac:groups=deltakeeper.io,resources=deltatables/finalizers;optimizepolicies/finalizers;streamingests/finalizers,verbs=update
// +kubebuilder:rbac:groups=batch,resources=jobs,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups="",resources=pods,verbs=get;list;watch
// +kubebuilder:rbac:groups="",resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=events.k8s.io,resources=events,verbs=create;patch
// +kubebuilder:rbac:groups=coordination.k8s.io,resources=leases,verbs=get;list;watch;create;update;patch;delete
