//go:build tools

// Package helmbin pins the Helm CLI that hack/build-helm.sh builds from the Go module proxy, so that the
// chart is linted and rendered by the tests without downloading a binary.
package helmbin

import _ "helm.sh/helm/v4/cmd/helm"
