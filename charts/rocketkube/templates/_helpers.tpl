{{/*
Names and labels every template shares: one place derives them.
*/}}

{{/* The chart's name, or nameOverride. */}}
{{- define "rocketkube.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/* The prefix of every object's name: fullnameOverride, or <release>-<chart name>
(just the release's name when it already holds the chart's). */}}
{{- define "rocketkube.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "rocketkube.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* The labels that select the operator's pods (never change them in an upgrade). */}}
{{- define "rocketkube.selectorLabels" -}}
app.kubernetes.io/name: {{ include "rocketkube.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: operator
{{- end -}}

{{/* The labels of every object the chart makes. */}}
{{- define "rocketkube.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "rocketkube.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: rocketkube
{{- end -}}

{{/* The operator's ServiceAccount. */}}
{{- define "rocketkube.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "rocketkube.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name: the existing ServiceAccount when create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/* The image, its tag defaulting to the chart's appVersion. */}}
{{- define "rocketkube.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) -}}
{{- end -}}

{{/* Standbys: more than one replica, coordinated by kopf peering. */}}
{{- define "rocketkube.peering" -}}
{{- if gt (int .Values.replicas) 1 }}true{{ end -}}
{{- end -}}

{{/* What kopf reads cluster-wide: CRDs (its kinds appearing and going) and namespaces
(matching the watched ones; kopf falls back to the list as given without them). */}}
{{- define "rocketkube.clusterRules" -}}
- apiGroups: [apiextensions.k8s.io]
  resources: [customresourcedefinitions]
  verbs: [get, list, watch]
- apiGroups: [""]
  resources: [namespaces]
  verbs: [get, list, watch]
{{- end -}}

{{/* What the operator does in a namespace it watches: its three kinds (kopf watches and
patches them), the objects of a BrokerCluster (created, replaced, deleted when obsolete),
pods and claims (read; a pod deleted to roll it, a claim when its group goes), Events, and
a PodMonitor per BrokerCluster when prometheus-operator is installed. */}}
{{- define "rocketkube.namespacedRules" -}}
- apiGroups: [rocketkube.io]
  resources: [brokerclusters, topics, consumergroups]
  verbs: [get, list, watch, patch, update]
- apiGroups: [rocketkube.io]
  resources: [brokerclusters/status, topics/status, consumergroups/status]
  verbs: [get, patch, update]
- apiGroups: [apps]
  resources: [statefulsets]
  verbs: [get, list, create, update, patch, delete]
- apiGroups: [""]
  resources: [services, configmaps]
  verbs: [get, list, create, update, patch, delete]
- apiGroups: [policy]
  resources: [poddisruptionbudgets]
  verbs: [get, list, create, update, patch, delete]
- apiGroups: [""]
  resources: [pods, persistentvolumeclaims]
  verbs: [get, list, delete]
- apiGroups: [""]
  resources: [events]
  verbs: [create]
- apiGroups: [monitoring.coreos.com]
  resources: [podmonitors]
  verbs: [get, list, create, update, patch, delete]
{{- end -}}
