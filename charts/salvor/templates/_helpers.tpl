{{/* The labels `salvor install` puts on everything; the selector's too. */}}
{{- define "salvor.selectorLabels" -}}
app.kubernetes.io/component: server
app.kubernetes.io/name: salvor
{{- end }}

{{- define "salvor.labels" -}}
{{ include "salvor.selectorLabels" . }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version }}
{{- end }}

{{- define "salvor.image" -}}
{{- if .Values.image.digest -}}
{{ .Values.image.repository }}@{{ .Values.image.digest }}
{{- else -}}
{{ .Values.image.repository }}:{{ .Values.image.tag }}
{{- end }}
{{- end }}

{{/* The Secret the default location's credential names, if any. */}}
{{- define "salvor.credentialSecret" -}}
{{- if .Values.credentials.existingSecret -}}
{{ .Values.credentials.existingSecret }}
{{- else if .Values.credentials.secretContents.cloud -}}
cloud-credentials
{{- end }}
{{- end }}

{{/* image.imagePullSecrets on a ServiceAccount: its pods (mover pods,
maintenance Jobs) pull with them. */}}
{{- define "salvor.imagePullSecrets" -}}
{{- with .Values.image.imagePullSecrets }}
imagePullSecrets:
{{- range . }}
- name: {{ . }}
{{- end }}
{{- end }}
{{- end }}

{{/* filesystemLocationDir's volume mount and volume (--filesystem-location-dir):
the same host directory at the same path in the server's pod and the node
agent's, where filesystem locations' roots are. */}}
{{- define "salvor.filesystemLocationDir" -}}
{{- $d := .Values.filesystemLocationDir -}}
{{- if $d -}}
{{- if or (not (hasPrefix "/" $d)) (ne (clean $d) $d) (eq $d "/") -}}
{{- fail (printf "filesystemLocationDir %q: want a clean absolute path of a directory other than /" $d) -}}
{{- end -}}
{{ $d }}
{{- end -}}
{{- end }}
