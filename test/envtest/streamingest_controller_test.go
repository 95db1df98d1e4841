package envtest

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func TestStreamIngest_SaysIngestIsNotAvailableAndRunsNothing(t *testing.T) {
	ctx, ns, _ := controllerTest(t)
	si := &deltav1.StreamIngest{
		ObjectMeta: metav1.ObjectMeta{Name: "clicks", Namespace: ns},
		Spec: deltav1.StreamIngestSpec{
			Source: deltav1.IngestSource{Files: &deltav1.FileSource{Location: "s3://landing/clicks/", Format: "json"}},
			Target: "clickstream",
		},
	}
	if err := k8sClient.Create(ctx, si); err != nil {
		t.Fatal(err)
	}
	get := func(what string, cond func(*deltav1.StreamIngest) (bool, string)) *deltav1.StreamIngest {
		var got deltav1.StreamIngest
		eventually(t, "stream "+what, func() (bool, string) {
			if err := k8sClient.Get(ctx, clientKey(si), &got); err != nil {
				return false, err.Error()
			}
			return cond(&got)
		})
		return &got
	}
	get("reports the missing target", func(s *deltav1.StreamIngest) (bool, string) {
		ready := condition(s.Status.Conditions, deltav1.ConditionReady)
		return strings.HasPrefix(ready, "False/TargetNotFound") && strings.Contains(ready, "clickstream"), ready
	})

	newTable(t, ns, "clickstream", nil)
	got := get("reports that ingest is not available", func(s *deltav1.StreamIngest) (bool, string) {
		ready := condition(s.Status.Conditions, deltav1.ConditionReady)
		return strings.HasPrefix(ready, "False/IngestNotAvailable"), ready
	})
	if !strings.Contains(condition(got.Status.Conditions, deltav1.ConditionReady), "not available in this release") ||
		!strings.HasPrefix(condition(got.Status.Conditions, deltav1.ConditionProgressing), "False/IngestNotAvailable") ||
		got.Status.ObservedGeneration != got.Generation || got.Status.LastBatchID != nil || got.Status.ActiveJob != "" {
		t.Errorf("status = %+v", got.Status)
	}
	waitEvent(t, ns, "clicks", "IngestNotAvailable", "not available in this release")
	for _, j := range tableJobs(t, ns, "clickstream", "") {
		if j.Labels[deltav1.LabelOperation] != "inspect" {
			t.Errorf("a StreamIngest started Job %s", j.Name)
		}
	}
}
