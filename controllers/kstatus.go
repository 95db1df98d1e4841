package controllers

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// The kstatus conventions (sigs.k8s.io/cli-utils/pkg/kstatus), which Flux's health checks, `kubectl wait`
// and Argo CD's checks in docs/gitops.md read: besides Ready, every kind carries
//
//   - Reconciling, True while the status has not caught up with the spec: the spec's generation is not
//     applied yet, or the Job that establishes the status runs (a table's inspect Job, a stream's first Job
//     of a generation). Maintenance and ingest Jobs of a settled object do not count: they are its steady
//     work, and a Flux Kustomization waiting on a policy would otherwise time out during every long run.
//   - Stalled, True when the object cannot progress until a person changes something (stalledReasons).
//
// kstatus computes Failed from Stalled, InProgress from Reconciling or a False Ready, Current otherwise.
// Failures the controller retries by itself (an unreachable table, a failed Job) leave Ready False and so
// read as InProgress; Argo CD's checks show them as Degraded.

// stalledReasons are the reasons that need a person: the spec is wrong, or the worker refuses the table
// until its features or the spec change. Retrying cannot fix them. Whoever adds such a reason adds it here.
var stalledReasons = map[string]bool{
	deltav1.ReasonInvalidSpec:        true,
	deltav1.ReasonInvalidSchedule:    true,
	deltav1.ReasonNoStepsEnabled:     true,
	deltav1.ReasonUnsupportedTable:   true,
	deltav1.ReasonRunRefused:         true,
	deltav1.ReasonBadFile:            true,
	deltav1.ReasonSchemaChangeNeeded: true,
	deltav1.ReasonIngestNotAvailable: true,
	// Another table claims the location, the table does not exist at its location, a Job's pod never
	// started (a missing ServiceAccount or PVC, an image, impossible requests).
	deltav1.ReasonDuplicateLocation: true,
	deltav1.ReasonTableNotFound:     true,
	deltav1.ReasonStartFailed:       true,
}

// catchingUpReasons are the Ready reasons of an object whose status has not caught up with its spec yet.
var catchingUpReasons = map[string]bool{
	deltav1.ReasonPending:           true,
	deltav1.ReasonInspecting:        true,
	deltav1.ReasonPropertiesPending: true,
}

// lastRunConditions report a kind's last maintenance run; a refused run stalls the object like a bad spec.
var lastRunConditions = []string{deltav1.ConditionMaintenanceSucceeded, deltav1.ConditionLastRunSucceeded}

// kstatusView is what the reconciler knows besides the conditions.
type kstatusView struct {
	// Working names the running Job that establishes the status ("" when none runs), for Reconciling's
	// message.
	Working string
	// OwnStalled is true for kinds whose reconciler maintains Stalled itself (StreamIngest: it records
	// whether the stream stopped); the derivation then only reads it.
	OwnStalled bool
}

// setKstatus derives Reconciling and Stalled from Ready (and the last run) at the end of a status write.
// Call it after Ready is set. False conditions carry Ready's reason and message, so each one alone tells a
// person what the object is doing.
func setKstatus(conds conditionSetter, v kstatusView) {
	ready := meta.FindStatusCondition(*conds.conds, deltav1.ConditionReady)
	if ready == nil {
		return
	}
	stalled := stalledBy(*conds.conds)
	if v.OwnStalled {
		stalled = meta.FindStatusCondition(*conds.conds, deltav1.ConditionStalled)
		if stalled != nil && (stalled.Status != metav1.ConditionTrue || stalled.ObservedGeneration != conds.generation) {
			stalled = nil
		}
	} else if stalled != nil {
		conds.set(deltav1.ConditionStalled, metav1.ConditionTrue, stalled.Reason, stalled.Message)
	} else {
		conds.set(deltav1.ConditionStalled, metav1.ConditionFalse, ready.Reason, ready.Message)
	}
	switch {
	case stalled != nil:
		conds.set(deltav1.ConditionReconciling, metav1.ConditionFalse, stalled.Reason, "stalled: "+stalled.Message)
	case ready.Status != metav1.ConditionTrue && catchingUpReasons[ready.Reason]:
		conds.set(deltav1.ConditionReconciling, metav1.ConditionTrue, ready.Reason, ready.Message)
	case v.Working != "":
		conds.set(deltav1.ConditionReconciling, metav1.ConditionTrue, deltav1.ReasonInspecting, v.Working+" is running")
	default:
		conds.set(deltav1.ConditionReconciling, metav1.ConditionFalse, ready.Reason, ready.Message)
	}
}

// stalledBy returns the condition that stalls the object: a False Ready or a failed last run whose reason
// needs a person.
func stalledBy(conds []metav1.Condition) *metav1.Condition {
	for _, t := range append([]string{deltav1.ConditionReady}, lastRunConditions...) {
		if c := meta.FindStatusCondition(conds, t); c != nil && c.Status == metav1.ConditionFalse && stalledReasons[c.Reason] {
			return c
		}
	}
	return nil
}

// inspectWorking names the table's running inspect Job for Reconciling, or "" when none runs.
func inspectWorking(v tableView) string {
	if !v.ActiveInspect {
		return ""
	}
	return "inspect Job " + v.ActiveJob
}
