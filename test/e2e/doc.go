// Package e2e holds the end-to-end tests: the manager and its worker Jobs on a real single-node cluster (see
// hack/cluster-up.sh) with a real S3-compatible server on the host. The tests carry the build tag e2e, so
// `go test ./...` does not run them; hack/e2e.sh (make e2e) builds and starts everything they need, installs
// test/e2e/config and runs `go test -tags e2e ./test/e2e/...`.
package e2e
