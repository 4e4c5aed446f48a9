{{/* Chart name, truncated to the 63 characters of a DNS label. */}}
{{- define "seglog.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Fully qualified app name: release-chart unless the release name already holds the chart name. */}}
{{- define "seglog.fullname" -}}
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

{{- define "seglog.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{- define "seglog.selectorLabels" -}}
app.kubernetes.io/name: {{ include "seglog.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "seglog.labels" -}}
helm.sh/chart: {{ include "seglog.chart" . }}
{{ include "seglog.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/component: compactor
app.kubernetes.io/part-of: seglog
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "seglog.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "seglog.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "seglog.image" -}}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}

{{- define "seglog.configMapName" -}}
{{- printf "%s-config" (include "seglog.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The data claim: the existing one, or the one this chart creates. */}}
{{- define "seglog.claimName" -}}
{{- if .Values.persistence.existingClaim }}
{{- .Values.persistence.existingClaim }}
{{- else if .Values.persistence.create }}
{{- printf "%s-data" (include "seglog.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- fail "persistence: set persistence.existingClaim (the claim the Spark job writes to) or persistence.create=true" }}
{{- end }}
{{- end }}

{{/* compactor.yaml: the user's config with http forced to listen where probes and the Service look. */}}
{{- define "seglog.compactorConfig" -}}
{{- $root := .Values.config.root }}
{{- $mount := trimSuffix "/" .Values.persistence.mountPath }}
{{- if not (or (eq $root $mount) (hasPrefix (printf "%s/" $mount) $root)) }}
{{- fail (printf "config.root (%s) must be under persistence.mountPath (%s): the sidecar works on the mounted volume" $root $mount) }}
{{- end }}
{{- $cfg := dict "root" $root "log" (default dict .Values.config.log) "topics" (default dict .Values.config.topics) "schedule" (default dict .Values.config.schedule) "http" (dict "host" "0.0.0.0" "port" (int .Values.http.port)) }}
{{- with .Values.config.consumer }}{{- $_ := set $cfg "consumer" . }}{{- end }}
{{- toYaml $cfg }}
{{- end }}

{{/* The labels of the sidecar's own monitoring objects' selectors: the job Prometheus gives its targets
     (the Service's name, through the ServiceMonitor) and the release's namespace. */}}
{{- define "seglog.promSelector" -}}
job="{{ include "seglog.fullname" . }}", namespace="{{ .Release.Namespace }}"
{{- end }}

{{/* The pod-level security context of Spark's pods (the driver and executor templates): the volume's
     shared group (fsGroup, README "Running on a cluster"), non-root and seccomp (the restricted Pod
     Security Standard), never a user: Spark's image keeps its own (uid 185). */}}
{{- define "seglog.sparkPodSecurityContext" -}}
{{- toYaml (pick .Values.podSecurityContext "runAsNonRoot" "fsGroup" "fsGroupChangePolicy" "supplementalGroups" "seccompProfile") }}
{{- end }}

{{/* The Spark container of a pod template (driver or executor): named for Spark to fill in, the data volume
     mounted, the restricted container security context (Spark's image's user, sparkSecurityContext), and the
     resources given (Spark writes its own cpu/memory requests and memory limit over the template's).
     Context: a dict with Values, name and resources. */}}
{{- define "seglog.sparkContainer" -}}
name: {{ .name }}
securityContext:
  {{- toYaml .Values.sparkSecurityContext | nindent 2 }}
{{- with .resources }}
resources:
  {{- toYaml . | nindent 2 }}
{{- end }}
volumeMounts:
  - name: data
    mountPath: {{ .Values.persistence.mountPath }}
{{- end }}

{{- define "seglog.executorPodTemplateName" -}}
{{- printf "%s-executor-pod-template" (include "seglog.fullname" .) | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Volumes the sidecar needs: the data claim, its config, a writable /tmp. */}}
{{- define "seglog.volumes" -}}
- name: data
  persistentVolumeClaim:
    claimName: {{ include "seglog.claimName" . }}
- name: config
  configMap:
    name: {{ include "seglog.configMapName" . }}
- name: tmp
  emptyDir:
    sizeLimit: {{ .Values.tmpVolume.sizeLimit }}
{{- end }}

{{/* The sidecar's container, shared by the Deployment and the Spark driver pod template.
     Context: a dict with Values, Chart and sparkDriver (true inside the driver pod template). */}}
{{- define "seglog.container" -}}
name: compactor
image: {{ include "seglog.image" . | quote }}
imagePullPolicy: {{ .Values.image.pullPolicy }}
args: ["--config", "/etc/seglog/compactor.yaml"]
env:
  - name: PYTHONDONTWRITEBYTECODE
    value: "1"
  - name: TMPDIR
    value: /tmp
ports:
  - name: http
    containerPort: {{ .Values.http.port }}
    protocol: TCP
livenessProbe:
  httpGet:
    path: /healthz
    port: http
  initialDelaySeconds: {{ .Values.livenessProbe.initialDelaySeconds }}
  periodSeconds: {{ .Values.livenessProbe.periodSeconds }}
  timeoutSeconds: {{ .Values.livenessProbe.timeoutSeconds }}
  failureThreshold: {{ .Values.livenessProbe.failureThreshold }}
{{- if not .sparkDriver }}
{{- /* Not in the Spark driver pod: a sidecar waiting for the leader lock must not hold the driver pod
       (and the driver's Service) unready. */}}
readinessProbe:
  httpGet:
    path: /readyz
    port: http
  initialDelaySeconds: {{ .Values.readinessProbe.initialDelaySeconds }}
  periodSeconds: {{ .Values.readinessProbe.periodSeconds }}
  timeoutSeconds: {{ .Values.readinessProbe.timeoutSeconds }}
  failureThreshold: {{ .Values.readinessProbe.failureThreshold }}
{{- end }}
securityContext:
  {{- /* uid/gid on the container too, so it holds inside a Spark driver pod whose pod-level user is Spark's */}}
  {{- toYaml (merge (dict) .Values.securityContext (pick .Values.podSecurityContext "runAsUser" "runAsGroup")) | nindent 2 }}
resources:
  {{- toYaml .Values.resources | nindent 2 }}
volumeMounts:
  - name: data
    mountPath: {{ .Values.persistence.mountPath }}
  - name: config
    mountPath: /etc/seglog
    readOnly: true
  - name: tmp
    mountPath: /tmp
{{- end }}
