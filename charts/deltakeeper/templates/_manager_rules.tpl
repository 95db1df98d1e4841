{{- /* Generated from config/rbac/role.yaml by hack/gen-chart-crds.sh; do not edit. */ -}}
{{- define "deltakeeper.managerRules" -}}
rules:
- apiGroups:
  - ""
  resources:
  - events
  verbs:
  - create
  - list
  - patch
- apiGroups:
  - ""
  resources:
  - pods
  verbs:
  - get
  - list
  - watch
- apiGroups:
  - batch
  resources:
  - jobs
  verbs:
  - create
  - delete
  - get
  - list
  - patch
  - watch
- apiGroups:
  - coordination.k8s.io
  resources:
  - leases
  verbs:
  - create
  - delete
  - get
  - list
  - update
  - watch
- apiGroups:
  - deltakeeper.io
  resources:
  - deltatables
  - optimizepolicies
  - streamingests
  verbs:
  - get
  - list
  - watch
- apiGroups:
  - deltakeeper.io
  resources:
  - deltatables/finalizers
  - optimizepolicies/finalizers
  - streamingests/finalizers
  verbs:
  - update
- apiGroups:
  - deltakeeper.io
  resources:
  - deltatables/status
  - optimizepolicies/status
  - streamingests/status
  verbs:
  - get
  - update
- apiGroups:
  - events.k8s.io
  resources:
  - events
  verbs:
  - create
  - patch
{{- end -}}
