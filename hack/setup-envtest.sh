#!/usr/bin/env bash
# Provides the envtest control-plane binaries (kube-apiserver, etcd, kubectl)
# without downloading prebuilt archives: both servers are built from source
# through the Go module proxy and cached outside the checkout, keyed by version,
# so only the first run on a machine pays for the build (about 5 minutes).
#
# Prints the folder to use as KUBEBUILDER_ASSETS on stdout; progress goes to stderr.
set -euo pipefail

KUBE_VERSION="${KUBE_VERSION:-1.36.3}"
ETCD_VERSION="${ETCD_VERSION:-3.6.8}"
cache_root="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}"
assets="$cache_root/envtest/k8s-$KUBE_VERSION-etcd-$ETCD_VERSION"

log() { echo "setup-envtest: $*" >&2; }

if [[ -x "$assets/kube-apiserver" && -x "$assets/etcd" && -x "$assets/kubectl" ]]; then
  echo "$assets"
  exit 0
fi

mkdir -p "$assets"
work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
export GOFLAGS=-mod=mod GOWORK=off CGO_ENABLED=0

build_etcd() {
  log "building etcd v$ETCD_VERSION"
  mkdir -p "$work/etcd" && cd "$work/etcd"
  go mod init envtest.local/etcd >/dev/null 2>&1
  go get "go.etcd.io/etcd/server/v3@v$ETCD_VERSION" >&2
  go build -trimpath -o "$assets/etcd.tmp" go.etcd.io/etcd/server/v3
  mv "$assets/etcd.tmp" "$assets/etcd"
}

build_kube() {
  log "building kube-apiserver v$KUBE_VERSION (takes a few minutes on a cold cache)"
  mkdir -p "$work/kube" && cd "$work/kube"
  go mod init envtest.local/kube >/dev/null 2>&1
  # k8s.io/kubernetes replaces its staging modules with local folders; point
  # each at the published v0.x release of the same minor instead.
  local staging="0.${KUBE_VERSION#1.}"
  go mod download -json "k8s.io/kubernetes@v$KUBE_VERSION" >/dev/null
  local modfile
  modfile="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/v$KUBE_VERSION.mod"
  {
    echo "require k8s.io/kubernetes v$KUBE_VERSION"
    echo "replace ("
    awk '/^replace \(/{r=1;next} r&&/^\)/{r=0} r&&/=>/{print $1}' "$modfile" |
      while read -r mod; do echo "	$mod => $mod v$staging"; done
    echo ")"
  } >>go.mod
  go mod tidy >&2 2>/dev/null || true
  go build -trimpath -o "$assets/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver
  mv "$assets/kube-apiserver.tmp" "$assets/kube-apiserver"
  if command -v kubectl >/dev/null 2>&1; then
    ln -sf "$(command -v kubectl)" "$assets/kubectl"
  else
    log "kubectl not on PATH: building it too"
    go build -trimpath -o "$assets/kubectl" k8s.io/kubernetes/cmd/kubectl
  fi
}

[[ -x "$assets/etcd" ]] || build_etcd
[[ -x "$assets/kube-apiserver" && -x "$assets/kubectl" ]] || build_kube
log "ready in $assets"
echo "$assets"
