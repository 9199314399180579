#!/usr/bin/env bash
# Provides the envtest control-plane binaries (kube-apiserver, etcd, kubectl)
# without downloading prebuilt archives: both servers are built from source
# through the Go module proxy and cached outside the checkout, so only the first
# run on a machine pays for the build (about 5 minutes).
#
# The versions are pinned by the checked-in tools module hack/tools/envtest
# (go.mod and go.sum): the build runs with -mod=readonly and so resolves nothing
# on its own, whatever is published later. To move to another release, change
# that module (see its go.mod) and the cache key follows.
#
# Prints the folder to use as KUBEBUILDER_ASSETS on stdout; progress goes to stderr.
set -euo pipefail

tools="$(cd "$(dirname "$0")/tools/envtest" && pwd)"
export GOWORK=off GOFLAGS=-mod=readonly CGO_ENABLED=0

log() { echo "setup-envtest: $*" >&2; }
fail() { log "$*"; exit 1; }

# module_version prints the version go.mod pins for a module.
module_version() { (cd "$tools" && go list -m -f '{{.Version}}' "$1"); }

kube_version="$(module_version k8s.io/kubernetes)"
etcd_version="$(module_version go.etcd.io/etcd/server/v3)"
# The key names the versions and covers every checksum, so any change to the
# tools module builds anew instead of reusing an older build.
sum="$(cat "$tools/go.mod" "$tools/go.sum" | sha256sum | cut -c1-12)"
cache_root="${SWITCHBOARD_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/switchboard}"
assets="$cache_root/envtest/k8s-${kube_version#v}-etcd-${etcd_version#v}-$sum"

if [[ -x "$assets/kube-apiserver" && -x "$assets/etcd" && -x "$assets/kubectl" ]]; then
  echo "$assets"
  exit 0
fi
mkdir -p "$assets"

# build PACKAGE OUTPUT [LDFLAGS] builds one main package of the tools module.
build() {
  (cd "$tools" && go build -trimpath -ldflags "${3:-}" -o "$2.tmp" "$1") ||
    fail "building $1 failed (pinned by $tools/go.mod)"
}

# Kubernetes stamps its version at link time (hack/lib/version.sh); without it
# kube-apiserver --version and /version report v0.0.0-master.
kube_ldflags() {
  local pkg=k8s.io/component-base/version v="$kube_version" minor
  minor="${v#v*.}"
  minor="${minor%%.*}"
  echo "-X $pkg.gitVersion=$v -X $pkg.gitMajor=1 -X $pkg.gitMinor=$minor -X $pkg.gitTreeState=clean"
}

# check_module BINARY MODULE VERSION fails unless the binary was built from
# that module at that version: read from the build information the Go linker
# embeds, not from anything the script stamped itself.
check_module() {
  local got
  got="$(go version -m "$1.tmp" | awk -v m="$2" '($1 == "mod" || $1 == "dep") && $2 == m {print $3}')"
  [[ "$got" == "$3" ]] || fail "$(basename "$1") was built from $2 ${got:-(absent)}, not the pinned $3"
}

# check_output BINARY PATTERN ARGS... fails unless the binary's output for ARGS
# contains PATTERN.
check_output() {
  local bin="$1" want="$2" out
  shift 2
  out="$("$bin.tmp" "$@" 2>&1)" || fail "$(basename "$bin") $* failed: $out"
  [[ "$out" == *"$want"* ]] || fail "$(basename "$bin") $* says '$out', expected '$want'"
}

if [[ ! -x "$assets/etcd" ]]; then
  log "building etcd $etcd_version"
  build go.etcd.io/etcd/server/v3 "$assets/etcd"
  check_module "$assets/etcd" go.etcd.io/etcd/server/v3 "$etcd_version"
  check_output "$assets/etcd" "etcd Version: ${etcd_version#v}" --version
  mv "$assets/etcd.tmp" "$assets/etcd"
fi

if [[ ! -x "$assets/kube-apiserver" ]]; then
  log "building kube-apiserver $kube_version (takes a few minutes on a cold cache)"
  build k8s.io/kubernetes/cmd/kube-apiserver "$assets/kube-apiserver" "$(kube_ldflags)"
  check_module "$assets/kube-apiserver" k8s.io/kubernetes "$kube_version"
  check_output "$assets/kube-apiserver" "Kubernetes $kube_version" --version
  mv "$assets/kube-apiserver.tmp" "$assets/kube-apiserver"
fi

if [[ ! -x "$assets/kubectl" ]]; then
  if command -v kubectl >/dev/null 2>&1; then
    ln -sf "$(command -v kubectl)" "$assets/kubectl"
  else
    log "kubectl not on PATH: building $kube_version"
    build k8s.io/kubernetes/cmd/kubectl "$assets/kubectl" "$(kube_ldflags)"
    check_module "$assets/kubectl" k8s.io/kubernetes "$kube_version"
    mv "$assets/kubectl.tmp" "$assets/kubectl"
  fi
fi

log "ready in $assets"
echo "$assets"
