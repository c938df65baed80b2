{{/* The chart name, or nameOverride. */}}
{{- define "berth.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/*
The fully qualified name: fullnameOverride, else the release name when it already
contains the chart name, else "<release>-<chart>". Truncated to 63 characters (DNS label).
*/}}
{{- define "berth.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* "<chart>-<version>" for the helm.sh/chart label. */}}
{{- define "berth.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The labels every object carries. */}}
{{- define "berth.labels" -}}
helm.sh/chart: {{ include "berth.chart" . }}
{{ include "berth.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/part-of: berth
{{- end }}

{{/* The labels that select berth's pods (immutable in a Deployment's selector). */}}
{{- define "berth.selectorLabels" -}}
app.kubernetes.io/name: {{ include "berth.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: scheduler
{{- end }}

{{/* The ServiceAccount berth runs as. */}}
{{- define "berth.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "berth.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- required "serviceAccount.name is required when serviceAccount.create is false" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* The Lease leader election uses. */}}
{{- define "berth.leaseName" -}}
{{- default (include "berth.fullname" .) .Values.leaderElection.leaseName }}
{{- end }}

{{/* The image: repository with the digest when set, else the tag (default appVersion). */}}
{{- define "berth.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* host:port for --metrics-bind-address; IPv6 hosts in brackets. */}}
{{- define "berth.metricsBindAddress" -}}
{{- if contains ":" .Values.metrics.bindAddress }}
{{- printf "[%s]:%d" .Values.metrics.bindAddress (int .Values.metrics.port) }}
{{- else }}
{{- printf "%s:%d" .Values.metrics.bindAddress (int .Values.metrics.port) }}
{{- end }}
{{- end }}
