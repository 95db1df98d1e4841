#!/usr/bin/env bash
# gen-chart-crds.sh - copy the generated CRDs, the manager's RBAC rules and the user roles into the Helm chart, so the chart
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
# The manager's rules, one source for the chart's ClusterRole (cluster-wide install) and its per-namespace
# Roles (watchNamespaces): the rules controller-gen wrote from the +kubebuilder:rbac markers.
{
  echo "{{- /* Generated from config/rbac/role.yaml by hack/gen-chart-crds.sh; do not edit. */ -}}"
  echo '{{- define "deltakeeper.managerRules" -}}'
  sed -n '/^rules:$/,$p' "$root/config/rbac/role.yaml"
  echo "{{- end -}}"
} >"$root/charts/deltakeeper/templates/_manager_rules.tpl"
# The aggregated roles for people, copied from config/rbac/user_roles.yaml (kustomize installs the same file).
{
  echo "# Generated from config/rbac/user_roles.yaml by hack/gen-chart-crds.sh; do not edit."
  echo "{{- if and .Values.rbac.create .Values.rbac.userRoles }}"
  sed -e '/^#/d' \
      -e 's/^  name: deltakeeper-\(editor\|viewer\)$/  name: {{ include "deltakeeper.fullname" . }}-\1/' \
      -e 's/^  labels:$/  labels:\n    {{- include "deltakeeper.labels" . | nindent 4 }}/' "$root/config/rbac/user_roles.yaml"
  echo "{{- end }}"
} >"$root/charts/deltakeeper/templates/userroles.yaml"
