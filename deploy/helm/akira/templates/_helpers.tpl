{{- define "akira.fullname" -}}{{ .Release.Name }}-akira{{- end -}}

{{- define "akira.selectorLabels" -}}
app.kubernetes.io/name: akira
app.kubernetes.io/instance: {{ .Release.Name | quote }}
{{- end -}}

{{- define "akira.labels" -}}
{{ include "akira.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
{{- end -}}

{{- define "akira.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "akira.workerImage" -}}
{{ .Values.workerImage.repository }}:{{ .Values.workerImage.tag | default .Chart.AppVersion }}
{{- end -}}

{{- define "akira.redisHost" -}}{{ include "akira.fullname" . }}-redis{{- end -}}

{{- define "akira.redisURL" -}}
{{- if .Values.redis.enabled -}}redis://{{ include "akira.redisHost" . }}:6379/0
{{- else if .Values.externalRedisURL -}}{{ .Values.externalRedisURL }}
{{- else -}}{{ fail "redis.enabled=false needs externalRedisURL: the URL of the Redis Akira should use" }}
{{- end -}}
{{- end -}}

{{/* The Secret and key of the Redis password, or nothing when there is none. */}}
{{- define "akira.redisPasswordSecret" -}}
{{- if .Values.redis.enabled -}}{{ include "akira.fullname" . }}-redis
{{- else -}}{{ .Values.externalRedisPassword.secretName }}
{{- end -}}
{{- end -}}
{{- define "akira.redisPasswordKey" -}}
{{- if .Values.redis.enabled -}}password{{- else -}}{{ .Values.externalRedisPassword.key }}{{- end -}}
{{- end -}}

{{- define "akira.env" -}}
- name: GITHUB_API_URL
  value: {{ .Values.github.apiURL | quote }}
- name: REDIS_URL
  value: {{ include "akira.redisURL" . | quote }}
{{- with include "akira.redisPasswordSecret" . }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef: {name: {{ . | quote }}, key: {{ include "akira.redisPasswordKey" $ | quote }}}
{{- end }}
- name: AKIRA_CONFIG
  value: /etc/akira/akira.yaml
- name: GITHUB_PRIVATE_KEY_PATH
  value: /etc/akira/secret/private-key.pem
- name: AKIRA_ADMIN_ADDR
  value: ":9090"
{{- if .Values.metrics.open }}
- name: AKIRA_METRICS
  value: open
{{- end }}
{{- with .Values.admin.publicURL }}
- name: AKIRA_PUBLIC_URL
  value: {{ . | quote }}
{{- end }}
{{- end -}}

{{- define "akira.probes" -}}
startupProbe:
  httpGet: {path: /healthz, port: http}
  periodSeconds: 2
  failureThreshold: 30
readinessProbe:
  httpGet: {path: /readyz, port: http}
  periodSeconds: 10
livenessProbe:
  httpGet: {path: /healthz, port: http}
  periodSeconds: 20
  failureThreshold: 3
{{- end -}}
