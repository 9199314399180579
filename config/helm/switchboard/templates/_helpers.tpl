{{/* The prefix of every name, as kustomize's namePrefix in config/default. */}}
{{- define "switchboard.name" -}}
{{- printf "%s-switchboard" .Release.Name | trunc 52 | trimSuffix "-" -}}
{{- end -}}

{{- define "switchboard.labels" -}}
app.kubernetes.io/name: switchboard
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end -}}

{{- define "switchboard.selector" -}}
app.kubernetes.io/name: switchboard
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "switchboard.serviceAccount" -}}
{{ include "switchboard.name" . }}-manager
{{- end -}}

{{/* Several replicas share nothing local: refuse what would break. */}}
{{- define "switchboard.checkReplicas" -}}
{{- if gt (int .Values.replicas) 1 -}}
{{- if not .Values.history.dsnSecret -}}
{{- fail "replicas > 1 needs the history store in PostgreSQL (history.dsnSecret): embedded SQLite serves one replica" -}}
{{- end -}}
{{- if ne .Values.recordings.store "s3" -}}
{{- fail "replicas > 1 needs recordings in S3 (recordings.store: s3): a local volume belongs to one pod" -}}
{{- end -}}
{{- end -}}
{{- end -}}
