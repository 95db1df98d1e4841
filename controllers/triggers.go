package controllers

import (
	"fmt"
	"strings"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// Trigger reasons: why a slot maintains a table, or why it does not. They appear as RunRecord reasons and on
// the Jobs' deltakeeper.io/trigger annotation.
const (
	TriggerEverySlot             = "EverySlot"
	TriggerSmallFiles            = "SmallFiles"
	TriggerAvgDepth              = "AvgDepth"
	TriggerSkippingEffectiveness = "SkippingEffectiveness"
	TriggerUnclusteredBytes      = "UnclusteredBytes"
	TriggerRunNow                = "RunNow"
	TriggerBelowThresholds       = "BelowTriggers"
	TriggerNotInspected          = "NotInspected"
)

// TriggerDecision is the verdict of a policy's triggers on one table.
type TriggerDecision struct {
	// Run is true when at least one trigger is crossed.
	Run bool
	// Wait is true when the table has never been inspected: there is nothing to judge yet.
	Wait bool
	// Reason is the first crossed trigger, or why nothing runs.
	Reason string
	// Message explains the verdict with the numbers.
	Message string
}

// EvaluateTriggers judges a table's last inspected status against a policy's triggers: run when any is
// crossed. Clustering-quality triggers look at the columns with statistics only.
func EvaluateTriggers(tr *deltav1.Triggers, table *deltav1.DeltaTable) TriggerDecision {
	if !table.IsInspected() {
		return TriggerDecision{Wait: true, Reason: TriggerNotInspected, Message: "waiting for the table's first inspection"}
	}
	if tr == nil {
		tr = &deltav1.Triggers{}
	}
	st := &table.Status
	minSmall := deltav1.DefaultMinSmallFiles
	if tr.MinSmallFiles != nil {
		minSmall = *tr.MinSmallFiles
	}
	var reasons, crossed, below []string
	hit := func(reason, msg string) { reasons, crossed = append(reasons, reason), append(crossed, msg) }

	if minSmall == 0 {
		hit(TriggerEverySlot, "minSmallFiles is 0")
	} else if st.NumSmallFiles >= int64(minSmall) {
		hit(TriggerSmallFiles, fmt.Sprintf("%d small files >= %d", st.NumSmallFiles, minSmall))
	} else {
		below = append(below, fmt.Sprintf("%d small files < %d", st.NumSmallFiles, minSmall))
	}
	for _, q := range st.Clustering {
		if q.Status != "ok" {
			continue
		}
		if tr.MaxAvgDepth != nil && q.AvgDepth > *tr.MaxAvgDepth {
			hit(TriggerAvgDepth, fmt.Sprintf("column %s average depth %.2f > %g", q.Column, q.AvgDepth, *tr.MaxAvgDepth))
		}
		if tr.MinSkippingEffectiveness != nil && q.SkippingEffectiveness < *tr.MinSkippingEffectiveness {
			hit(TriggerSkippingEffectiveness, fmt.Sprintf("column %s skipping effectiveness %.2f < %g", q.Column, q.SkippingEffectiveness, *tr.MinSkippingEffectiveness))
		}
	}
	if tr.UnclusteredBytes != nil {
		if limit := tr.UnclusteredBytes.Value(); st.UnclusteredBytes >= limit {
			hit(TriggerUnclusteredBytes, fmt.Sprintf("%s unclustered >= %s", humanBytes(st.UnclusteredBytes), humanBytes(limit)))
		} else {
			below = append(below, fmt.Sprintf("%s unclustered < %s", humanBytes(st.UnclusteredBytes), humanBytes(limit)))
		}
	}
	if len(reasons) == 0 {
		msg := "no trigger crossed"
		if len(below) > 0 {
			msg += ": " + strings.Join(below, ", ")
		}
		return TriggerDecision{Reason: TriggerBelowThresholds, Message: msg}
	}
	return TriggerDecision{Run: true, Reason: reasons[0], Message: strings.Join(crossed, "; ")}
}
