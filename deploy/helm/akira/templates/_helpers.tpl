{{- define "akira.fullname" -}}{{ .Release.Name }}-akira{{- end -}}
{{- define "akira.redisURL" -}}
{{- if .Values.redisURL -}}{{ .Values.redisURL }}
{{- else if .Values.redis.enabled -}}redis://{{ include "akira.fullname" . }}-redis:6379/0
{{- else -}}{{ fail "set redisURL, or redis.enabled to run the chart's own Redis" }}
{{- end -}}
{{- end -}}
{{- define "akira.env" -}}
- name: GITHUB_API_URL
  value: {{ .Values.github.apiURL | quote }}
- name: REDIS_URL
  value: {{ include "akira.redisURL" . | quote }}
{{- with .Values.redisPassword }}
- name: REDIS_PASSWORD
  valueFrom:
    secretKeyRef: {name: {{ .secretName | quote }}, key: {{ .key | quote }}}
{{- end }}
- name: AKIRA_CONFIG
  value: /etc/akira/akira.yaml
- name: GITHUB_PRIVATE_KEY_PATH
  value: /etc/akira/secret/private-key.pem
{{- end -}}
