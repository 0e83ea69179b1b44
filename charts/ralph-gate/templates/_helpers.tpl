{{/* The chart's name. */}}
{{- define "ralph-gate.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The release's full name, used for every object. */}}
{{- define "ralph-gate.fullname" -}}
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

{{- define "ralph-gate.selectorLabels" -}}
app.kubernetes.io/name: {{ include "ralph-gate.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{- define "ralph-gate.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "ralph-gate.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{- define "ralph-gate.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "ralph-gate.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{- define "ralph-gate.image" -}}
{{- if .Values.image.digest }}
{{- printf "%s@%s" .Values.image.repository .Values.image.digest }}
{{- else }}
{{- printf "%s:%s" .Values.image.repository (default .Chart.AppVersion .Values.image.tag) }}
{{- end }}
{{- end }}

{{/* The Secret holding the App's credentials. */}}
{{- define "ralph-gate.githubSecret" -}}
{{- default (include "ralph-gate.fullname" .) .Values.github.existingSecret }}
{{- end }}

{{/* Whether the chart renders its own Secret: for inline App credentials, an inline
     Postgres DSN or inline MCP tokens. */}}
{{- define "ralph-gate.ownSecret" -}}
{{- if or (not .Values.github.existingSecret) (include "ralph-gate.inlineDSN" .) .Values.mcp.tokens (include "ralph-gate.inlineUISecrets" .) }}true{{ end }}
{{- end }}

{{/* Whether ui.oauthClientSecret or ui.sessionKey is given inline (the chart's Secret holds it). */}}
{{- define "ralph-gate.inlineUISecrets" -}}
{{- if and .Values.ui.enabled (or .Values.ui.oauthClientSecret .Values.ui.sessionKey) }}true{{ end }}
{{- end }}

{{/* The Secret holding one of the sign-in's secrets: the chart's when the value is inline,
     else github.existingSecret. Called with (list $ value). */}}
{{- define "ralph-gate.uiSecret" -}}
{{- $root := index . 0 }}
{{- if index . 1 }}{{ include "ralph-gate.fullname" $root }}{{ else }}{{ $root.Values.github.existingSecret }}{{ end }}
{{- end }}

{{/* server.public_url: ui.publicUrl, or the Ingress host ("" when neither). */}}
{{- define "ralph-gate.publicUrl" -}}
{{- if .Values.ui.publicUrl }}{{ trimSuffix "/" .Values.ui.publicUrl }}
{{- else if and .Values.ingress.enabled .Values.ingress.host }}{{ ternary "https" "http" (not (empty .Values.ingress.tls)) }}://{{ .Values.ingress.host }}
{{- end }}
{{- end }}

{{- define "ralph-gate.inlineDSN" -}}
{{- if and (eq .Values.store.driver "postgres") (not .Values.store.existingSecret) }}true{{ end }}
{{- end }}

{{- define "ralph-gate.mcpEnv" -}}
{{- printf "RALPH_GATE_MCP_TOKEN_%s" (. | upper | replace "-" "_") }}
{{- end }}

{{/* Where the App's private key is mounted (read-only, from the App's Secret); the pod
     names it in GITHUB_APP_PRIVATE_KEY_FILE. */}}
{{- define "ralph-gate.privateKeyDir" -}}/var/run/secrets/ralph-gate/github{{- end }}
{{- define "ralph-gate.privateKeyFile" -}}{{ include "ralph-gate.privateKeyDir" . }}/private-key.pem{{- end }}

{{/* The environment variables other values set that a token_env may name, one a line:
     mcp.tokens, mcp.existingTokens and extraEnv. */}}
{{- define "ralph-gate.otherEnvNames" -}}
{{- range $name, $_ := .Values.mcp.tokens }}
{{ include "ralph-gate.mcpEnv" $name }}
{{- end }}
{{- range $name := .Values.mcp.existingTokens }}
{{ include "ralph-gate.mcpEnv" $name }}
{{- end }}
{{- range .Values.extraEnv }}
{{ .name }}
{{- end }}
{{- end }}

{{/* The token_env names of config.mcp.agents that mcp.agentTokensSecret provides, one a line
     (each once): those no other chart value already sets. */}}
{{- define "ralph-gate.agentTokenEnvs" -}}
{{- $other := splitList "\n" (include "ralph-gate.otherEnvNames" .) }}
{{- $seen := dict }}
{{- range dig "mcp" "agents" list (.Values.config | default dict) }}
{{- $env := get (. | default dict) "token_env" | default "" }}
{{- if and $env (not (has $env $other)) (not (hasKey $seen $env)) }}
{{- $_ := set $seen $env true }}
{{ $env }}
{{- end }}
{{- end }}
{{- end }}

{{/* The Secrets created outside the chart that the pod reads, comma-separated. */}}
{{- define "ralph-gate.externalSecrets" -}}
{{- $names := list }}
{{- with .Values.github.existingSecret }}{{ $names = append $names . }}{{ end }}
{{- if and (eq .Values.store.driver "postgres") .Values.store.existingSecret }}{{ $names = append $names .Values.store.existingSecret }}{{ end }}
{{- if and .Values.mcp.agentTokensSecret (trim (include "ralph-gate.agentTokenEnvs" .)) }}{{ $names = append $names .Values.mcp.agentTokensSecret }}{{ end }}
{{- $names | uniq | join "," }}
{{- end }}

{{/* Refuses values that cannot work, naming the values key to change. */}}
{{- define "ralph-gate.validate" -}}
{{- if and (gt (int .Values.replicaCount) 1) (ne .Values.store.driver "postgres") }}
{{- fail (printf "replicaCount=%d needs store.driver=postgres: SQLite is one file on one ReadWriteOnce volume and serves exactly one replica. Set replicaCount=1, or store.driver=postgres with store.dsn or store.existingSecret." (int .Values.replicaCount)) }}
{{- end }}
{{- $cfg := .Values.config | default dict }}
{{- range $key := list "server" "store" }}
{{- if hasKey $cfg $key }}
{{- fail (printf "config.%s: the chart renders this section itself; use %s" $key (ternary "containerPort, webhooks.maxBodyBytes and webhooks.maxConcurrent" "store.driver, store.dsn and store.existingSecret" (eq $key "server"))) }}
{{- end }}
{{- end }}
{{- if hasKey (get $cfg "github" | default dict) "app" }}
{{- fail "config.github.app: the App's credentials come from a Secret; use github.appId, github.webhookSecret and github.privateKey (or github.existingSecret)" }}
{{- end }}
{{- if and .Values.ingress.enabled (not .Values.ingress.host) }}
{{- fail "ingress.host: the public host name GitHub delivers webhooks to is required when ingress.enabled=true" }}
{{- end }}
{{- include "ralph-gate.validateMCP" . }}
{{- include "ralph-gate.validateUI" . }}
{{- if not (get (.Values.podSecurityContext | default dict) "fsGroup") }}
{{- fail "podSecurityContext.fsGroup: the App's private key is mounted with mode 0440, readable through the pod's fsGroup; set one (the chart's default is 65532)" }}
{{- end }}
{{- range .Values.extraEnv }}
{{- if eq .name "GITHUB_APP_PRIVATE_KEY" }}
{{- fail "extraEnv: GITHUB_APP_PRIVATE_KEY would pass the PEM as an environment variable beside the mounted key (GITHUB_APP_PRIVATE_KEY_FILE), and ralph-gate refuses both; give the key with github.privateKey or github.existingSecret" }}
{{- end }}
{{- end }}
{{- if .Values.goMemLimit.enabled }}
{{- range .Values.extraEnv }}
{{- if eq .name "GOMEMLIMIT" }}
{{- fail "goMemLimit.enabled: extraEnv sets GOMEMLIMIT as well; set goMemLimit.enabled=false to give your own" }}
{{- end }}
{{- end }}
{{- end }}
{{- $limit := include "ralph-gate.memoryLimitBytes" . }}
{{- if $limit }}
{{- /* ralph-gate's defaults when unset: server.max_body_bytes 1 MiB, server.max_concurrent_webhooks 16. */}}
{{- $held := mul (int64 (.Values.webhooks.maxConcurrent | default 16)) (int64 (.Values.webhooks.maxBodyBytes | default 1048576)) }}
{{- if gt (mul $held 2) (int64 $limit) }}
{{- fail (printf "webhooks.maxConcurrent x webhooks.maxBodyBytes: %d bytes of unauthenticated webhook bodies may be held at once, more than half of resources.limits.memory (%d bytes); lower webhooks.maxConcurrent or webhooks.maxBodyBytes, or raise resources.limits.memory" $held (int64 $limit)) }}
{{- end }}
{{- end }}
{{- end }}

{{/* Refuses MCP values that would leave an agent without its token or expose nobody. */}}
{{- define "ralph-gate.validateMCP" -}}
{{- $agents := dig "mcp" "agents" list (.Values.config | default dict) }}
{{- $other := splitList "\n" (include "ralph-gate.otherEnvNames" .) }}
{{- range $i, $a := $agents }}
{{- $a = $a | default dict }}
{{- $env := get $a "token_env" | default "" }}
{{- if get $a "token" }}
{{- fail (printf "config.mcp.agents[%d].token: a token in config.yml sits in clear in the ConfigMap; give token_env and put the token in mcp.agentTokensSecret under that key (or give token_sha256)" $i) }}
{{- end }}
{{- if and $env (not $.Values.mcp.agentTokensSecret) (not (has $env $other)) }}
{{- fail (printf "config.mcp.agents[%d].token_env: nothing sets %s in the pod, so ralph-gate would refuse to start; set mcp.agentTokensSecret to a Secret holding the key %s (or use mcp.tokens, mcp.existingTokens or extraEnv)" $i $env $env) }}
{{- end }}
{{- end }}
{{- if and .Values.mcp.agentTokensSecret (not (trim (include "ralph-gate.agentTokenEnvs" .))) }}
{{- fail (printf "mcp.agentTokensSecret: no config.mcp.agents[].token_env is read from %s; name each agent's variable in token_env (the Secret's keys are those names), or unset mcp.agentTokensSecret" .Values.mcp.agentTokensSecret) }}
{{- end }}
{{- if .Values.mcp.expose }}
{{- if not .Values.ingress.enabled }}
{{- fail "mcp.expose: /mcp is added to the Ingress, so it needs ingress.enabled=true and ingress.host" }}
{{- end }}
{{- if not $agents }}
{{- fail "mcp.expose: config.mcp.agents lists no agent, so /mcp would refuse every request; add agents (see docs/INSTALL.md, Connect your agents)" }}
{{- end }}
{{- end }}
{{- end }}

{{/* Refuses ui values that would leave the sign-in without what it needs. */}}
{{- define "ralph-gate.validateUI" -}}
{{- $cfg := .Values.config | default dict }}
{{- if hasKey $cfg "ui" }}
{{- fail "config.ui: the chart renders this section itself; use ui.enabled" }}
{{- end }}
{{- if hasKey (get $cfg "github" | default dict) "oauth" }}
{{- fail "config.github.oauth: the chart renders it from ui.oauthClientId, and the client secret comes from a Secret; use ui.oauthClientId and ui.oauthClientSecret (or github.existingSecret)" }}
{{- end }}
{{- if .Values.ui.enabled }}
{{- if not .Values.ui.oauthClientId }}
{{- fail "ui.oauthClientId: the App's Client ID (its settings page) is required when ui.enabled=true" }}
{{- end }}
{{- if not (include "ralph-gate.publicUrl" .) }}
{{- fail "ui.publicUrl: the address people open (e.g. https://ralph-gate.example.com) is required when ui.enabled=true without ingress.host" }}
{{- end }}
{{- if and (not .Values.ui.oauthClientSecret) (not .Values.github.existingSecret) }}
{{- fail "ui.oauthClientSecret: a client secret of the App is required when ui.enabled=true (or put it in github.existingSecret under github.existingSecretKeys.oauthClientSecret)" }}
{{- end }}
{{- if and (not .Values.ui.sessionKey) (not .Values.github.existingSecret) }}
{{- fail "ui.sessionKey: a random key of at least 32 bytes (openssl rand -hex 32) is required when ui.enabled=true (or put it in github.existingSecret under github.existingSecretKeys.sessionKey)" }}
{{- end }}
{{- end }}
{{- end }}

{{/* resources.limits.memory in bytes ("" when unset). Kubernetes quantities: a number with an
     optional binary (Ki, Mi, Gi, Ti, Pi, Ei) or decimal (k, M, G, T, P, E) suffix. */}}
{{- define "ralph-gate.memoryLimitBytes" -}}
{{- $q := (.Values.resources | default dict).limits | default dict | dig "memory" "" }}
{{- if $q }}
{{- if or (kindIs "float64" $q) (kindIs "int64" $q) (kindIs "int" $q) }}
{{- $q = printf "%.0f" (float64 $q) }}
{{- end }}
{{- $q = trim (toString $q) }}
{{- if not (regexMatch "^[0-9]+(\\.[0-9]+)?([KMGTPE]i|[kMGTPE])?$" $q) }}
{{- fail (printf "resources.limits.memory: %q is not a quantity the chart can read (use e.g. 256Mi or 1Gi)" $q) }}
{{- end }}
{{- $units := dict "" 1.0 "Ki" 1024.0 "Mi" 1048576.0 "Gi" 1073741824.0 "Ti" 1099511627776.0 "Pi" 1125899906842624.0 "Ei" 1152921504606846976.0 "k" 1e3 "M" 1e6 "G" 1e9 "T" 1e12 "P" 1e15 "E" 1e18 }}
{{- $number := regexFind "^[0-9]+(\\.[0-9]+)?" $q }}
{{- $unit := trimPrefix $number $q }}
{{- printf "%.0f" (floor (mulf (float64 $number) (get $units $unit))) }}
{{- end }}
{{- end }}

{{/* GOMEMLIMIT: goMemLimit.percent of resources.limits.memory, in MiB ("" when off or no limit). */}}
{{- define "ralph-gate.goMemLimit" -}}
{{- if .Values.goMemLimit.enabled }}
{{- $limit := include "ralph-gate.memoryLimitBytes" . }}
{{- if $limit }}
{{- $mib := floor (divf (mulf (float64 $limit) (float64 .Values.goMemLimit.percent)) (mulf 100.0 1048576.0)) }}
{{- if lt $mib 1.0 }}
{{- fail (printf "goMemLimit.percent: %v%% of resources.limits.memory is under 1 MiB" .Values.goMemLimit.percent) }}
{{- end }}
{{- printf "%.0fMiB" $mib }}
{{- end }}
{{- end }}
{{- end }}

{{/* config.yml: the values' config, plus the server and store sections the chart owns. */}}
{{- define "ralph-gate.config" -}}
{{- $cfg := deepCopy (.Values.config | default dict) }}
{{- $server := dict "address" "0.0.0.0" "port" (int .Values.containerPort) }}
{{- with .Values.webhooks.maxBodyBytes }}
{{- $_ := set $server "max_body_bytes" (int64 .) }}
{{- end }}
{{- with .Values.webhooks.maxConcurrent }}
{{- $_ := set $server "max_concurrent_webhooks" (int64 .) }}
{{- end }}
{{- if .Values.ui.enabled }}
{{- $_ := set $server "public_url" (include "ralph-gate.publicUrl" .) }}
{{- $_ := set $cfg "ui" (dict "enabled" true) }}
{{- $github := get $cfg "github" | default dict }}
{{- $_ := set $github "oauth" (dict "client_id" .Values.ui.oauthClientId) }}
{{- $_ := set $cfg "github" $github }}
{{- end }}
{{- $_ := set $cfg "server" $server }}
{{- if eq .Values.store.driver "postgres" }}
{{- $_ := set $cfg "store" (dict "driver" "postgres") }}
{{- else }}
{{- $_ := set $cfg "store" (dict "driver" "sqlite" "dsn" "/data/ralph-gate.db") }}
{{- end }}
# Rendered by the ralph-gate Helm chart from its values (docs/CONFIGURATION.md).
# Secrets come from the environment: GITHUB_APP_INTEGRATION_ID, GITHUB_APP_WEBHOOK_SECRET,
# GITHUB_APP_PRIVATE_KEY_FILE (the mounted key){{ if eq .Values.store.driver "postgres" }}, RALPH_GATE_STORE_DSN{{ end }}{{ if .Values.ui.enabled }}, GITHUB_OAUTH_CLIENT_SECRET, RALPH_GATE_SESSION_KEY{{ end }}.
{{ toYaml $cfg }}
{{- end }}
