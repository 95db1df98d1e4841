#!/usr/bin/env bash
# demo.sh - the README's first command. Builds what it needs, starts a local control plane with the
# deltakeeper CRDs, applies the samples and shows what `kubectl get` prints.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
assets=$(hack/build-k8s.sh)
export KUBEBUILDER_ASSETS=$assets
go run ./hack/controlplane -- bash -c '
  set -e
  kubectl create namespace demo >/dev/null
  echo "\$ kubectl apply -n demo -f config/samples/"
  kubectl apply -n demo -f config/samples/
  echo
  echo "\$ kubectl get -n demo deltatables,optimizepolicies,streamingests"
  kubectl get -n demo deltatables,optimizepolicies,streamingests
  echo
  echo "\$ kubectl apply -n demo  (an invalid policy: four-field schedule)"
  printf "apiVersion: deltakeeper.io/v1\nkind: OptimizePolicy\nmetadata: {name: broken}\nspec: {targets: {tableNames: [orders]}, schedule: \"0 3 * *\"}\n" |
    kubectl apply -n demo -f - 2>&1 || true
'
