{{- define "akira.fullname" -}}{{ .Release.Name }}-akira{{- end -}}
{{- define "akira.env" -}}
- name: GITHUB_API_URL
  value: {{ .Values.github.apiURL | quote }}
- name: REDIS_URL
  value: {{ .Values.redisURL | quote }}
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
