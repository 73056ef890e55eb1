#!/usr/bin/env bash
# Builds the testbed's binaries from the Go module proxy into bin/testbed/,
# once: a binary already there is kept (testbed-node, Salvor's own code, is
# rebuilt when its source changed). Every test needs kube-apiserver, etcd
# and MinIO; the CSI tests also run kube-controller-manager, the CSI
# snapshot controller and the csi-snapshotter and csi-provisioner sidecars,
# and the tests that run pods kube-scheduler and testbed-node (hack/testbed/node,
# a module of its own). The versions are pinned in the wrapper modules
# beside this script, which repeat each module's non-local replace lines,
# since `go install` refuses a module that has them; the node's and the CSI
# stack's are held to the Kubernetes module's, and the Kubernetes module's
# to Salvor's, where they share a module (hack/testbed/align, below).
# `hack/testbed/build.sh --regen` rewrites the Kubernetes module's go.mod
# from Kubernetes' own (its staging modules replaced by their published
# twins) after a version change, then aligns the others.
# `hack/testbed/build.sh --demo` builds only what `make demo` runs: all but
# the CSI stack and MinIO (the demo keeps its backups in Salvor's built-in
# filesystem store).
set -euo pipefail
KUBERNETES_VERSION=v1.36.3
ETCD_VERSION=v3.6.16
MINIO_VERSION=v0.0.0-20260212201848-7aac2a2c5b7c

here=$(cd "$(dirname "$0")" && pwd)
out=$(cd "$here/../.." && pwd)/bin/testbed
mkdir -p "$out"

if [ "${1:-}" = "--regen" ]; then
  kdir=$(go mod download -json "k8s.io/kubernetes@$KUBERNETES_VERSION" | sed -n 's/^\s*"Dir": "\(.*\)",$/\1/p')
  staging_version="v0.${KUBERNETES_VERSION#v1.}"
  {
    echo "module github.com/salvor-dev/salvor/hack/testbed/kubernetes"
    echo
    echo "go 1.26.0"
    echo
    echo "require k8s.io/kubernetes $KUBERNETES_VERSION"
    echo
    echo "replace ("
    grep -E '^\s*k8s.io/[^ ]+ => ./staging/src/' "$kdir/go.mod" | awk -v v="$staging_version" '{print "\t" $1 " => " $1 " " v}'
    echo ")"
  } > "$here/kubernetes/go.mod"
  (cd "$here/kubernetes" && go mod tidy)
  (cd "$here/etcd" && go mod edit -require="go.etcd.io/etcd/server/v3@$ETCD_VERSION" && go mod tidy)
  (cd "$here/../.." && go run ./hack/testbed/align)
fi

# etcd and MinIO build at once beside the Kubernetes binaries: each has
# downloads and a single-threaded link that the others' compiling fills.
# The testbed node and the CSI stack build after the Kubernetes binaries:
# their modules are pinned to the versions those are built with (see
# hack/testbed/align), so most of their packages — client-go, apiserver,
# gRPC — come from Go's build cache instead of being compiled again beside
# the same packages in another go build, which would not share them while
# both run. A build's output is shown when it fails.
started=$(date +%s)
# build NAME CMD...: runs CMD in a subshell, its output kept in a file,
# and says when it is done (or shows the output when it failed).
build() {
  local name=$1 log
  shift
  log=$(mktemp "$out/.build-XXXXXX.log")
  echo "building $name"
  if ("$@") > "$log" 2>&1; then
    echo "built $name ($(( $(date +%s) - started )) s in)"
    rm -f "$log"
  else
    echo "building $name failed:" >&2
    cat "$log" >&2
    rm -f "$log"
    return 1
  fi
}
missing() {
  for b in "$@"; do [ -x "$out/$b" ] || echo "$b"; done
}
# waitall PID...: waits for every one, failing if any failed.
waitall() {
  local failed=0 p
  for p in "$@"; do wait "$p" || failed=1; done
  return "$failed"
}

pids=()
if [ -n "$(missing etcd)" ]; then
  build "etcd $ETCD_VERSION" bash -c "cd '$here/etcd' && go build -o '$out/etcd' ." &
  pids+=($!)
fi
if [ "${1:-}" != "--demo" ] && [ -n "$(missing minio)" ]; then
  build "minio $MINIO_VERSION" env GOBIN="$out" go install "github.com/minio/minio@$MINIO_VERSION" &
  pids+=($!)
fi
(
  kube=$(missing kube-apiserver kube-controller-manager kube-scheduler)
  if [ -n "$kube" ]; then
    build "$(echo $kube) $KUBERNETES_VERSION" bash -c "cd '$here/kubernetes' && go build -o '$out/' $(printf './%s ' $kube)" || exit 1
  fi
  after=()
  # The testbed node is rebuilt whenever its source is newer than the
  # binary: it is Salvor's own code, not a pinned upstream release.
  if [ ! -x "$out/testbed-node" ] || [ -n "$(find "$here/node" -newer "$out/testbed-node" -type f | head -1)" ]; then
    build testbed-node bash -c "cd '$here/node' && go build -o '$out/testbed-node' ." &
    after+=($!)
  fi
  if [ "${1:-}" != "--demo" ]; then
    snap=$(missing snapshot-controller csi-snapshotter)
    if [ -n "$snap" ]; then
      build "$(echo $snap)" bash -c "cd '$here/csi-snapshotter' && go build -o '$out/' $(printf 'github.com/kubernetes-csi/external-snapshotter/v8/cmd/%s ' $snap)" &
      after+=($!)
    fi
    if [ -n "$(missing csi-provisioner)" ]; then
      build csi-provisioner bash -c "cd '$here/csi-provisioner' && go build -o '$out/csi-provisioner' github.com/kubernetes-csi/external-provisioner/v6/cmd/csi-provisioner" &
      after+=($!)
    fi
  fi
  waitall "${after[@]}"
) &
pids+=($!)
waitall "${pids[@]}" || exit 1
if [ "${1:-}" = "--demo" ]; then
  exit 0
fi
# The snapshot CRDs come with the snapshot controller's client module.
if [ ! -d "$out/snapshot-crds" ]; then
  crds=$(cd "$here/csi-snapshotter" && go list -m -f '{{.Dir}}' github.com/kubernetes-csi/external-snapshotter/client/v8)/config/crd
  mkdir -p "$out/snapshot-crds.tmp"
  cp "$crds"/snapshot.storage.k8s.io_*.yaml "$out/snapshot-crds.tmp/"
  chmod 644 "$out"/snapshot-crds.tmp/*
  mv "$out/snapshot-crds.tmp" "$out/snapshot-crds"
fi
