package main

import (
	"context"
	"testing"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client/fake"
)

func TestDiscoverWorkerImage_UsesTheManagersOwnImage(t *testing.T) {
	scheme, err := newScheme()
	if err != nil {
		t.Fatal(err)
	}
	pod := &corev1.Pod{
		ObjectMeta: metav1.ObjectMeta{Name: "deltakeeper-manager-abc", Namespace: "deltakeeper-system"},
		Spec: corev1.PodSpec{Containers: []corev1.Container{
			{Name: "istio-proxy", Image: "istio/proxyv2:1.24"},
			{Name: "manager", Image: "registry.example.com/dk@sha256:0123"},
		}},
	}
	reader := fake.NewClientBuilder().WithScheme(scheme).WithObjects(pod).Build()
	ctx := context.Background()
	tests := []struct {
		name, ns, pod, want string
	}{
		{"own Pod, sidecar skipped", "deltakeeper-system", "deltakeeper-manager-abc", "registry.example.com/dk@sha256:0123"},
		{"not in a Pod", "", "", releaseImage()},
		{"Pod not readable", "deltakeeper-system", "gone", releaseImage()},
	}
	for _, tc := range tests {
		if got := discoverWorkerImage(ctx, reader, tc.ns, tc.pod); got != tc.want {
			t.Errorf("%s: image %q, want %q", tc.name, got, tc.want)
		}
	}
	byArgs := &corev1.Pod{Spec: corev1.PodSpec{Containers: []corev1.Container{{Name: "c", Image: "x:1", Args: []string{"manager", "--leader-elect"}}}}}
	if got := managerImage(byArgs); got != "x:1" {
		t.Errorf("managerImage by args = %q", got)
	}
}
