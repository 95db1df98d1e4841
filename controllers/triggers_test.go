package controllers

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/utils/ptr"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func TestEvaluateTriggers_RunsWhenAnyIsCrossed(t *testing.T) {
	q := func(col string, depth, skipping float64) deltav1.ColumnQuality {
		return deltav1.ColumnQuality{Column: col, Status: "ok", AvgDepth: depth, SkippingEffectiveness: skipping}
	}
	gi := resource.MustParse("1Gi")
	withUnclustered := func(b *tableBuilder, n int64) *deltav1.DeltaTable {
		t := b.obj()
		t.Status.UnclusteredBytes = n
		return t
	}
	tests := []struct {
		name       string
		triggers   *deltav1.Triggers
		table      *deltav1.DeltaTable
		wantRun    bool
		wantWait   bool
		wantReason string
		wantMsg    string
	}{
		{"never inspected: wait", nil, s3Table("t").obj(), false, true, TriggerNotInspected, "first inspection"},
		{"default 50 small files, 49: below", nil, s3Table("t").inspected(49).obj(), false, false, TriggerBelowThresholds, "49 small files < 50"},
		{"default 50 small files, 50: run", nil, s3Table("t").inspected(50).obj(), true, false, TriggerSmallFiles, "50 small files >= 50"},
		{"minSmallFiles 0: every slot", &deltav1.Triggers{MinSmallFiles: ptr.To[int32](0)}, s3Table("t").inspected(0).obj(), true, false, TriggerEverySlot, ""},
		{
			"average depth crossed on one column",
			&deltav1.Triggers{MaxAvgDepth: ptr.To(2.0)},
			s3Table("t").inspected(0, q("a", 1.5, 0.9), q("b", 3.25, 0.9)).obj(), true, false, TriggerAvgDepth, "column b average depth 3.25 > 2",
		},
		{
			"skipping effectiveness below the minimum",
			&deltav1.Triggers{MinSkippingEffectiveness: ptr.To(0.8)},
			s3Table("t").inspected(0, q("a", 1, 0.5)).obj(), true, false, TriggerSkippingEffectiveness, "0.50 < 0.8",
		},
		{
			"columns without statistics are not judged",
			&deltav1.Triggers{MinSkippingEffectiveness: ptr.To(0.8)},
			s3Table("t").inspected(0, deltav1.ColumnQuality{Column: "a", Status: "no_stats"}).obj(), false, false, TriggerBelowThresholds, "",
		},
		{
			"unclustered bytes crossed",
			&deltav1.Triggers{UnclusteredBytes: &gi},
			withUnclustered(s3Table("t").inspected(0), 2<<30), true, false, TriggerUnclusteredBytes, "2.0GiB unclustered >= 1.0GiB",
		},
		{
			"several crossed: the first names the reason, the message lists all",
			&deltav1.Triggers{UnclusteredBytes: &gi, MaxAvgDepth: ptr.To(1.0)},
			withUnclustered(s3Table("t").inspected(60, q("a", 2, 1)), 2<<30), true, false, TriggerSmallFiles, "unclustered",
		},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			d := EvaluateTriggers(tc.triggers, tc.table)
			if d.Run != tc.wantRun || d.Wait != tc.wantWait || d.Reason != tc.wantReason || !strings.Contains(d.Message, tc.wantMsg) {
				t.Errorf("got %+v, want run=%v wait=%v reason=%s message containing %q", d, tc.wantRun, tc.wantWait, tc.wantReason, tc.wantMsg)
			}
		})
	}
}
