// Package v1 contains the deltakeeper.io/v1 API: DeltaTable (where a Delta table lives and what it should
// look like), OptimizePolicy (when and how to maintain tables) and StreamIngest (continuous ingestion).
//
// +kubebuilder:object:generate=true
// +groupName=deltakeeper.io
package v1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "deltakeeper.io", Version: "v1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme. It is apimachinery's, as in
	// Kubernetes' own API packages: an API package should import little beyond k8s.io/apimachinery.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

// kinds are this package's objects; each kind's file registers its own in init.
var kinds []runtime.Object

func register(objs ...runtime.Object) { kinds = append(kinds, objs...) }

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion, kinds...)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
