//go:build tools

// Package k8sbin pins the Kubernetes and etcd commands that hack/build-k8s.sh builds from the Go module
// proxy. Blank imports keep every dependency in go.mod/go.sum so the build is reproducible offline.
package k8sbin

import (
	_ "go.etcd.io/etcd/server/v3"
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
	_ "k8s.io/kubernetes/cmd/kube-controller-manager"
	_ "k8s.io/kubernetes/cmd/kube-scheduler"
	_ "k8s.io/kubernetes/cmd/kubectl"
	_ "k8s.io/kubernetes/cmd/kubelet"
)
