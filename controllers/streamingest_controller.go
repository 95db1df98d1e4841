package controllers

import (
	"context"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	apimeta "k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
	"github.com/deltakeeper/deltakeeper/internal/version"
)

// StreamIngestReconciler validates StreamIngests and reports, truthfully, that this release has no ingest
// worker: Ready=False and Progressing=False with reason IngestNotAvailable, and no Jobs. It reports no
// progress it did not make.
//
// When the worker gains `deltakeeper worker ingest`, ingestPlan becomes the place that decides the next batch
// and starts its Job with BuildJob and startJob (under the target table's lock), and the status gains the
// batch results through readRun, as the DeltaTable reconciler does for inspect Jobs.
type StreamIngestReconciler struct {
	reconcilerBase
}

// SetupWithManager watches StreamIngests and the DeltaTables they name (a target that appears or goes
// changes the verdict).
func (r *StreamIngestReconciler) SetupWithManager(mgr ctrl.Manager) error {
	return ctrl.NewControllerManagedBy(mgr).
		Named("streamingest").
		For(&deltav1.StreamIngest{}, builder.WithPredicates(predicate.GenerationChangedPredicate{})).
		Watches(&deltav1.DeltaTable{}, handler.EnqueueRequestsFromMapFunc(r.tableToStreams),
			builder.WithPredicates(predicate.Funcs{UpdateFunc: func(event.UpdateEvent) bool { return false }})).
		Complete(r)
}

// tableToStreams maps a DeltaTable to the StreamIngests that write to or read from it.
func (r *StreamIngestReconciler) tableToStreams(ctx context.Context, obj client.Object) []reconcile.Request {
	var list deltav1.StreamIngestList
	if err := r.List(ctx, &list, client.InNamespace(obj.GetNamespace())); err != nil {
		ctrl.LoggerFrom(ctx).Error(err, "Failed to list StreamIngests for a DeltaTable", "table", obj.GetName())
		return nil
	}
	var reqs []reconcile.Request
	for _, s := range list.Items {
		if s.Spec.Target == obj.GetName() || (s.Spec.Source.DeltaTable != nil && s.Spec.Source.DeltaTable.Name == obj.GetName()) {
			reqs = append(reqs, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: s.Namespace, Name: s.Name}})
		}
	}
	return reqs
}

// Reconcile validates the stream and writes its conditions once.
func (r *StreamIngestReconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	var si deltav1.StreamIngest
	if err := r.Get(ctx, req.NamespacedName, &si); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	st := si.Status.DeepCopy()
	conds := conditionSetter{conds: &st.Conditions, generation: si.Generation, now: r.Clock.Now()}
	reason, msg, err := r.ingestPlan(ctx, &si)
	if err != nil {
		return ctrl.Result{}, err
	}
	var evq eventQueue
	if old := apimeta.FindStatusCondition(si.Status.Conditions, deltav1.ConditionReady); old == nil || old.Reason != reason || old.Message != msg {
		evq.warning(reason, actionValidate, nil, msg)
	}
	conds.set(deltav1.ConditionReady, metav1.ConditionFalse, reason, msg)
	conds.set(deltav1.ConditionProgressing, metav1.ConditionFalse, reason, msg)
	st.ObservedGeneration = si.Generation
	if stop, res, err := commitStatus(ctx, &r.reconcilerBase, &si, &si.Status, st, evq); stop {
		return res, err
	}
	return ctrl.Result{}, nil
}

// ingestPlan decides what the stream does now: the reason and message of its conditions. The spec's shape
// is enforced by the API (CEL); what remains is whether the tables it names exist, and that this release
// cannot ingest.
func (r *StreamIngestReconciler) ingestPlan(ctx context.Context, si *deltav1.StreamIngest) (reason, msg string, err error) {
	names := []string{si.Spec.Target}
	if src := si.Spec.Source.DeltaTable; src != nil {
		names = append(names, src.Name)
	}
	for _, name := range names {
		var t deltav1.DeltaTable
		err := r.Get(ctx, types.NamespacedName{Namespace: si.Namespace, Name: name}, &t)
		if apierrors.IsNotFound(err) {
			return deltav1.ReasonTargetNotFound, fmt.Sprintf("DeltaTable %q does not exist in namespace %s", name, si.Namespace), nil
		}
		if err != nil {
			return "", "", fmt.Errorf("get DeltaTable %s/%s: %w", si.Namespace, name, err)
		}
	}
	if si.Spec.Suspend {
		return deltav1.ReasonSuspended, "suspended; note that ingest is not available in this release", nil
	}
	return deltav1.ReasonIngestNotAvailable, fmt.Sprintf("ingest is not available in this release (deltakeeper %s has no ingest worker): "+
		"no batches run and nothing is written to DeltaTable %s; the stream will start when an upgraded operator supports it",
		version.Version, si.Spec.Target), nil
}
