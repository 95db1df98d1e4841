package controllers

import (
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// conditionSetter sets conditions with the reconciler's clock and the object's generation, so transition
// times come from the injected clock and every condition says which spec it describes.
type conditionSetter struct {
	conds      *[]metav1.Condition
	generation int64
	now        time.Time
}

func (c conditionSetter) set(condType string, status metav1.ConditionStatus, reason, msg string) {
	c.setGen(condType, status, reason, msg, c.generation)
}

// setGen sets a condition that describes an older generation (an inspect Job's result applies the spec it
// was started for).
func (c conditionSetter) setGen(condType string, status metav1.ConditionStatus, reason, msg string, gen int64) {
	meta.SetStatusCondition(c.conds, metav1.Condition{
		Type:               condType,
		Status:             status,
		Reason:             reason,
		Message:            truncate(msg, 32768),
		ObservedGeneration: gen,
		LastTransitionTime: metav1.NewTime(c.now),
	})
}
