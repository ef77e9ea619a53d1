{{/*
What the templates share: the images, the schedulerNames served, and the contents and names of
the two ConfigMaps. Object names are fixed (lahar-*), as in manifests/: the components find each
other by them (Leases, certificate Secrets, the webhook configurations, the Services their
certificates name), so a cluster holds one release of this chart. No label is added that
manifests/ lacks: Helm tracks its objects by the release's manifest, not by labels.
*/}}

{{/* Lahar's image (the Dockerfile's), as a container's `image` and `imagePullPolicy`. */}}
{{- define "lahar.image" -}}
image: {{ printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) }}
{{- with .Values.image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{/* The stock kube-scheduler's image, the same way. */}}
{{- define "lahar.kubeSchedulerImage" -}}
{{- $image := .Values.scheduler.kubeScheduler.image -}}
image: {{ printf "%s:%s" $image.repository $image.tag }}
{{- with $image.pullPolicy }}
imagePullPolicy: {{ . }}
{{- end }}
{{- end }}

{{/* A pod's imagePullSecrets, priorityClassName and placement (from the component's values). */}}
{{- define "lahar.podPlacement" -}}
{{- with .root.Values.imagePullSecrets }}
imagePullSecrets: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .component.priorityClassName }}
priorityClassName: {{ . }}
{{- end }}
{{- with .component.nodeSelector }}
nodeSelector: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .component.tolerations }}
tolerations: {{- toYaml . | nindent 2 }}
{{- end }}
{{- with .component.affinity }}
affinity: {{- toYaml . | nindent 2 }}
{{- end }}
{{- end }}

{{/* The pods' security context, as every pod of manifests/ has it (Pod Security `restricted`). */}}
{{- define "lahar.podSecurityContext" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  seccompProfile: {type: RuntimeDefault}
{{- end }}

{{- define "lahar.containerSecurityContext" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities: {drop: [ALL]}
{{- end }}

{{/* The schedulerNames Lahar's kube-scheduler answers to and the webhook serves (a JSON list):
schedulerNames, without Volcano's own name beside a running Volcano. */}}
{{- define "lahar.servedNames" -}}
{{- $names := .Values.schedulerNames -}}
{{- if .Values.besideVolcano -}}
{{- $names = without $names "volcano" -}}
{{- end -}}
{{- if not $names -}}
{{- fail "schedulerNames: besideVolcano leaves `volcano` to Volcano's scheduler; name at least one other schedulerName for Lahar" -}}
{{- end -}}
{{- toJson $names -}}
{{- end }}

{{/* The flags naming `names` (repeated `flag`), none when they are the components' defaults,
lahar and volcano (a JSON list). */}}
{{- define "lahar.nameFlags" -}}
{{- $flags := list -}}
{{- if ne (toJson .names) (toJson (list "lahar" "volcano")) -}}
{{- range .names -}}
{{- $flags = append $flags (printf "%s=%s" $.flag .) -}}
{{- end -}}
{{- end -}}
{{- toJson $flags -}}
{{- end }}

{{/* The pod webhook's condition on schedulerName, as `lahar webhook` writes it itself (sorted). */}}
{{- define "lahar.schedulerCondition" -}}
{{- $quoted := list -}}
{{- range (include "lahar.servedNames" . | fromJsonArray | uniq | sortAlpha) -}}
{{- $quoted = append $quoted (printf "'%s'" .) -}}
{{- end -}}
{{- printf "object.spec.schedulerName in [%s]" (join ", " $quoted) -}}
{{- end }}

{{/* A generated ConfigMap's name as kustomize's configMapGenerator makes it: the name, a dash
and the first ten hex digits of the SHA-256 of {"data":...,"kind":"ConfigMap","name":""} (Go's
JSON, keys sorted; the name is empty, as kustomize's hasher reads it), with 0, 1, 3, a and e
written g, h, k, m and t. Equal contents, equal names: the chart and manifests/ name the same
ConfigMap alike, and a changed policy renames it and so rolls the pods that mount it. */}}
{{- define "lahar.configMapName" -}}
{{- $hex := dict "data" .data "kind" "ConfigMap" "name" "" | toJson | sha256sum | trunc 10 -}}
{{- printf "%s-%s" .name ($hex | replace "0" "g" | replace "1" "h" | replace "3" "k" | replace "a" "m" | replace "e" "t") -}}
{{- end }}

{{/* The ConfigMap lahar-policy's data (a JSON object): the shipped lahar.yaml and
preemption.yaml, or policy.lahar's and policy.preemption's text, with policy.scaleUp set as the
gang plugin's gang.scaleUp when given. */}}
{{- define "lahar.policyData" -}}
{{- $data := dict -}}
{{- range $key := list "lahar" "preemption" -}}
{{- $file := printf "%s.yaml" $key -}}
{{- $text := get $.Values.policy $key | default ($.Files.Get (printf "files/policy/%s" $file)) -}}
{{- $parsed := fromYaml $text -}}
{{- if hasKey $parsed "Error" -}}
{{- fail (printf "policy.%s: not a YAML mapping: %s" $key $parsed.Error) -}}
{{- end -}}
{{- with $.Values.policy.scaleUp -}}
{{- $text = include "lahar.withScaleUp" (dict "policy" $parsed "key" $key "mode" .) -}}
{{- end -}}
{{- $_ := set $data $file $text -}}
{{- end -}}
{{- toJson $data -}}
{{- end }}

{{/* A policy (parsed) with the gang plugin's gang.scaleUp set to `mode`, as YAML. */}}
{{- define "lahar.withScaleUp" -}}
{{- $found := false -}}
{{- range $tier := .policy.tiers | default list -}}
{{- range $plugin := $tier.plugins | default list -}}
{{- if eq $plugin.name "gang" -}}
{{- $arguments := $plugin.arguments | default dict -}}
{{- $_ := set $arguments "gang.scaleUp" $.mode -}}
{{- $_ := set $plugin "arguments" $arguments -}}
{{- $found = true -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if not $found -}}
{{- fail (printf "policy.scaleUp: the policy %s.yaml has no gang plugin to set gang.scaleUp on" .key) -}}
{{- end -}}
{{- toYaml .policy -}}
{{- end }}

{{/* The ConfigMap lahar-scheduler-config's data (a JSON object): kube-scheduler's configuration,
the shipped file when it says what this release needs (the profiles lahar and volcano, or lahar
alone beside Volcano, its Lease in lahar-system), else that file with one profile per name served
and its Lease in the release's namespace. */}}
{{- define "lahar.schedulerConfigData" -}}
{{- $names := include "lahar.servedNames" . | fromJsonArray -}}
{{- $shipped := .Files.Get "files/policy/kube-scheduler-config.yaml" -}}
{{- $text := "" -}}
{{- $home := eq .Release.Namespace "lahar-system" -}}
{{- if and $home (eq (toJson $names) (toJson (list "lahar" "volcano"))) -}}
{{- $text = $shipped -}}
{{- else if and $home .Values.besideVolcano (eq (toJson $names) (toJson (list "lahar"))) -}}
{{- $text = .Files.Get "files/beside-volcano/kube-scheduler-config.yaml" -}}
{{- else -}}
{{- $config := fromYaml $shipped -}}
{{- $first := first $config.profiles -}}
{{- $profiles := list -}}
{{- range $names -}}
{{- $profile := deepCopy $first -}}
{{- $_ := set $profile "schedulerName" . -}}
{{- $profiles = append $profiles $profile -}}
{{- end -}}
{{- $_ := set $config "profiles" $profiles -}}
{{- $_ := set $config.leaderElection "resourceNamespace" .Release.Namespace -}}
{{- $text = toYaml $config -}}
{{- end -}}
{{- dict "kube-scheduler-config.yaml" $text | toJson -}}
{{- end }}

{{/* The two ConfigMaps' names. */}}
{{- define "lahar.policyConfigMap" -}}
{{- include "lahar.configMapName" (dict "name" "lahar-policy" "data" (include "lahar.policyData" . | fromJson)) -}}
{{- end }}

{{- define "lahar.schedulerConfigMap" -}}
{{- include "lahar.configMapName" (dict "name" "lahar-scheduler-config" "data" (include "lahar.schedulerConfigData" . | fromJson)) -}}
{{- end }}

{{/* The peer NetworkPolicies admit to the metrics ports, Prometheus's pods, as a YAML list. */}}
{{- define "lahar.prometheusPeer" -}}
{{- $prometheus := .Values.networkPolicy.prometheus -}}
{{- $peer := dict "namespaceSelector" ($prometheus.namespaceSelector | default dict) -}}
{{- with $prometheus.podSelector -}}
{{- $_ := set $peer "podSelector" . -}}
{{- end -}}
{{- toYaml (list $peer) -}}
{{- end }}

{{/* The log flags every Lahar container takes, as a JSON list: none for the defaults (text,
info), so that the default render is manifests/' own. */}}
{{- define "lahar.logFlags" -}}
{{- $logs := .Values.logs | default dict -}}
{{- $flags := list -}}
{{- if and $logs.format (ne $logs.format "text") -}}
{{- $flags = append $flags (printf "--log-format=%s" $logs.format) -}}
{{- end -}}
{{- if and $logs.level (ne $logs.level "info") -}}
{{- $flags = append $flags (printf "--log-level=%s" $logs.level) -}}
{{- end -}}
{{- toJson $flags -}}
{{- end }}
