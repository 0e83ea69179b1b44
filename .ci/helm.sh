#!/usr/bin/env bash
# Chart checks, called by .ci/run: installs Helm with the Go toolchain, then for every values
# example under charts/ralph-gate/ci/ runs `helm lint --strict` and `helm template`, decodes
# each rendered object strictly as its Kubernetes API type (.ci/k8scheck, a separate module
# pinning k8s.io/api) and runs `ralph-gate validate` on the rendered config.yml. Finally it
# checks that values that cannot work fail to render with a message naming the values key,
# and that a config.yml the schema lets through but ralph-gate refuses fails `validate`.
#
# `bash .ci/helm.sh install` only installs Helm into $(go env GOPATH)/bin: .ci/run does so
# before the Go tests, whose chart tests (sandbox) run helm.
set -euo pipefail
cd "$(dirname "$0")/.."

HELM_VERSION=v3.19.0
export PATH="$(go env GOPATH)/bin:$PATH"
# `go install` builds carry no version stamp beyond major.minor (v3.19), so compare that.
if ! helm version --short 2>/dev/null | grep -q "^${HELM_VERSION%.*}"; then
	echo "installing helm ${HELM_VERSION}"
	GOFLAGS= go install "helm.sh/helm/v3/cmd/helm@${HELM_VERSION}"
fi
helm version --short
if [ "${1:-}" = install ]; then
	exit 0
fi

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chart=charts/ralph-gate
# A go-installed helm assumes Kubernetes v1.20 (its version is normally set by ldflags), and the
# chart requires >=1.25: without the flag `helm template` fails with "chart requires kubeVersion:
# >=1.25.0-0 which is incompatible with Kubernetes v1.20.0" (docs/INSTALL.md, step 4, and
# docs/TROUBLESHOOTING.md tell operators the same). sandbox's chart tests use the same version.
kube=(--kube-version 1.31.0)

(cd .ci/k8scheck && GOFLAGS=-mod=readonly go build -o "$work/k8scheck" .)
CGO_ENABLED=0 go build -trimpath -o "$work/ralph-gate" ./cmd/ralph-gate

for values in "$chart"/ci/*.yaml; do
	name="$(basename "$values" .yaml)"
	echo "--- $name"
	helm lint --strict "$chart" "${kube[@]}" -f "$values"
	helm template ralph-gate "$chart" "${kube[@]}" -f "$values" --namespace ralph > "$work/$name.yaml"
	"$work/k8scheck" --config-out "$work/$name.config.yml" "$work/$name.yaml"
	# The rendered config.yml is what serve will load: it must validate as a file (a Postgres
	# DSN comes from the environment, as in the pod; an SQLite store's path is in the file).
	# The App's secrets reach the pod from Secrets: sandbox's TestConnectAgentsFromChart loads
	# a rendered config.yml for serve with them.
	if grep -Eq '^[[:space:]]*driver:[[:space:]]*"?postgres' "$work/$name.config.yml"; then
		RALPH_GATE_STORE_DSN=postgres://ci@localhost:5432/ci "$work/ralph-gate" validate --for file --config "$work/$name.config.yml"
	else
		"$work/ralph-gate" validate --for file --config "$work/$name.config.yml"
	fi
done

# Values that cannot work must fail to render, naming the key to change.
must_fail() {
	local want="$1"; shift
	local out
	if out="$(helm template ralph-gate "$chart" "${kube[@]}" "$@" 2>&1)"; then
		echo "helm template $* rendered, but it must fail naming $want"; exit 1
	fi
	if ! grep -q -- "$want" <<<"$out"; then
		echo "helm template $* failed without naming $want:"; echo "$out"; exit 1
	fi
	echo "refused as expected ($want): $(grep -m1 -- "$want" <<<"$out" | cut -c1-160)"
}
defaults="$chart/ci/default-values.yaml"
must_fail "replicaCount=3 needs store.driver=postgres" -f "$defaults" --set replicaCount=3
must_fail "github.appId is required" --set 'config.projects[0].owner=acme' --set 'config.projects[0].number=1'
must_fail "store.dsn is required with store.driver=postgres" -f "$defaults" --set store.driver=postgres
must_fail "config.store" -f "$defaults" --set config.store.driver=sqlite
must_fail "ingress.host" -f "$defaults" --set ingress.enabled=true
must_fail "store.driver" -f "$defaults" --set store.driver=mysql   # values.schema.json
must_fail "replicaCount" -f "$defaults" --set-string replicaCount=three
# config.* as ralph-gate decodes it (values.schema.json): a value outside a key's choices and a
# misspelt key fail at render time, naming the key, instead of crash-looping the pod.
must_fail "/config/logging/level" -f "$defaults" --set config.logging.level=verbose
must_fail "additional properties 'projekts' not allowed" -f "$defaults" --set 'config.projekts[0].owner=acme'
must_fail "/config/enforcement/gap_hold" -f "$defaults" --set config.enforcement.gap_hold=2minutes
# MCP: agents' tokens must reach the pod, never in clear; /mcp is exposed only on an Ingress.
agent='config.mcp.agents[0]'
must_fail "mcp.expose" -f "$defaults" --set mcp.expose=true --set "$agent.name=a" --set "$agent.token_env=A_TOKEN" --set mcp.agentTokensSecret=tokens
must_fail "config.mcp.agents\[0\].token_env" -f "$defaults" --set "$agent.name=a" --set "$agent.token_env=A_TOKEN"
must_fail "config.mcp.agents\[0\].token:" -f "$defaults" --set "$agent.name=a" --set "$agent.token=ci-placeholder-token-0001"
must_fail "mcp.agentTokensSecret" -f "$defaults" --set mcp.agentTokensSecret=tokens
# The board health pages: the sign-in needs the App's client and a session key, from values or
# github.existingSecret, and a public URL (ui.publicUrl or the Ingress's host).
uivalues="$chart/ci/ui-values.yaml"
must_fail "ui.oauthClientId" -f "$uivalues" --set ui.oauthClientId=
must_fail "ui.publicUrl" -f "$uivalues" --set ingress.enabled=false
must_fail "/ui/sessionKey" -f "$uivalues" --set ui.sessionKey=short
must_fail "config.ui" -f "$uivalues" --set config.ui.enabled=true

# What the schema cannot say (ranges, references between keys) `ralph-gate validate` says:
# such values render, and validate must refuse the rendered config.yml, naming the key.
must_fail_validate() {
	local want="$1"; shift
	local out
	helm template ralph-gate "$chart" "${kube[@]}" "$@" > "$work/bad.yaml"
	"$work/k8scheck" --config-out "$work/bad.config.yml" "$work/bad.yaml" >/dev/null
	if out="$("$work/ralph-gate" validate --for file --config "$work/bad.config.yml" 2>&1)"; then
		echo "ralph-gate validate accepted the config.yml rendered with $*; it must refuse it naming $want"; exit 1
	fi
	if ! grep -q -- "$want" <<<"$out"; then
		echo "ralph-gate validate refused the config.yml rendered with $* without naming $want:"; echo "$out"; exit 1
	fi
	echo "validate refused as expected ($want)"
}
must_fail_validate "enforcement.workers" -f "$defaults" --set config.enforcement.workers=1000
must_fail_validate "mcp.agents\[0\].commands\[0\]" -f "$chart/ci/mcp-values.yaml" --set "$agent.commands[0]=reserch"
echo "chart OK"
