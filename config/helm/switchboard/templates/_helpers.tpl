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

{{/* SIP and RTP per pod: one way at a time, with ports that fit. */}}
{{- define "switchboard.checkSIPNetwork" -}}
{{- $w := .Values.workers -}}
{{- if and $w.hostNetwork $w.podServices.enabled -}}
{{- fail "workers.hostNetwork and workers.podServices.enabled: choose one way carriers reach the pods" -}}
{{- end -}}
{{- if or $w.hostNetwork $w.podServices.enabled -}}
{{- if or (mod (int $w.rtpPorts.first) 2) (mod (int $w.rtpPorts.count) 2) (lt (int $w.rtpPorts.count) 2) -}}
{{- fail "workers.rtpPorts: first and count must be even (RTP on even ports, RTCP on the next)" -}}
{{- end -}}
{{- if not $w.maxActiveCallsPerReplica -}}
{{- fail "workers.maxActiveCallsPerReplica must be set with hostNetwork or podServices: each call takes two ports of workers.rtpPorts" -}}
{{- end -}}
{{- if gt (mul 2 (int $w.maxActiveCallsPerReplica)) (int $w.rtpPorts.count) -}}
{{- fail (printf "workers.rtpPorts.count %d holds %d calls, fewer than workers.maxActiveCallsPerReplica %d" (int $w.rtpPorts.count) (div (int $w.rtpPorts.count) 2) (int $w.maxActiveCallsPerReplica)) -}}
{{- end -}}
{{- end -}}
{{- if and $w.podServices.enabled .Values.networkPolicy.enabled (not .Values.networkPolicy.sipFrom) -}}
{{- fail "workers.podServices with networkPolicy.enabled: list your carriers' networks in networkPolicy.sipFrom (or [0.0.0.0/0])" -}}
{{- end -}}
{{- end -}}

{{/* The pods' fixed SIP and RTP ports, with hostNetwork or podServices. */}}
{{- define "switchboard.fixedSIPPorts" -}}
{{- if or .Values.workers.hostNetwork .Values.workers.podServices.enabled -}}true{{- end -}}
{{- end -}}

{{/* The last RTP port. */}}
{{- define "switchboard.rtpLast" -}}
{{- sub (add (int .Values.workers.rtpPorts.first) (int .Values.workers.rtpPorts.count)) 1 -}}
{{- end -}}

{{/* An argument of the binary, from (list "flag-name" value): none for a
null or empty value (the binary's default), so false and 0 still pass. */}}
{{- define "switchboard.flag" -}}
{{- $v := index . 1 -}}
{{- if and (not (kindIs "invalid" $v)) (ne (toString $v) "") }}
        - --{{ index . 0 }}={{ $v }}
{{- end -}}
{{- end -}}
