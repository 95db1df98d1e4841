package kubectlplugin

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// Health levels, for the word's colour.
const (
	levelOK = iota
	levelProgress
	levelSuspended
	levelFailing
)

// health is an object's state at a glance, read the way docs/gitops.md's Argo CD check reads it.
type health struct {
	Word    string // Ready, Reconciling, Suspended, Stalled, Failing, Degraded, NotReady
	Reason  string
	Message string
	Level   int
}

// retriedReasons are Ready reasons of failures the controller retries by itself.
var retriedReasons = map[string]bool{
	deltav1.ReasonUnreachable: true, deltav1.ReasonJobFailed: true, deltav1.ReasonInvalidResult: true,
	deltav1.ReasonSourceUnreachable: true, deltav1.ReasonRunFailed: true,
}

func healthOf(generation, observed int64, conds []metav1.Condition, suspended bool) health {
	ready := meta.FindStatusCondition(conds, deltav1.ConditionReady)
	if observed != generation || ready == nil {
		return health{Word: "Reconciling", Reason: "NotObserved", Message: "the controller has not observed this spec yet", Level: levelProgress}
	}
	if c := meta.FindStatusCondition(conds, deltav1.ConditionStalled); c != nil && c.Status == metav1.ConditionTrue {
		return health{Word: "Stalled", Reason: c.Reason, Message: c.Message, Level: levelFailing}
	}
	if suspended {
		return health{Word: "Suspended", Reason: ready.Reason, Message: ready.Message, Level: levelSuspended}
	}
	if c := meta.FindStatusCondition(conds, deltav1.ConditionReconciling); c != nil && c.Status == metav1.ConditionTrue {
		return health{Word: "Reconciling", Reason: c.Reason, Message: c.Message, Level: levelProgress}
	}
	if ready.Status != metav1.ConditionTrue {
		if retriedReasons[ready.Reason] {
			return health{Word: "Failing", Reason: ready.Reason, Message: ready.Message, Level: levelFailing}
		}
		return health{Word: "NotReady", Reason: ready.Reason, Message: ready.Message, Level: levelProgress}
	}
	for _, t := range []string{deltav1.ConditionMaintenanceSucceeded, deltav1.ConditionLastRunSucceeded} {
		if c := meta.FindStatusCondition(conds, t); c != nil && c.Status == metav1.ConditionFalse {
			return health{Word: "Degraded", Reason: c.Reason, Message: t + ": " + c.Message, Level: levelFailing}
		}
	}
	return health{Word: "Ready", Reason: ready.Reason, Message: ready.Message, Level: levelOK}
}

// paint colours a health word with ANSI colours when on is true.
func paint(on bool, h health) string {
	if !on {
		return h.Word
	}
	code := map[int]string{levelOK: "32", levelProgress: "33", levelSuspended: "36", levelFailing: "31"}[h.Level]
	return "\x1b[" + code + "m" + h.Word + "\x1b[0m"
}
