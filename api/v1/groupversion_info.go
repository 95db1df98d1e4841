// Package v1 contains the deltakeeper.io/v1 API: DeltaTable (where a Delta table lives and what it should
// look like), OptimizePolicy (when and how to maintain tables) and StreamIngest (continuous ingestion).
//
// +kubebuilder:object:generate=true
// +groupName=deltakeeper.io
package v1

import (
	"k8s.io/apimachinery/pkg/runtime/schema"
	"sigs.k8s.io/controller-runtime/pkg/scheme"
)

var (
	// GroupVersion is the API group and version of every kind in this package.
	GroupVersion = schema.GroupVersion{Group: "deltakeeper.io", Version: "v1"}

	// SchemeBuilder registers the kinds of this package with a runtime.Scheme.
	SchemeBuilder = &scheme.Builder{GroupVersion: GroupVersion}

	// AddToScheme adds the kinds of this package to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)
