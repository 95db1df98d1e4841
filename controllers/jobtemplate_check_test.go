package controllers

import (
	"strings"
	"testing"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

func TestCheckJobTemplate_AllowsOnlyTheWorkerImageAndListedOnes(t *testing.T) {
	const worker = "ghcr.io/deltakeeper/deltakeeper:1.2.0"
	cases := []struct {
		name    string
		allowed []string
		tmpl    *deltav1.JobTemplate
		want    string // "" when allowed
	}{
		{"no template", nil, nil, ""},
		{"no image", nil, &deltav1.JobTemplate{}, ""},
		{"the worker image named", nil, &deltav1.JobTemplate{Image: worker}, ""},
		{"another image by default", nil, &deltav1.JobTemplate{Image: "evil.example.com/miner:1"},
			`jobTemplate.image "evil.example.com/miner:1" is not allowed: this manager runs only ghcr.io/deltakeeper/deltakeeper:1.2.0 (its --allowed-worker-images flag)`},
		{"an exact entry", []string{"registry.example.com/dk:1.2.0"}, &deltav1.JobTemplate{Image: "registry.example.com/dk:1.2.0"}, ""},
		{"an exact entry is not a prefix", []string{"registry.example.com/dk"}, &deltav1.JobTemplate{Image: "registry.example.com/dk-evil:1"},
			"this manager runs only ghcr.io/deltakeeper/deltakeeper:1.2.0, registry.example.com/dk"},
		{"a prefix entry", []string{"registry.example.com/team/*"}, &deltav1.JobTemplate{Image: "registry.example.com/team/dk@sha256:ab"}, ""},
		{"outside the prefix", []string{"registry.example.com/team/*"}, &deltav1.JobTemplate{Image: "registry.example.com/other/dk:1"}, "is not allowed"},
		{"a pod label value with a space", nil, &deltav1.JobTemplate{PodLabels: map[string]string{"team": "data platform"}},
			`jobTemplate.podLabels value team="data platform" is not a label value`},
		{"a pod label value of 64 characters", nil, &deltav1.JobTemplate{PodLabels: map[string]string{"x": strings.Repeat("a", 64)}},
			"is not a label value"},
		{"good pod labels", nil, &deltav1.JobTemplate{PodLabels: map[string]string{"team": "data-platform", "empty": ""}}, ""},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			r := &reconcilerBase{WorkerImage: worker, AllowedImages: tc.allowed}
			err := r.checkJobTemplate(tc.tmpl)
			switch {
			case tc.want == "" && err != nil:
				t.Fatalf("rejected: %v", err)
			case tc.want != "" && err == nil:
				t.Fatal("accepted")
			case tc.want != "" && !strings.Contains(err.Error(), tc.want):
				t.Fatalf("error %q does not say %q", err, tc.want)
			case err != nil && !isSpecError(err):
				t.Fatalf("error %v is not a spec error", err)
			}
		})
	}
}
