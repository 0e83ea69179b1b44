#!/usr/bin/env bash
# Chart checks, called by .ci/run: installs Helm with the Go toolchain, then for every values
# example under charts/ralph-gate/ci/ runs `helm lint --strict` and `helm template`, decodes
# each rendered object strictly as its Kubernetes API type (.ci/k8scheck, a separate module
# pinning k8s.io/api) and runs `ralph-gate validate` on the rendered config.yml. Finally it
# checks that values that cannot work fail to render with a message naming the values key.
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

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
chart=charts/ralph-gate
# A go-installed helm assumes Kubernetes v1.20 (its version is normally set by ldflags).
kube=(--kube-version 1.31.0)

(cd .ci/k8scheck && GOFLAGS=-mod=readonly go build -o "$work/k8scheck" .)
CGO_ENABLED=0 go build -trimpath -o "$work/ralph-gate" ./cmd/ralph-gate

for values in "$chart"/ci/*.yaml; do
	name="$(basename "$values" .yaml)"
	echo "--- $name"
	helm lint --strict "$chart" "${kube[@]}" -f "$values"
	helm template ralph-gate "$chart" "${kube[@]}" -f "$values" --namespace ralph > "$work/$name.yaml"
	"$work/k8scheck" --config-out "$work/$name.config.yml" "$work/$name.yaml"
	# The rendered config.yml is what serve will load: it must validate (a Postgres DSN comes
	# from the environment, as in the pod; an SQLite store's path is in the file).
	if grep -Eq '^[[:space:]]*driver:[[:space:]]*"?postgres' "$work/$name.config.yml"; then
		RALPH_GATE_STORE_DSN=postgres://ci@localhost:5432/ci "$work/ralph-gate" validate --config "$work/$name.config.yml"
	else
		"$work/ralph-gate" validate --config "$work/$name.config.yml"
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
	echo "refused as expected ($want): $(grep -o 'execution error.*' <<<"$out" | head -1 | cut -c1-160)"
}
defaults="$chart/ci/default-values.yaml"
must_fail "replicaCount=3 needs store.driver=postgres" -f "$defaults" --set replicaCount=3
must_fail "github.appId is required" --set 'config.projects[0].owner=acme' --set 'config.projects[0].number=1'
must_fail "store.dsn is required with store.driver=postgres" -f "$defaults" --set store.driver=postgres
must_fail "config.projects" -f "$defaults" --set 'config.projects=null'
must_fail "config.store" -f "$defaults" --set config.store.driver=sqlite
must_fail "ingress.host" -f "$defaults" --set ingress.enabled=true
must_fail "store.driver" -f "$defaults" --set store.driver=mysql   # values.schema.json
must_fail "replicaCount" -f "$defaults" --set-string replicaCount=three
echo "chart OK"
