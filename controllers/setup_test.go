package controllers

import (
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func TestStripForCache_DropsManagedFieldsAndLastApplied(t *testing.T) {
	table := &deltav1.DeltaTable{ObjectMeta: metav1.ObjectMeta{
		Annotations:   map[string]string{corev1.LastAppliedConfigAnnotation: `{"spec":{}}`, deltav1.AnnotationTable: "keep"},
		ManagedFields: []metav1.ManagedFieldsEntry{{Manager: "kubectl"}},
	}}
	out, err := stripForCache(table)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*deltav1.DeltaTable)
	if len(got.ManagedFields) != 0 || len(got.Annotations) != 1 || got.Annotations[deltav1.AnnotationTable] != "keep" {
		t.Errorf("cached object keeps %v and %v", got.ManagedFields, got.Annotations)
	}
}
