#!/usr/bin/env bash
# gen-chart-crds.sh - copy the generated CRDs and the manager ClusterRole into the Helm chart, so the chart
# can never drift from the markers. CRDs are templates (not crds/) so that `helm upgrade` upgrades them;
# crds.enabled gates them and crds.keep keeps them (and the tables' objects) on uninstall.
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
out=$root/charts/deltakeeper/templates/crds
mkdir -p "$out"
rm -f "$out"/*.yaml
for f in "$root"/config/crd/bases/*.yaml; do
  {
    echo "{{- if .Values.crds.enabled }}"
    sed -e '/^---$/d' \
        -e 's/^  annotations:$/  annotations:\n    {{- if .Values.crds.keep }}\n    helm.sh\/resource-policy: keep\n    {{- end }}/' "$f"
    echo "{{- end }}"
  } >"$out/$(basename "$f")"
done
{
  echo "# Generated from config/rbac/role.yaml by hack/gen-chart-crds.sh; do not edit."
  echo "{{- if .Values.rbac.create }}"
  sed -e '/^---$/d' -e 's/^  name: deltakeeper-manager$/  name: {{ include "deltakeeper.fullname" . }}-manager\n  labels:\n    {{- include "deltakeeper.labels" . | nindent 4 }}/' "$root/config/rbac/role.yaml"
  echo "{{- end }}"
} >"$root/charts/deltakeeper/templates/clusterrole.yaml"
