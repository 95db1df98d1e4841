package controllers

import (
	"fmt"
	"slices"
	"sort"
	"strings"

	"k8s.io/apimachinery/pkg/util/validation"

	deltav1 "github.com/deltakeeper/deltakeeper/api/v1"
)

// What a jobTemplate may ask for beyond what the API's CEL rules check. Whoever may edit a DeltaTable,
// OptimizePolicy or StreamIngest chooses what its worker pods run: the image is limited to the ones the
// manager's administrator allowed (--allowed-worker-images, default: the worker image only), because a
// worker pod receives the table's credentials. Pod label values are checked here because CEL cannot afford a
// regular expression over a map's unbounded values. Either mistake makes the object InvalidSpec, with an
// Event, and no Job is created for it.

// checkJobTemplate returns a spec error when t names an image the manager may not run or a pod label value
// Kubernetes would refuse; nil for a nil template.
func (r *reconcilerBase) checkJobTemplate(t *deltav1.JobTemplate) error {
	if t == nil {
		return nil
	}
	if t.Image != "" && !imageAllowed(t.Image, r.WorkerImage, r.AllowedImages) {
		return specError{fmt.Errorf("jobTemplate.image %q is not allowed: this manager runs only %s (its --allowed-worker-images flag); "+
			"remove jobTemplate.image to use the worker image, or ask the cluster's administrator to allow the image",
			t.Image, strings.Join(allowedList(r.WorkerImage, r.AllowedImages), ", "))}
	}
	keys := make([]string, 0, len(t.PodLabels))
	for k := range t.PodLabels {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		if errs := validation.IsValidLabelValue(t.PodLabels[k]); len(errs) > 0 {
			return specError{fmt.Errorf("jobTemplate.podLabels value %s=%q is not a label value: at most 63 letters, digits, -, _ or ., "+
				"starting and ending with a letter or digit (no spaces, no /), e.g. data-platform", k, t.PodLabels[k])}
		}
	}
	return nil
}

// imageAllowed reports whether image is the worker image or matches an allowed entry: an exact reference, or a
// prefix ending in * (registry.example.com/team/*).
func imageAllowed(image, workerImage string, allowed []string) bool {
	if image == workerImage {
		return true
	}
	return slices.ContainsFunc(allowed, func(a string) bool {
		if prefix, ok := strings.CutSuffix(a, "*"); ok {
			return strings.HasPrefix(image, prefix)
		}
		return image == a
	})
}

// allowedList names the images a template may use, for messages.
func allowedList(workerImage string, allowed []string) []string {
	out := []string{workerImage}
	for _, a := range allowed {
		if a != workerImage {
			out = append(out, a)
		}
	}
	return out
}
